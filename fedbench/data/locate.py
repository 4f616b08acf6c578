"""Where dataset folders are looked for, in order: --data-dir, $FEDBENCH_DATA, ./data,
../shared/data, then the download cache (~/.cache/fedbench, where download.py puts them)."""

from __future__ import annotations

import os
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path

from fedbench.errors import FedbenchError


def cache_root() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "fedbench"


def roots(data_dir: str | None) -> list[Path]:
    out = []
    if data_dir:
        out.append(Path(data_dir))
    if os.environ.get("FEDBENCH_DATA"):
        out.append(Path(os.environ["FEDBENCH_DATA"]))
    out += [Path.cwd() / "data", Path.cwd() / ".." / "shared" / "data", cache_root()]
    return out


def find_folder(
    name: str,
    data_dir: str | None,
    subdirs: list[str],
    ok: Callable[[Path], bool],
    how_to_get: str,
    download: Callable[[], bool] | None = None,
) -> Path:
    """The first root/sub (sub in subdirs, "" = the root itself) for which ok() holds;
    else try download() once; else one line naming where we looked."""
    for attempt in range(2):
        dirs = [r / s if s else r for r in roots(data_dir) for s in subdirs]
        for d in dirs:
            if d.is_dir() and ok(d):
                return d
        if attempt == 0 and not (download and may_download() and download()):
            break
    raise not_found(name, dirs, how_to_get)


def not_found(name: str, dirs: list[Path], how_to_get: str) -> FedbenchError:
    """The one-line error for a dataset no folder holds: the folders looked in (looked_in),
    whether $FEDBENCH_DATA was set, and how to get it."""
    env = os.environ.get("FEDBENCH_DATA")
    said = f"; $FEDBENCH_DATA = {env}" if env else "; $FEDBENCH_DATA is not set"
    return FedbenchError(f"{name} not found (looked in {looked_in(dirs)}{said}); {how_to_get}")


def looked_in(dirs: list[Path]) -> str:
    """The folders searched, short: resolved and deduplicated, the current folder as ./, the
    home folder as ~, $FEDBENCH_DATA by name; a root that does not exist here (the development
    checkout's ../shared/data) is left out."""
    env = os.environ.get("FEDBENCH_DATA")
    names = [(Path(env).resolve(), "$FEDBENCH_DATA")] if env else []
    names += [(Path.cwd().resolve(), "."), (Path.home().resolve(), "~")]
    shared = (Path.cwd() / ".." / "shared" / "data").resolve()
    shown: list[str] = []
    for d in dirs:
        r = d.resolve()
        if (r == shared or shared in r.parents) and not shared.is_dir():
            continue
        text = str(r)
        for root, label in names:
            if r == root or root in r.parents:
                rel = r.relative_to(root).as_posix()
                text = label + ("" if rel == "." else "/" + rel)
                break
        if text not in shown:
            shown.append(text)
    return ", ".join(shown)


_OFF = [0]  # > 0 inside downloads_off()


def may_download() -> bool:
    return not (_OFF[0] or os.environ.get("FEDBENCH_NO_DOWNLOAD"))


@contextmanager
def no_download_env():
    """FEDBENCH_NO_DOWNLOAD=1 in this block, so that runs started here (in this process or a
    worker it spawns) find their data or say it is not here, never fetch it: for plans and
    probes, which read what is here."""
    before = os.environ.get("FEDBENCH_NO_DOWNLOAD")
    os.environ["FEDBENCH_NO_DOWNLOAD"] = "1"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("FEDBENCH_NO_DOWNLOAD", None)
        else:
            os.environ["FEDBENCH_NO_DOWNLOAD"] = before


@contextmanager
def downloads_off():
    """No dataset downloads in this block (a loader not finding its data raises its one-line
    not-found error): for commands that read what is here, as `table report`."""
    _OFF[0] += 1
    try:
        yield
    finally:
        _OFF[0] -= 1
