"""Download the papers' public dataset archives with the standard library (urllib), no torchvision.

Each file goes to <root>/.downloads/<file>.part (resumed with an HTTP Range request when a part is
there), is checked against the md5 its publishers (and torchvision) list, and only then renamed
to its final name. tar.gz archives are unpacked beside it in a staging folder that is renamed into
place once complete, so the loaders never see a half-written dataset. IDX .gz files stay gzipped
(idx.read_idx reads them). One process at a time per dataset (a lock file).

Mirrors: `--url URL` is the folder holding one dataset's files; $FEDBENCH_MIRROR is a folder with
one subfolder per dataset (mnist/, fmnist/, cifar10/, cifar100/, cinic10/)."""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import shutil
import sys
import tarfile
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from fedbench.data.locate import cache_root, may_download
from fedbench.errors import FedbenchError

CHUNK = 1 << 16
TIMEOUT = 30  # seconds without a byte before a transfer counts as stalled
PROVENANCE = "fedbench-source.json"


@dataclass(frozen=True)
class Remote:
    filename: str
    md5: str
    urls: tuple[str, ...]  # mirrors, tried in order


@dataclass(frozen=True)
class Source:
    title: str
    folder: str  # where the dataset lands under the root, in the layout its loader searches
    files: tuple[Remote, ...]
    required: tuple[str, ...]  # paths under folder that make it complete (IDX: gzipped or not)
    home: str


IDX_STEMS = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte")
IDX_STEMS += ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")


def _idx(base_urls: tuple[str, ...], md5s: tuple[str, ...]) -> tuple[Remote, ...]:
    """The four gzipped IDX files, each from every mirror folder."""
    return tuple(
        Remote(f"{s}.gz", md5, tuple(f"{b}{s}.gz" for b in base_urls))
        for s, md5 in zip(IDX_STEMS, md5s)
    )


TORONTO = "https://www.cs.toronto.edu/~kriz/"
# URLs and md5s as torchvision.datasets (MNIST, FashionMNIST, CIFAR10/100) and CINIC-10's
# publishers (github.com/BayesWatch/cinic-10, Edinburgh DataShare 10283/3192) list them
SOURCES: dict[str, Source] = {
    "mnist": Source(
        "MNIST",
        "MNIST/raw",
        _idx(
            ("https://ossci-datasets.s3.amazonaws.com/mnist/", "http://yann.lecun.com/exdb/mnist/"),
            (
                "f68b3c2dcbeaaa9fbdd348bbdeb94873",
                "d53e105ee54ea40749a09fcbcd1e9432",
                "9fb629c4189551a2d022fa330f9573f3",
                "ec29112dd5afa0611ce80d1b7f02629c",
            ),
        ),
        IDX_STEMS,
        "http://yann.lecun.com/exdb/mnist/",
    ),
    "fmnist": Source(
        "Fashion-MNIST",
        "FashionMNIST/raw",
        _idx(
            ("http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/",),
            (
                "8d4fb7e6c68d591d4c3dfef9ec88bf0d",
                "25c81989df183df01b3e8a0aad5dffbe",
                "bef4ecab320f06d8554ea6380940ec79",
                "bb300cfdad3c16e7a12a480ee83cd310",
            ),
        ),
        IDX_STEMS,
        "https://github.com/zalandoresearch/fashion-mnist",
    ),
    "cifar10": Source(
        "CIFAR-10",
        "cifar-10-batches-py",
        (
            Remote(
                "cifar-10-python.tar.gz",
                "c58f30108f718f92721af3b95e74349a",
                (TORONTO + "cifar-10-python.tar.gz",),
            ),
        ),
        tuple(f"data_batch_{i}" for i in range(1, 6)) + ("test_batch",),
        "https://www.cs.toronto.edu/~kriz/cifar.html",
    ),
    "cifar100": Source(
        "CIFAR-100",
        "cifar-100-python",
        (
            Remote(
                "cifar-100-python.tar.gz",
                "eb9058c3a382ffc7106e4002c42a8d85",
                (TORONTO + "cifar-100-python.tar.gz",),
            ),
        ),
        ("train", "test"),
        "https://www.cs.toronto.edu/~kriz/cifar.html",
    ),
    "cinic10": Source(
        "CINIC-10",
        "CINIC-10",
        (
            Remote(
                "CINIC-10.tar.gz",
                "6ee4d0c996905fe93221de577967a372",
                (
                    "https://datashare.ed.ac.uk/bitstream/handle/10283/3192/CINIC-10.tar.gz",
                    "https://datashare.ed.ac.uk/server/api/core/bitstreams/"
                    "e8e186cc-2688-48f1-aa5a-3fda1a43f8b6/content",
                ),
            ),
        ),
        ("train", "test"),
        "https://github.com/BayesWatch/cinic-10",
    ),
}

