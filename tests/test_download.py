"""The downloader against a real HTTP server on 127.0.0.1 (standard library, a thread) serving
small archives in the originals' exact formats: success through the real loaders, checksum
mismatch, a transfer cut short and resumed with a Range request, a partial file from a killed
run, no server at all. Only loopback traffic."""

import dataclasses
import gzip
import hashlib
import io
import socket
import tarfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest
import torch
from click.testing import CliRunner
from conftest import tiny_config
from test_datasets import _cifar_batch, cifar10_dir, cinic_dir  # noqa: F401 (fixtures)

from fedbench.assembly import validate_config
from fedbench.cli import cli
from fedbench.data import download, load_federated
from fedbench.data.idx import load_idx_dataset
from fedbench.errors import FedbenchError

CPU = torch.device("cpu")


# ---------------------------------------------------------------- a server with Range support


class Handler(BaseHTTPRequestHandler):
    """GET from server.files; honours `Range: bytes=N-` unless server.ranges is False; a path in
    server.cut_at gets one response that stops after that many bytes (Content-Length says all)."""

    def do_GET(self):
        srv = self.server
        rng = self.headers.get("Range")
        srv.requests.append((self.path, rng))
        body = srv.files.get(self.path)
        if body is None:
            self.send_error(404)
            return
        start = int(rng.removeprefix("bytes=").split("-")[0]) if rng and srv.ranges else 0
        if start >= len(body) > 0:
            self.send_response(416)
            self.send_header("Content-Range", f"bytes */{len(body)}")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(206 if start else 200)
        if start:
            self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
        self.send_header("Content-Length", str(len(body) - start))
        self.end_headers()
        cut = srv.cut_at.pop(self.path, None)
        self.wfile.write(body[start:cut])
        self.close_connection = True

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.files, srv.requests, srv.cut_at, srv.ranges = {}, [], {}, True
    srv.url = f"http://127.0.0.1:{srv.server_address[1]}"
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


