"""Partitions: pure functions of (labels, parameters, seed) -> one index array per device."""

from __future__ import annotations

import numpy as np

from fedbench.errors import FedbenchError


def iid(num_samples: int, num_clients: int, seed: int) -> list[np.ndarray]:
    perm = np.random.default_rng(seed).permutation(num_samples)
    return [np.sort(p) for p in np.array_split(perm, num_clients)]


def pclass_shards(labels: np.ndarray, num_clients: int, p: int, seed: int) -> list[np.ndarray]:
    """LG-FedAvg's noniid() (pliang279/LG-FedAvg utils/sampling.py), spec §2.2.

    Each class is cut, in dataset order, into p*N/C equal shards (the leftover samples go one
    each to the first shards); the list of labels repeated that many times is shuffled and
    reshaped to (N, p); each device takes one random unused shard of each label in its row.
    A device can get fewer than p distinct classes, as in the original.
    """
    rng = np.random.default_rng(seed)
    classes = np.unique(labels)
    c = len(classes)
    if (p * num_clients) % c:
        raise FedbenchError(
            f"pclass needs P*N divisible by the {c} classes; got P={p}, N={num_clients}"
        )
    shards_per_class = p * num_clients // c
    shards: dict[int, list[np.ndarray]] = {}
    for label in classes:
        idx = np.flatnonzero(labels == label)
        if len(idx) < shards_per_class:
            raise FedbenchError(
                f"class {label} has {len(idx)} samples, fewer than the {shards_per_class} "
                "shards P*N/C asks for; lower P or N"
            )
        n_left = len(idx) % shards_per_class
        body, left = (idx[:-n_left], idx[-n_left:]) if n_left else (idx, idx[:0])
        parts = list(body.reshape(shards_per_class, -1))
        for i, extra in enumerate(left):
            parts[i] = np.append(parts[i], extra)
        shards[int(label)] = parts
    rows = rng.permutation(np.repeat(classes, shards_per_class)).reshape(num_clients, p)
    out = []
    for row in rows:
        taken = [shards[int(lab)].pop(rng.integers(len(shards[int(lab)]))) for lab in row]
        out.append(np.sort(np.concatenate(taken)))
    return out


def dirichlet(
    labels: np.ndarray, num_clients: int, alpha: float, seed: int, min_size: int = 10
) -> list[np.ndarray]:
    """Per-class Dirichlet(alpha) proportions over devices (Hsu et al. 2019), redrawn until
    every device holds at least min_size samples."""
    rng = np.random.default_rng(seed)
    classes = np.unique(labels)
    for _ in range(1000):
        buckets: list[list[np.ndarray]] = [[] for _ in range(num_clients)]
        for label in classes:
            idx = rng.permutation(np.flatnonzero(labels == label))
            props = rng.dirichlet(np.full(num_clients, alpha))
            cuts = (np.cumsum(props)[:-1] * len(idx)).astype(int)
            for k, part in enumerate(np.split(idx, cuts)):
                buckets[k].append(part)
        out = [np.sort(np.concatenate(b)) for b in buckets]
        if min(len(o) for o in out) >= min_size:
            return out
    raise FedbenchError(
        f"dirichlet(alpha={alpha}) could not give every one of {num_clients} devices "
        f"{min_size} samples in 1000 draws; raise dirichlet_alpha or lower N"
    )


def partition_stats(labels: np.ndarray, parts: list[np.ndarray]) -> dict:
    """Like FedProx Table 1: devices, samples, mean and std per device, classes per device."""
    sizes = np.array([len(p) for p in parts])
    ncls = np.array([len(np.unique(labels[p])) for p in parts])
    return {
        "devices": len(parts),
        "samples": int(sizes.sum()),
        "mean_per_device": float(sizes.mean()),
        "std_per_device": float(sizes.std()),
        "min_per_device": int(sizes.min()),
        "max_per_device": int(sizes.max()),
        "classes_per_device_mean": float(ncls.mean()),
    }