# LEAF datasets are built by scripts, not one archive: the commands FedProx's data/*/README.md
# gives for its paper (FedProx's copy of LEAF's preprocess.sh), run in FedProx/<folder>; then the
# train/ and test/ folders (relative to where the commands end) are copied where fedbench looks
LEAF_STEPS = {
    "femnist": (
        "data/nist",
        (
            "./preprocess.sh -s niid --sf 0.5 -k 0 -tf 0.8 -t sample",
            "cd data && python my_sample.py",
        ),
        "train test",
    ),
    "shakespeare": (
        "data/shakespeare",
        ("./preprocess.sh -s niid --sf 0.2 -k 0 -tf 0.8 -t sample",),
        "data/train data/test",
    ),
    "sent140": (
        "data/sent140",
        ("./preprocess.sh -s niid --sf 0.3 -k 30 -tf 0.8 -t sample",),
        "data/train data/test",
    ),
}


def leaf_steps(name: str, root: Path) -> str:
    """The shell steps that build a LEAF dataset where the loader finds it."""
    folder, commands, made = LEAF_STEPS[name]
    dest = root / name
    lines = [
        f"{name} is built by LEAF's scripts, not downloaded as one archive. The FedProx paper's "
        f"steps (github.com/litian96/FedProx, {folder}/README.md; needs python3, wget, unzip):",
        "  git clone https://github.com/litian96/FedProx",
        f"  cd FedProx/{folder}",
        *(f"  {c}" for c in commands),
        f"  mkdir -p {dest} && cp -r {made} {dest}/",
        f"fedbench then finds {dest}/{{train,test}}/*.json (check: fedbench data stats {name}"
        + (f" --data-dir {root}" if root != cache_root() else "")
        + f"). FedProx's {folder}/README.md also links the ready-made folders it used.",
    ]
    if name == "sent140":
        lines.append(
            "GloVe (FedProx's frozen 300-d embedding): unzip glove.6B.300d.txt from "
            "https://nlp.stanford.edu/data/glove.6B.zip and add --set glove=PATH/glove.6B.300d.txt"
        )
    return "\n".join(lines)


# ---------------------------------------------------------------- the entry points


def datasets() -> list[str]:
    return [*SOURCES, *LEAF_STEPS]


def present(name: str, root: Path) -> Path | None:
    """root/<folder> when it holds the complete dataset."""
    d = root / SOURCES[name].folder
    return d if all(_has(d, p) for p in SOURCES[name].required) else None


def _has(d: Path, rel: str) -> bool:
    return (d / rel).exists() or (d / (rel + ".gz")).exists()


def auto_fetch(name: str) -> bool:
    """A loader's fallback when no root holds the dataset: download into the cache, unless
    FEDBENCH_NO_DOWNLOAD forbids it (then False, and the loader's not-found line follows)."""
    if not may_download():
        return False
    print(
        f"{name} not found; downloading it into {cache_root()} "
        "(set FEDBENCH_NO_DOWNLOAD=1 to forbid)",
        file=sys.stderr,
    )
    fetch(name)
    return True


def fetch(
    name: str, root: Path | str | None = None, url: str | None = None, quiet: bool = False
) -> tuple[Path, bool]:
    """Download, verify and unpack dataset `name` into root (default: the cache); returns its
    folder and whether anything was downloaded. `url` overrides the mirrors (a folder URL)."""
    if name not in SOURCES:
        raise FedbenchError(f"unknown dataset {name!r}; downloadable: {', '.join(SOURCES)}")
    root = Path(root) if root is not None else cache_root()
    if root.exists() and not root.is_dir():
        raise FedbenchError(f"{root} is a file; give a folder for the datasets")
    src = SOURCES[name]
    if (done := present(name, root)) is not None:
        return done, False
    work = root / ".downloads"
    try:
        work.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise FedbenchError(f"cannot create {work} ({e.strerror}); choose --data-dir") from None
    with _lock(work / f"{name}.lock", name):
        if (done := present(name, root)) is not None:  # another process finished it meanwhile
            return done, False
        got = [_fetch_file(name, r, work, _urls(name, r, url), quiet) for r in src.files]
        return _install(name, root, work, got), True