@pytest.fixture(autouse=True)
def no_real_mirrors(monkeypatch, tmp_path):
    """Every test: no env mirror, the cache in tmp, and published URLs that go nowhere."""
    monkeypatch.delenv("FEDBENCH_MIRROR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.chdir(tmp_path)
    for name, src in download.SOURCES.items():
        files = tuple(dataclasses.replace(r, urls=("http://127.0.0.1:9/",)) for r in src.files)
        monkeypatch.setitem(download.SOURCES, name, dataclasses.replace(src, files=files))


def publish(monkeypatch, server, name, files: dict[str, bytes], md5s=None):
    """Serve files under /<name>/ and make their md5s the published ones."""
    src = download.SOURCES[name]
    remotes = []
    for fname, body in files.items():
        server.files[f"/{name}/{fname}"] = body
        md5 = (md5s or {}).get(fname, hashlib.md5(body).hexdigest())
        remotes.append(download.Remote(fname, md5, (f"{server.url}/{name}/{fname}",)))
    monkeypatch.setitem(download.SOURCES, name, dataclasses.replace(src, files=tuple(remotes)))


def get(*args):
    return CliRunner().invoke(cli, ["data", "get", *args, "--quiet"], obj={})


def one_line_error(r, *needles):
    assert r.exit_code == 2, r.output
    assert r.output.count("\n") == 1 and "Traceback" not in r.output, r.output
    for n in needles:
        assert n in r.output, r.output


# ---------------------------------------------------------------- archives in the real formats


def idx_bytes(arr: np.ndarray) -> bytes:
    head = bytes([0, 0, 0x08, arr.ndim]) + b"".join(d.to_bytes(4, "big") for d in arr.shape)
    return head + arr.astype(np.uint8).tobytes()


def mnist_files(seed=0):
    rng = np.random.default_rng(seed)
    arrays = {
        "train-images-idx3-ubyte": rng.integers(0, 256, (12, 28, 28)),
        "train-labels-idx1-ubyte": rng.integers(0, 10, 12),
        "t10k-images-idx3-ubyte": rng.integers(0, 256, (5, 28, 28)),
        "t10k-labels-idx1-ubyte": rng.integers(0, 10, 5),
    }
    files = {f"{k}.gz": gzip.compress(idx_bytes(v), mtime=0) for k, v in arrays.items()}
    return files, arrays


def tar_gz(folder, arcname) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        tar.add(folder, arcname=arcname)
    return buf.getvalue()


@pytest.fixture
def cifar10_archive(cifar10_dir):  # noqa: F811
    return tar_gz(cifar10_dir / "cifar-10-batches-py", "cifar-10-batches-py")


def cifar_cfg(root=None):
    kw = {"data_dir": str(root)} if root else {}
    return validate_config(tiny_config(dataset="cifar10", partition="iid", num_clients=4, **kw))


def assert_cifar_loads(root=None):
    data = load_federated(cifar_cfg(root), CPU)
    ref = _cifar_batch(20, 1, [b"labels"], [10])
    assert data.train_x.shape == (100, 3, 32, 32)
    assert torch.equal(data.train_x[:20].reshape(20, -1), torch.from_numpy(ref[b"data"]))


def leftovers(root):
    """Files the downloader left besides its lock files."""
    return sorted(
        str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and p.suffix != ".lock"
    )


# ---------------------------------------------------------------- success


def test_get_mnist_then_the_loader_reads_it(server, monkeypatch, tmp_path):
    files, arrays = mnist_files()
    publish(monkeypatch, server, "mnist", files)
    root = tmp_path / "root"
    r = get("mnist", "--data-dir", str(root), "--url", f"{server.url}/mnist/")
    assert r.exit_code == 0, r.output
    assert "md5 verified" in r.output and str(root / "MNIST" / "raw") in r.output
    tr_x, tr_y, te_x, te_y = load_idx_dataset("mnist", str(root))
    assert np.array_equal(tr_x, arrays["train-images-idx3-ubyte"])
    assert np.array_equal(te_y, arrays["t10k-labels-idx1-ubyte"])
    record = download.provenance(root / "MNIST" / "raw")
    md5s = [hashlib.md5(b).hexdigest() for b in files.values()]
    assert [f["md5"] for f in record["files"]] == md5s
    assert not list((root / ".downloads").glob("*.part"))
    n = len(server.requests)
    r = get("mnist", "--data-dir", str(root), "--url", f"{server.url}/mnist/")
    assert r.exit_code == 0 and "already in" in r.output and len(server.requests) == n


def test_get_cifar10_unpacks_and_loads(server, monkeypatch, tmp_path, cifar10_archive):
    publish(monkeypatch, server, "cifar10", {"cifar-10-python.tar.gz": cifar10_archive})
    root = tmp_path / "root"
    r = get("cifar10", "--data-dir", str(root))  # the (patched) published URL
    assert r.exit_code == 0, r.output
    assert_cifar_loads(root)
    assert leftovers(root / ".downloads") == []  # archive deleted once unpacked, no staging


def test_get_cinic10_archive_without_top_folder(server, monkeypatch, tmp_path, cinic_dir):  # noqa: F811
    src, pixels = cinic_dir
    archive = tar_gz(src / "CINIC-10", ".")  # the published archive holds train/ valid/ test/
    publish(monkeypatch, server, "cinic10", {"CINIC-10.tar.gz": archive})
    monkeypatch.setenv("FEDBENCH_MIRROR", server.url)  # $FEDBENCH_MIRROR/cinic10/<file>
    root = tmp_path / "root"
    assert get("cinic10", "--data-dir", str(root)).exit_code == 0
    assert server.requests[-1][0] == "/cinic10/CINIC-10.tar.gz"
    cfg = tiny_config(
        dataset="cinic10", partition="iid", num_clients=2, clients_per_round=2, data_dir=str(root)
    )
    data = load_federated(validate_config(cfg), CPU)
    assert data.train_x.shape == (20, 3, 32, 32)
    assert np.array_equal(data.train_x[6].permute(1, 2, 0).numpy(), pixels[("train", 3, 0)])


def test_mirror_fallback(server, monkeypatch, tmp_path, cifar10_archive):
    publish(monkeypatch, server, "cifar10", {"cifar-10-python.tar.gz": cifar10_archive})
    src = download.SOURCES["cifar10"]
    remote = dataclasses.replace(src.files[0], urls=(f"{server.url}/gone", *src.files[0].urls))
    monkeypatch.setitem(download.SOURCES, "cifar10", dataclasses.replace(src, files=(remote,)))
    assert get("cifar10", "--data-dir", str(tmp_path / "root")).exit_code == 0
    assert [p for p, _ in server.requests] == ["/gone", "/cifar10/cifar-10-python.tar.gz"]


def test_loader_downloads_into_the_cache_unless_forbidden(
    server, monkeypatch, tmp_path, cifar10_archive
):
    publish(monkeypatch, server, "cifar10", {"cifar-10-python.tar.gz": cifar10_archive})
    monkeypatch.setenv("FEDBENCH_NO_DOWNLOAD", "1")
    with pytest.raises(FedbenchError, match="cifar10 not found.*fedbench data get cifar10"):
        load_federated(cifar_cfg(), CPU)
    assert server.requests == []
    monkeypatch.delenv("FEDBENCH_NO_DOWNLOAD")
    assert_cifar_loads()
    assert (tmp_path / "xdg" / "fedbench" / "cifar-10-batches-py" / "data_batch_5").is_file()


# ---------------------------------------------------------------- failures, never a half dataset


def test_checksum_mismatch_leaves_nothing(server, monkeypatch, tmp_path, cifar10_archive):
    files = {"cifar-10-python.tar.gz": cifar10_archive}
    publish(monkeypatch, server, "cifar10", files, md5s={"cifar-10-python.tar.gz": "0" * 32})
    root = tmp_path / "root"
    r = get("cifar10", "--data-dir", str(root))
    one_line_error(r, "checksum mismatch", "0" * 32, "cifar-10-python.tar.gz")
    assert leftovers(root) == [] and not (root / "cifar-10-batches-py").exists()


def test_truncated_transfer_errors_then_resumes(server, monkeypatch, tmp_path, cifar10_archive):
    publish(monkeypatch, server, "cifar10", {"cifar-10-python.tar.gz": cifar10_archive})
    path, half = "/cifar10/cifar-10-python.tar.gz", len(cifar10_archive) // 2
    server.cut_at[path] = half
    root = tmp_path / "root"
    r = get("cifar10", "--data-dir", str(root))
    one_line_error(r, f"stopped at {half:,} of {len(cifar10_archive):,} bytes", "to resume")
    assert leftovers(root) == [".downloads/cifar-10-python.tar.gz.part"]
    assert (root / ".downloads" / "cifar-10-python.tar.gz.part").read_bytes() == cifar10_archive[
        :half
    ]
    r = get("cifar10", "--data-dir", str(root))
    assert r.exit_code == 0, r.output
    assert server.requests[-1] == (path, f"bytes={half}-")
    assert_cifar_loads(root)


def test_partial_file_from_a_killed_run_is_resumed(server, monkeypatch, tmp_path):
    files, arrays = mnist_files(1)
    publish(monkeypatch, server, "mnist", files)
    work = tmp_path / "root" / ".downloads"
    work.mkdir(parents=True)
    body = files["train-images-idx3-ubyte.gz"]
    (work / "train-images-idx3-ubyte.gz.part").write_bytes(body[:100])
    assert get("mnist", "--data-dir", str(tmp_path / "root")).exit_code == 0
    assert ("/mnist/train-images-idx3-ubyte.gz", "bytes=100-") in server.requests
    assert np.array_equal(
        load_idx_dataset("mnist", str(tmp_path / "root"))[0], arrays["train-images-idx3-ubyte"]
    )


def test_server_without_range_support_restarts_the_file(server, monkeypatch, tmp_path):
    files, arrays = mnist_files(2)
    publish(monkeypatch, server, "mnist", files)
    server.ranges = False
    work = tmp_path / "root" / ".downloads"
    work.mkdir(parents=True)
    (work / "t10k-labels-idx1-ubyte.gz.part").write_bytes(b"stale bytes from elsewhere")
    assert get("mnist", "--data-dir", str(tmp_path / "root")).exit_code == 0
    assert np.array_equal(
        load_idx_dataset("mnist", str(tmp_path / "root"))[3], arrays["t10k-labels-idx1-ubyte"]
    )


def test_corrupt_partial_file_is_caught_by_the_checksum(server, monkeypatch, tmp_path):
    files, _ = mnist_files(3)
    publish(monkeypatch, server, "mnist", files)
    root = tmp_path / "root"
    (root / ".downloads").mkdir(parents=True)
    (root / ".downloads" / "train-labels-idx1-ubyte.gz.part").write_bytes(b"\xff" * 10)
    one_line_error(get("mnist", "--data-dir", str(root)), "checksum mismatch", "rerun")
    assert not (root / "MNIST").exists()  # the files before it wait in .downloads, verified
    assert not list((root / ".downloads").glob("*.part"))
    assert get("mnist", "--data-dir", str(root)).exit_code == 0
    assert load_idx_dataset("mnist", str(root))[1].shape == (12,)


def test_server_absent_is_one_line_naming_the_url(tmp_path):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}/cifar10"
    r = get("cifar10", "--data-dir", str(tmp_path / "root"), "--url", url)
    one_line_error(r, f"{url}/cifar-10-python.tar.gz", "--url", "--data-dir")
    assert not (tmp_path / "root" / "cifar-10-batches-py").exists()


