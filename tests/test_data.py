"""Partitions, the Synthetic(alpha, beta) generator and the IDX readers against known answers."""

import gzip
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import MNIST_DIR

from fedbench.config import RunConfig
from fedbench.data import load_federated
from fedbench.data import partition as part
from fedbench.data.idx import read_idx
from fedbench.data.synthetic import DIM, generate_synthetic
from fedbench.errors import FedbenchError

FMNIST_LIKE = np.repeat(np.arange(10), 6000)  # 10 classes x 6000, in class order


def test_pclass_shards_fmnist_sizes():
    parts = part.pclass_shards(FMNIST_LIKE, num_clients=50, p=2, seed=0)
    assert [len(p) for p in parts] == [1200] * 50  # 2 shards of 600
    allidx = np.concatenate(parts)
    assert len(np.unique(allidx)) == 60000  # disjoint, covers everything
    ncls = [len(np.unique(FMNIST_LIKE[p])) for p in parts]
    assert max(ncls) <= 2 and min(ncls) >= 1
    # each device holds whole shards: per class a multiple of 600
    for p in parts:
        _, counts = np.unique(FMNIST_LIKE[p], return_counts=True)
        assert all(c % 600 == 0 for c in counts)


def test_pclass_shards_leftovers_and_cifar100():
    labels = np.repeat(np.arange(100), 500)  # CIFAR-100 shape
    parts = part.pclass_shards(labels, num_clients=50, p=20, seed=1)
    assert [len(p) for p in parts] == [1000] * 50
    uneven = np.concatenate([np.repeat(np.arange(10), 101)])  # 101 per class, 10 shards/class
    parts = part.pclass_shards(uneven, num_clients=10, p=10, seed=0)
    assert sum(len(p) for p in parts) == 1010


def test_pclass_rejects_indivisible():
    with pytest.raises(FedbenchError, match="divisible"):
        part.pclass_shards(FMNIST_LIKE, num_clients=7, p=3, seed=0)


def test_partitions_are_pure_functions_of_seed():
    a = part.pclass_shards(FMNIST_LIKE, 50, 2, seed=3)
    b = part.pclass_shards(FMNIST_LIKE, 50, 2, seed=3)
    c = part.pclass_shards(FMNIST_LIKE, 50, 2, seed=4)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert not all(np.array_equal(x, y) for x, y in zip(a, c))
    d1 = part.dirichlet(FMNIST_LIKE, 20, 0.3, seed=5)
    d2 = part.dirichlet(FMNIST_LIKE, 20, 0.3, seed=5)
    assert all(np.array_equal(x, y) for x, y in zip(d1, d2))


def test_iid_and_dirichlet_sizes():
    parts = part.iid(60000, 50, seed=0)
    assert [len(p) for p in parts] == [1200] * 50
    d = part.dirichlet(FMNIST_LIKE, 30, 0.1, seed=0)
    assert min(len(p) for p in d) >= 10
    assert sum(len(p) for p in d) == 60000
    assert len(np.unique(np.concatenate(d))) == 60000


def test_partition_stats():
    stats = part.partition_stats(FMNIST_LIKE, part.pclass_shards(FMNIST_LIKE, 50, 2, 0))
    assert stats["devices"] == 50 and stats["samples"] == 60000
    assert stats["mean_per_device"] == 1200 and stats["std_per_device"] == 0


def test_synthetic_shapes_and_size_law():
    trx, try_, tex, tey = generate_synthetic(1.0, 1.0, iid=False, num_devices=30, seed=7)
    # n_k = int(lognormal(4, 2)) + 50: the first draw of the seeded stream
    expected = np.random.RandomState(7).lognormal(4, 2, 30).astype(int) + 50
    sizes = np.array([len(a) + len(b) for a, b in zip(try_, tey)])
    assert np.array_equal(sizes, expected)
    assert all(len(a) == int(0.9 * n) for a, n in zip(try_, sizes))  # 90/10 split
    assert all(x.shape[1] == DIM for x in trx) and len(trx) == 30
    assert all(y.min() >= 0 and y.max() <= 9 for y in try_)


def test_synthetic_iid_shares_one_model():
    trx, try_, _, _ = generate_synthetic(0.0, 0.0, iid=True, num_devices=5, seed=0)
    # with one shared (W, b) and v = 0, every device's features have mean ~0
    means = np.array([x.mean() for x in trx])
    assert np.abs(means).max() < 0.5
    # heterogeneous data: device means differ much more
    trx2, _, _, _ = generate_synthetic(1.0, 1.0, iid=False, num_devices=5, seed=0)
    assert np.std([x.mean() for x in trx2]) > np.std(means)


def test_synthetic_is_seeded():
    a = generate_synthetic(0.5, 0.5, False, 4, seed=1)
    b = generate_synthetic(0.5, 0.5, False, 4, seed=1)
    assert all(np.array_equal(x, y) for x, y in zip(a[0], b[0]))


def _write_idx(path: Path, arr: np.ndarray, compress=True):
    header = bytes([0, 0, 8, arr.ndim]) + b"".join(int(d).to_bytes(4, "big") for d in arr.shape)
    raw = header + arr.astype(np.uint8).tobytes()
    if compress:
        path.write_bytes(gzip.compress(raw))
    else:
        path.write_bytes(raw)


def test_idx_round_trip_and_truncation(tmp_path):
    arr = np.arange(2 * 28 * 28).reshape(2, 28, 28) % 256
    _write_idx(tmp_path / "a.gz", arr)
    assert np.array_equal(read_idx(tmp_path / "a.gz"), arr)
    _write_idx(tmp_path / "b", arr, compress=False)
    data = (tmp_path / "b").read_bytes()
    (tmp_path / "b").write_bytes(data[:-100])
    with pytest.raises(FedbenchError, match="truncated"):
        read_idx(tmp_path / "b")
    (tmp_path / "c").write_bytes(b"not an idx file at all")
    with pytest.raises(FedbenchError, match="magic"):
        read_idx(tmp_path / "c")


def test_missing_dataset_one_line(tmp_path, monkeypatch):
    monkeypatch.setattr("fedbench.data.idx.SYSTEM_DIRS", {"fmnist": [], "mnist": []})
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("FEDBENCH_DATA", raising=False)
    cfg = RunConfig(dataset="fmnist", partition="iid", data_dir=str(tmp_path / "nowhere"))
    with pytest.raises(FedbenchError) as e:
        load_federated(cfg, torch.device("cpu"))
    msg = str(e.value)
    assert "\n" not in msg and "nowhere" in msg and "apt-get install dataset-fashion-mnist" in msg


def test_real_fmnist_pclass(fmnist_available):
    cfg = RunConfig(dataset="fmnist", partition="pclass", num_clients=50, classes_per_client=2)
    data = load_federated(cfg, torch.device("cpu"))
    assert data.train_x.shape == (60000, 1, 28, 28) and data.test_x.shape == (10000, 1, 28, 28)
    assert data.info["samples"] == 60000 and data.info["mean_per_device"] == 1200
    assert abs(float(data.train_x.mean())) < 0.01  # normalized


def test_real_mnist_from_shared(monkeypatch):
    if not (MNIST_DIR / "MNIST" / "raw" / "train-labels-idx1-ubyte.gz").exists():
        pytest.skip("shared MNIST not present")
    cfg = RunConfig(dataset="mnist", partition="iid", num_clients=10, data_dir=str(MNIST_DIR))
    data = load_federated(cfg, torch.device("cpu"))
    assert data.train_x.shape[0] == 60000 and int(data.train_y.max()) == 9