def _urls(name: str, remote: Remote, url: str | None) -> tuple[str, ...]:
    if url:
        base = url
    elif os.environ.get("FEDBENCH_MIRROR"):
        base = os.environ["FEDBENCH_MIRROR"].rstrip("/") + f"/{name}"
    else:
        return remote.urls
    return (base.rstrip("/") + "/" + remote.filename,)


# ---------------------------------------------------------------- one file


@dataclass
class Fetched:
    path: Path
    url: str
    md5: str
    size: int


def _fetch_file(
    name: str, remote: Remote, work: Path, urls: tuple[str, ...], quiet: bool
) -> Fetched:
    dest = work / remote.filename
    if dest.is_file() and md5_of(dest) == remote.md5:  # verified earlier; unpacking failed
        return Fetched(dest, "(kept from an earlier download)", remote.md5, dest.stat().st_size)
    part = work / (remote.filename + ".part")
    unreachable = []
    for url in urls:
        try:
            _transfer(name, url, part, remote.filename, quiet)
            break
        except Unreachable as e:
            unreachable.append(f"{url} ({e})")
    else:
        raise FedbenchError(
            f"cannot download {name}: {'; also '.join(unreachable)}; check the network, or "
            f"give a mirror (fedbench data get {name} --url URL, or FEDBENCH_MIRROR), or put "
            f"the files from {SOURCES[name].home} in --data-dir"
        )
    got = md5_of(part)
    if got != remote.md5:
        part.unlink()
        raise FedbenchError(
            f"{url}: checksum mismatch for {remote.filename} (md5 {got}, published "
            f"{remote.md5}); the download was deleted: rerun, or use another mirror (--url)"
        )
    os.replace(part, dest)
    return Fetched(dest, url, got, dest.stat().st_size)


class Unreachable(Exception):
    """No byte came from this URL: the next mirror may do better."""


def _transfer(name: str, url: str, part: Path, label: str, quiet: bool) -> None:
    """Append url's bytes to part (from where it stops, with a Range request); a transfer that
    stops early keeps the part for the next attempt and raises a one-line error."""
    have = part.stat().st_size if part.is_file() else 0
    headers = {"User-Agent": "fedbench (python urllib)"}
    if have:
        headers["Range"] = f"bytes={have}-"
    try:
        resp = urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=TIMEOUT)
    except urllib.error.HTTPError as e:
        if e.code == 416 and have:  # nothing after `have`: the part is whole; md5 decides
            return
        raise Unreachable(f"HTTP {e.code} {e.reason}") from None
    except (urllib.error.URLError, OSError, ValueError, http.client.HTTPException) as e:
        raise Unreachable(_reason(e)) from None
    with resp:
        if not (have and resp.status == 206 and _range_start(resp) == have):
            have = 0  # the server sent the whole file
        length = resp.headers.get("Content-Length")
        total = have + int(length) if length and length.isdigit() else None
        received = _copy(name, resp, part, have, total, label, quiet)
    if total is not None and have + received < total:
        raise _stopped(name, url, have + received, total, "connection closed")


def _copy(
    name: str, resp, part: Path, have: int, total: int | None, label: str, quiet: bool
) -> int:
    received = 0
    with _progress(label, total, have, quiet) as advance, open(part, "ab" if have else "wb") as f:
        try:
            while chunk := resp.read(CHUNK):
                f.write(chunk)
                received += len(chunk)
                advance(len(chunk))
        except (OSError, http.client.HTTPException) as e:  # reset, timeout, IncompleteRead
            f.close()
            raise _stopped(name, resp.url, have + received, total, _reason(e)) from None
    return received


def _stopped(name: str, url: str, at: int, total: int | None, why: str) -> FedbenchError:
    of = f" of {total:,}" if total else ""
    return FedbenchError(
        f"download of {url} stopped at {at:,}{of} bytes ({why}); the partial file is kept: "
        f"rerun (fedbench data get {name}) to resume"
    )


