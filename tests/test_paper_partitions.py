"""The partitions of the four papers (pure functions of labels, parameters and seed) and
FedProx's MNIST on the real data."""

import numpy as np
import pytest
from conftest import MNIST_DIR

from fedbench.data import partition as part

LABELS = np.repeat(np.arange(10), 500)[np.random.default_rng(0).permutation(5000)]


def _check_disjoint(parts, n=None):
    flat = np.concatenate(parts)
    assert len(np.unique(flat)) == len(flat), "a sample is on two devices"
    if n is not None:
        assert len(flat) == n, "samples lost or invented"


def _classes(parts, labels=LABELS):
    return [set(np.unique(labels[p]).tolist()) for p in parts]


@pytest.mark.parametrize("c", [1, 2])
def test_exdir_classes_and_min_size(c):
    parts = part.exdir(LABELS, 50, c, 10.0, seed=3)
    _check_disjoint(parts, len(LABELS))  # the leftover goes to the class's last holder
    assert min(len(p) for p in parts) >= 10
    assert max(len(k) for k in _classes(parts)) <= c
    again = part.exdir(LABELS, 50, c, 10.0, seed=3)
    assert all(np.array_equal(a, b) for a, b in zip(parts, again))
    other = part.exdir(LABELS, 50, c, 10.0, seed=4)
    assert not all(np.array_equal(a, b) for a, b in zip(parts, other))


def test_exdir_balances_sizes():
    """Devices at the average size stop receiving data, so sizes stay near n/N."""
    sizes = np.array([len(p) for p in part.exdir(LABELS, 50, 2, 10.0, seed=0)])
    assert sizes.mean() == 100 and sizes.max() < 300


@pytest.mark.parametrize("xi", [1, 2, 3])
def test_imbalance_ratio_xi(xi):
    parts = part.imbalanced_shards(LABELS, 50, 3, float(xi), seed=1)
    _check_disjoint(parts)
    sizes = np.array([len(p) for p in parts])
    small, large = sizes.min(), sizes.max()
    assert large == xi * small
    if xi > 1:
        assert (sizes == large).sum() == 25 and (sizes == small).sum() == 25
    assert sizes.sum() > len(LABELS) - (25 + 25 * xi)  # only the rounding leftover is unused
    assert max(len(k) for k in _classes(parts)) <= 2 * 3
    if xi == 1:  # sub-shards that tile the classes: LG-FedAvg's P-class split (2 x 60 here)
        labels = np.repeat(np.arange(10), 600)
        even = part.imbalanced_shards(labels, 50, 2, 1.0, seed=1)
        assert all(len(p) == 120 for p in even)
        assert max(len(k) for k in _classes(even, labels)) <= 2
    again = part.imbalanced_shards(LABELS, 50, 3, float(xi), seed=1)
    assert all(np.array_equal(a, b) for a, b in zip(parts, again))


def test_powerlaw_like_fedprox():
    parts = part.powerlaw(LABELS, 100, 2, seed=0)
    _check_disjoint(parts)
    for u, k in enumerate(_classes(parts)):
        assert k == {u % 10, (u + 1) % 10}
    sizes = np.array([len(p) for p in parts])
    assert sizes.min() >= 10 and sizes.std() > sizes.mean() / 2  # power law: heavy tail
    again = part.powerlaw(LABELS, 100, 2, seed=0)
    assert all(np.array_equal(a, b) for a, b in zip(parts, again))


@pytest.mark.parametrize("shards", [60, 100])
def test_sorted_shards(shards):
    parts = part.sorted_shards(LABELS, 50, shards, seed=0)
    _check_disjoint(parts, len(LABELS))
    sizes = np.array([len(p) for p in parts])
    shard = len(LABELS) // shards
    assert sizes.min() >= shard and sizes.sum() == len(LABELS)
    assert set((sizes // shard).tolist()) >= {1, 2}  # unbalanced: some devices get two or more
    assert max(len(k) for k in _classes(parts)) <= 2 * (sizes.max() // shard + 1)
    with pytest.raises(Exception, match="every device needs a shard"):
        part.sorted_shards(LABELS, 50, 40, seed=0)


def test_handpick():
    parts = part.handpick(LABELS, 20, seed=0)
    _check_disjoint(parts)
    assert all(len(p) == 170 for p in parts)  # 200 per client, 15% of each class held out
    for cid, k in enumerate(_classes(parts)):
        g = cid // 4
        assert k == {2 * g, 2 * g + 1}
        assert (LABELS[parts[cid]] == 2 * g).sum() == 85


def test_partition_stats_like_table1():
    st = part.partition_stats(LABELS, part.powerlaw(LABELS, 100, 2, seed=0))
    assert st["devices"] == 100 and st["classes_per_device_mean"] == 2
    assert {"samples", "mean_per_device", "std_per_device"} <= set(st)


def test_fedprox_mnist_stats_on_real_mnist():
    if (
        not (MNIST_DIR / "MNIST" / "raw" / "train-images-idx3-ubyte").exists()
        and not (MNIST_DIR / "MNIST" / "raw" / "train-images-idx3-ubyte.gz").exists()
    ):
        pytest.skip(f"MNIST IDX files not in {MNIST_DIR}/MNIST/raw (shared data absent)")
    from fedbench.data.fedprox_mnist import fedprox_mnist

    trx, try_, tex, tey, parts, info = fedprox_mnist(str(MNIST_DIR), 1000, 2, 2.0, seed=0)
    # FedProx Table 1: 1,000 devices, 69,035 samples (train + test), 69 +- 106 per device
    total = len(try_) + len(tey)
    assert len(parts) == 1000 and info["total_samples"] == total == sum(info["device_sizes"])
    assert abs(total - 69035) < 0.03 * 69035
    for u, p in enumerate(parts[:50]):
        assert set(np.unique(try_[p]).tolist()) <= {u % 10, (u + 1) % 10}
    assert min(len(p) for p in parts) >= 9  # 10 to start with, 90% of them for training
    # standardized per pixel over all 70k images: mean ~0
    assert abs(float(np.concatenate([trx, tex]).mean())) < 0.05
    assert trx.shape[1:] == (1, 28, 28)
