"""FedProx's Synthetic(alpha, beta) and Synthetic-IID (litian96/FedProx generate_synthetic.py).

Spec §3.3: 30 devices, 60 features, 10 classes, n_k = int(lognormal(4, 2)) + 50,
u_k ~ N(0, alpha), B_k ~ N(0, beta) (standard deviations, as numpy's scale), W_k, b_k ~ N(u_k, 1),
v_k ~ N(B_k, 1), Sigma = diag((j+1)^-1.2), x ~ N(v_k, Sigma), y = argmax(x W_k + b_k).
IID: one shared W, b ~ N(0, 1) and v = 0. Each device's data is shuffled and split 90/10.
The random calls follow the original script's order, from a seeded RandomState.
"""

from __future__ import annotations

import math

import numpy as np

from fedbench.data.registry import Arrays, DataShape, float_bytes, register_dataset

DIM = 60
NUM_CLASSES = 10


def generate_synthetic(alpha: float, beta: float, iid: bool, num_devices: int = 30, seed: int = 0):
    """Returns per-device lists (train_x, train_y, test_x, test_y) of numpy arrays."""
    rng = np.random.RandomState(seed)
    sizes = rng.lognormal(4, 2, num_devices).astype(int) + 50
    mean_w = rng.normal(0, alpha, num_devices)
    mean_b = mean_w
    b_shift = rng.normal(0, beta, num_devices)
    cov_x = np.diag(np.power(np.arange(1, DIM + 1, dtype=float), -1.2))
    mean_x = np.zeros((num_devices, DIM))
    for i in range(num_devices):
        mean_x[i] = np.ones(DIM) * b_shift[i] if iid else rng.normal(b_shift[i], 1, DIM)
    if iid:
        w_global = rng.normal(0, 1, (DIM, NUM_CLASSES))
        b_global = rng.normal(0, 1, NUM_CLASSES)
    out: tuple[list, list, list, list] = ([], [], [], [])
    for i in range(num_devices):
        w = rng.normal(mean_w[i], 1, (DIM, NUM_CLASSES))
        b = rng.normal(mean_b[i], 1, NUM_CLASSES)
        if iid:
            w, b = w_global, b_global
        x = rng.multivariate_normal(mean_x[i], cov_x, sizes[i])
        y = np.argmax(x @ w + b, axis=1)  # argmax of softmax = argmax of logits
        perm = rng.permutation(sizes[i])
        x, y = x[perm].astype(np.float32), y[perm].astype(np.int64)
        n_train = int(0.9 * sizes[i])
        out[0].append(x[:n_train])
        out[1].append(y[:n_train])
        out[2].append(x[n_train:])
        out[3].append(y[n_train:])
    return out


# a device's expected samples: E[int(lognormal(4, 2))] + 50 = exp(4 + 2**2 / 2) - 1/2 + 50
MEAN_DEVICE_SAMPLES = math.exp(6) + 49.5


def shape(cfg) -> DataShape:
    n = int(cfg.num_clients * MEAN_DEVICE_SAMPLES)  # expected; split 90/10
    return DataShape(n * 9 // 10, n // 10, (DIM,), float_bytes(cfg), NUM_CLASSES)


@register_dataset("synthetic", natural=True, shape=shape)
def load(cfg) -> Arrays:
    alpha, beta, iid = cfg.syn_alpha, cfg.syn_beta, cfg.syn_iid
    trx, try_, tex, tey = generate_synthetic(
        alpha, beta, iid, cfg.num_clients, cfg.effective_data_seed
    )
    sizes = np.array([len(y) for y in try_])
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    parts = [np.arange(offsets[i], offsets[i + 1]) for i in range(len(sizes))]
    desc = f"synthetic{'-iid' if iid else ''}(alpha={alpha}, beta={beta}), natural split"
    return Arrays(
        np.concatenate(trx), np.concatenate(try_), np.concatenate(tex), np.concatenate(tey), 10,
        desc, parts=parts,
    )  # fmt: skip
