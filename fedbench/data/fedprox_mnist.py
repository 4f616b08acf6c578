"""FedProx's MNIST (litian96/FedProx data/mnist/generate_niid.py), spec §3.4: all 70,000 images
("MNIST original" = the IDX train and test sets together), standardized per pixel
(x - mu) / (sigma + 0.001) with mu, sigma over all 70k, split over 1000 devices holding two
digits each with power-law sizes (partition.powerlaw), then each device's samples shuffled and
split 90/10 into its training and test data. The test set is all devices' 10%.

Deviation: "MNIST original" lists each digit's training images then its test images in
sorted order; we take each digit's images in IDX order (train then test), so which images a
device gets differs, not the statistics.
"""

from __future__ import annotations

import numpy as np

from fedbench.data import partition as part
from fedbench.data.download import auto_fetch
from fedbench.data.idx import load_idx_dataset, locate
from fedbench.data.registry import Arrays, DataShape, float_bytes, register_dataset


def fedprox_mnist(data_dir, num_clients: int = 1000, p: int = 2, sigma: float = 2.0, seed=0):
    trx, tr_y, tex, te_y = load_idx_dataset("mnist", data_dir)
    x = np.concatenate([trx, tex]).reshape(-1, 784).astype(np.float32)
    y = np.concatenate([tr_y, te_y]).astype(np.int64)
    mu, sd = x.mean(0), x.std(0)
    x = (x - mu) / (sd + 0.001)
    devices = part.powerlaw(y, num_clients, p, seed, sigma)
    train_parts, test_parts = part.split_each(devices, 0.9, seed + 1)
    order = np.concatenate(train_parts)
    sizes = np.array([len(t) for t in train_parts])
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    parts = [np.arange(offsets[i], offsets[i + 1]) for i in range(num_clients)]
    test = np.concatenate(test_parts)
    info = {
        "total_samples": int(sum(len(d) for d in devices)),
        "device_sizes": [len(d) for d in devices],  # train + test, as FedProx's Table 1 counts
    }
    shape = (-1, 1, 28, 28)
    return x[order].reshape(shape), y[order], x[test].reshape(shape), y[test], parts, info


def shape(cfg) -> DataShape:
    return DataShape(63000, 7000, (1, 28, 28), float_bytes(cfg), 10)  # 70,000 split 90/10


def find(cfg):
    return locate("mnist", cfg.data_dir, download=False)


def fetch(cfg) -> bool:
    return auto_fetch("mnist")


@register_dataset("fedprox-mnist", natural=True, shape=shape, locate=find, fetch=fetch)
def load(cfg) -> Arrays:
    n, p, sigma = cfg.num_clients, cfg.classes_per_client, cfg.powerlaw_sigma
    trx, try_, tex, tey, parts, info = fedprox_mnist(
        cfg.data_dir, n, p, sigma, cfg.effective_data_seed
    )
    desc = (
        f"FedProx MNIST: all 70k standardized, {n} devices x {p} digits, power-law sizes, "
        "90/10 split per device"
    )
    return Arrays(trx, try_, tex, tey, 10, desc, parts=parts, info=info)