def _range_start(resp) -> int | None:
    cr = resp.headers.get("Content-Range", "")  # "bytes 100-199/200"
    try:
        return int(cr.split()[1].split("-")[0])
    except (IndexError, ValueError):
        return None


def _reason(e: BaseException) -> str:
    r = getattr(e, "reason", None) or e
    return (getattr(r, "strerror", None) or str(r) or type(r).__name__).splitlines()[0]


def md5_of(path: Path) -> str:
    h = hashlib.md5()
    with open(path, "rb") as f:
        while b := f.read(1 << 20):
            h.update(b)
    return h.hexdigest()


@contextmanager
def _progress(label: str, total: int | None, done: int, quiet: bool):
    """Yields advance(n): a rich download bar on stderr (none when quiet, or when another live
    display, such as a sweep's, owns the terminal)."""
    from rich.console import Console
    from rich.errors import LiveError
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
        TransferSpeedColumn,
    )

    bar = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        disable=quiet,
    )
    task = bar.add_task(label, total=total, completed=done)
    try:
        bar.start()
    except LiveError:
        bar.disable = True
    try:
        yield lambda n: bar.advance(task, n)
    finally:
        bar.stop()


# ---------------------------------------------------------------- into place


def _install(name: str, root: Path, work: Path, got: list[Fetched]) -> Path:
    """Verified files -> the dataset folder: IDX files moved one by one (each already whole),
    an archive unpacked aside and its folder renamed into place in one step."""
    src = SOURCES[name]
    target = root / src.folder
    record = {
        "dataset": name,
        "files": [{"name": f.path.name, "url": f.url, "md5": f.md5, "bytes": f.size} for f in got],
        "verified": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    if not any(f.path.name.endswith(".tar.gz") for f in got):
        target.mkdir(parents=True, exist_ok=True)
        for f in got:
            os.replace(f.path, target / f.path.name)
        _write_record(target, record)
        return target
    if target.exists():
        raise FedbenchError(
            f"{target} exists but is not a complete {src.title} (needs {', '.join(src.required)}); "
            "move it away and rerun"
        )
    staging = work / f"{name}.unpacked"
    shutil.rmtree(staging, ignore_errors=True)  # left by a killed run
    for f in got:
        _untar(f.path, staging)
    folder = staging / Path(src.folder).name
    folder = folder if folder.is_dir() else staging  # CINIC-10's archive has no top folder
    missing = [p for p in src.required if not _has(folder, p)]
    if missing:
        shutil.rmtree(staging, ignore_errors=True)
        raise FedbenchError(
            f"{got[0].path}: the archive has no {missing[0]}; expected {src.title}'s layout "
            f"({src.folder}/ with {', '.join(src.required)})"
        )
    _write_record(folder, record)
    target.parent.mkdir(parents=True, exist_ok=True)
    os.replace(folder, target)
    shutil.rmtree(staging, ignore_errors=True)
    for f in got:
        f.path.unlink()  # unpacked and in place: the archive is no longer needed
    return target


def _untar(archive: Path, into: Path) -> None:
    try:
        with tarfile.open(archive, "r:*") as tar:
            tar.extractall(into, filter="data")  # no absolute paths, links out, devices
    except (tarfile.TarError, OSError, EOFError) as e:
        shutil.rmtree(into, ignore_errors=True)
        raise FedbenchError(
            f"{archive}: cannot unpack ({type(e).__name__}: {e}); delete it and rerun"
        ) from None


def _write_record(folder: Path, record: dict) -> None:
    (folder / PROVENANCE).write_text(json.dumps(record, indent=2) + "\n")


def provenance(folder: Path) -> dict | None:
    try:
        return json.loads((folder / PROVENANCE).read_text())
    except (OSError, ValueError):
        return None


@contextmanager
def _lock(path: Path, name: str):
    """One downloader per dataset and root (parallel sweep workers wait for the first)."""
    try:
        import fcntl
    except ImportError:  # Windows: no lock
        yield
        return
    with open(path, "w") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"waiting for another fedbench downloading {name}", file=sys.stderr)
            fcntl.flock(f, fcntl.LOCK_EX)
        yield