def test_missing_file_on_the_server_is_one_line(server, tmp_path):
    r = get("fmnist", "--data-dir", str(tmp_path / "root"), "--url", server.url)
    one_line_error(r, "HTTP 404", f"{server.url}/train-images-idx3-ubyte.gz")


def test_incomplete_target_is_left_alone(server, monkeypatch, tmp_path, cifar10_archive):
    publish(monkeypatch, server, "cifar10", {"cifar-10-python.tar.gz": cifar10_archive})
    own = tmp_path / "root" / "cifar-10-batches-py"
    own.mkdir(parents=True)
    (own / "data_batch_1").write_bytes(b"mine")
    one_line_error(get("cifar10", "--data-dir", str(tmp_path / "root")), "move it away")
    assert [p.name for p in own.iterdir()] == ["data_batch_1"]


def test_archive_without_the_dataset_is_refused(server, monkeypatch, tmp_path):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        info = tarfile.TarInfo("cifar-10-batches-py/readme.txt")
        tar.addfile(info)
    publish(monkeypatch, server, "cifar10", {"cifar-10-python.tar.gz": buf.getvalue()})
    r = get("cifar10", "--data-dir", str(tmp_path / "root"))
    one_line_error(r, "has no data_batch_1")
    assert not (tmp_path / "root" / "cifar-10-batches-py").exists()
    assert leftovers(tmp_path / "root") == [".downloads/cifar-10-python.tar.gz"]


# ---------------------------------------------------------------- the command's other answers


@pytest.mark.parametrize(
    "args,needle",
    [
        (["imagenet"], "unknown dataset 'imagenet'"),
        (["mnist", "--data-dir", "FILE"], "is a file"),
    ],
)
def test_bad_arguments_one_line(args, needle, tmp_path):
    (tmp_path / "FILE").write_text("x")
    one_line_error(get(*args), needle)


@pytest.mark.parametrize("name", ["femnist", "shakespeare", "sent140"])
def test_leaf_prints_the_papers_steps(name, tmp_path):
    r = get(name, "--data-dir", str(tmp_path))
    assert r.exit_code == 0, r.output
    assert "git clone https://github.com/litian96/FedProx" in r.output
    assert "./preprocess.sh -s niid" in r.output and str(tmp_path / name) in r.output
    assert ("glove" in r.output) == (name == "sent140")
