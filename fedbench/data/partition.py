"""Partitions: pure functions of (labels, parameters, seed) -> one index array per device."""

from __future__ import annotations

import numpy as np

from fedbench.errors import FedbenchError


def _check_p(p: int, n_cls: int, partition: str) -> None:
    if not 1 <= p <= n_cls:
        raise FedbenchError(
            f"{partition}: P (classes_per_client) = {p} but the data has {n_cls} classes; "
            f"choose 1 <= P <= {n_cls}"
        )


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
    _check_p(p, c, "pclass")
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


def size_stats(sizes: np.ndarray) -> dict:
    """Devices, samples, and mean / std / min / max samples per device."""
    return {
        "devices": len(sizes),
        "samples": int(sizes.sum()),
        "mean_per_device": float(sizes.mean()),
        "std_per_device": float(sizes.std()),
        "min_per_device": int(sizes.min()),
        "max_per_device": int(sizes.max()),
    }


def partition_stats(labels: np.ndarray, parts: list[np.ndarray]) -> dict:
    """Like FedProx Table 1: devices, samples, mean and std per device, classes per device."""
    ncls = np.array([len(np.unique(labels[p])) for p in parts])
    return {
        **size_stats(np.array([len(p) for p in parts])),
        "classes_per_device_mean": float(ncls.mean()),
    }


# ---------------------------------------------------------------- SFL: extended Dirichlet


def exdir(
    labels: np.ndarray,
    num_clients: int,
    c: int,
    alpha: float,
    seed: int,
    min_size: int = 10,
    max_draws: int = 1000,
) -> list[np.ndarray]:
    """SFL's Extended Dirichlet (liyipeng00/convergence sim/data/partition.py ExDirPartitioner),
    spec §5.2.

    Each device picks C distinct classes (redrawn until every class has at least
    max(C*N/#classes/5, 1) holders). Per class: Dirichlet(alpha) weights over all devices, zeroed
    for devices that lack the class or already hold the average n/N samples, renormalised and cut
    cumulatively; the rounding leftover goes to the class's last holder. The split is redrawn
    until every device has at least min_size samples. Deviation: when every holder of a class is
    already above the average (the original divides 0/0), the class is split over its holders
    without the balance rule.
    """
    rng = np.random.default_rng(seed)
    classes = np.unique(labels)
    n_cls = len(classes)
    if not 1 <= c <= n_cls:
        raise FedbenchError(f"exdir needs 1 <= C (classes_per_client) <= {n_cls}, got {c}")
    need = max(c * num_clients // n_cls // 5, 1)
    for _ in range(max_draws):
        holders: list[list[int]] = [[] for _ in range(n_cls)]
        for cid in range(num_clients):
            for k in rng.choice(n_cls, c, replace=False):
                holders[k].append(cid)
        if min(len(h) for h in holders) >= need:
            break
    else:
        raise FedbenchError(f"exdir could not give every class {need} devices; lower C or raise N")
    avg = len(labels) / num_clients
    by_class = [np.flatnonzero(labels == lab) for lab in classes]
    for _ in range(max_draws):
        buckets: list[list[np.ndarray]] = [[] for _ in range(num_clients)]
        sizes = np.zeros(num_clients, dtype=np.int64)
        for k in range(n_cls):
            idx = rng.permutation(by_class[k])
            props = rng.dirichlet(np.full(num_clients, alpha))
            holds = np.zeros(num_clients, dtype=bool)
            holds[holders[k]] = True
            w = props * (holds & (sizes < avg))
            if w.sum() == 0:
                w = props * holds
            cuts = (np.cumsum(w / w.sum()) * len(idx)).astype(int)[:-1]
            cuts[holders[k][-1] :] = len(idx)  # leftover to the last holder
            for cid, part in enumerate(np.split(idx, cuts)):
                buckets[cid].append(part)
                sizes[cid] += len(part)
        if sizes.min() >= min_size:
            return [np.sort(np.concatenate(b)) for b in buckets]
    raise FedbenchError(
        f"exdir(C={c}, alpha={alpha}) could not give every one of {num_clients} devices "
        f"{min_size} samples in {max_draws} draws; raise C or lower N"
    )


# ---------------------------------------------------------------- FedLGA: size imbalance xi


def imbalanced_shards(
    labels: np.ndarray, num_clients: int, p: int, xi: float, seed: int
) -> list[np.ndarray]:
    """FedLGA's imbalance ablation (TCYB §VI-D4, Fig. 10): two kinds of devices, |X_large| =
    xi |X_small|, P classes per device, disjoint data.

    The paper says only that; our reading, documented here: half the devices (a random
    floor(N/2)) are large. Sizes are exact: m_small = floor(n / (N_small + xi N_large)),
    m_large = round(xi m_small); the few samples this leaves over are not used. Each device's
    size is cut into P near-equal sub-shards; the training set is sorted by label (dataset order
    within a class, as pclass) and cut into contiguous sub-shards in a random order of sizes,
    which are dealt at random, P per device. With xi = 1 and classes of equal size this is
    LG-FedAvg's pclass split (each sub-shard lies within one class); with xi > 1 a sub-shard
    can straddle two classes, so a device holds about P classes (as in pclass, sometimes fewer).
    """
    rng = np.random.default_rng(seed)
    n = len(labels)
    _check_p(p, len(np.unique(labels)), "imbalance")
    if xi < 1:
        raise FedbenchError(f"xi (imbalance ratio large/small) must be >= 1, got {xi}")
    large = np.zeros(num_clients, dtype=bool)
    large[rng.permutation(num_clients)[: num_clients // 2]] = True
    n_large = int(large.sum())
    m_small = int(n // ((num_clients - n_large) + xi * n_large))
    m_large = int(round(xi * m_small))
    if m_small < p:
        raise FedbenchError(f"imbalance: small devices would hold {m_small} < P samples")
    sizes = np.where(large, m_large, m_small)
    # sub-shards: (device, size), dealt in a random order along the label-sorted data
    subs = []  # (device, sub-shard size): P near-equal parts of each device's size
    for cid in range(num_clients):
        q, r = divmod(int(sizes[cid]), p)
        subs += [(cid, q + (j < r)) for j in range(p)]
    order = rng.permutation(len(subs))
    sorted_idx = np.argsort(labels, kind="stable")
    out: list[list[np.ndarray]] = [[] for _ in range(num_clients)]
    pos = 0
    for j in order:
        cid, size = subs[j]
        out[cid].append(sorted_idx[pos : pos + size])
        pos += size
    return [np.sort(np.concatenate(o)) for o in out]


# ---------------------------------------------------------------- power-law sizes (FedProx MNIST)


def powerlaw(
    labels: np.ndarray,
    num_clients: int,
    p: int,
    seed: int,
    sigma: float = 2.0,
    start: int = 5,
) -> list[np.ndarray]:
    """FedProx's MNIST split (litian96/FedProx data/mnist/generate_niid.py), spec §3.4,
    for any number of devices and classes.

    Device u holds classes (u + j) % C for j < P, first `start` samples of each; then
    props = lognormal(0, sigma, (C, N/C, P)) rescaled per class to the class's remaining
    samples, and device u adds int(props[l, u // C, j]) samples of class l = (u + j) % C, in
    order, if that many are still left (else none). Classes are taken in dataset order, as the
    original does; samples left over at the end are not used (FedProx: 69,035 of 70,000).
    """
    rng = np.random.default_rng(seed)
    classes = np.unique(labels)
    n_cls = len(classes)
    _check_p(p, n_cls, "powerlaw")
    if num_clients % n_cls:
        raise FedbenchError(
            f"powerlaw needs N divisible by the {n_cls} classes, got N={num_clients}"
        )
    by_class = [np.flatnonzero(labels == lab) for lab in classes]
    taken = np.zeros(n_cls, dtype=np.int64)
    out: list[list[np.ndarray]] = [[] for _ in range(num_clients)]
    for u in range(num_clients):
        for j in range(p):
            lab = (u + j) % n_cls
            if taken[lab] + start > len(by_class[lab]):
                raise FedbenchError(
                    f"powerlaw: class {classes[lab]} has too few samples for {start} per device"
                )
            out[u].append(by_class[lab][taken[lab] : taken[lab] + start])
            taken[lab] += start
    props = rng.lognormal(0, sigma, (n_cls, num_clients // n_cls, p))
    remaining = np.array([len(b) for b in by_class]) - taken
    props = remaining[:, None, None] * props / props.sum((1, 2), keepdims=True)
    for u in range(num_clients):
        for j in range(p):
            lab = (u + j) % n_cls
            k = int(props[lab, u // n_cls, j])
            if taken[lab] + k < len(by_class[lab]):
                out[u].append(by_class[lab][taken[lab] : taken[lab] + k])
                taken[lab] += k
    return [np.sort(np.concatenate(o)) for o in out]


def split_each(parts: list[np.ndarray], frac: float, seed: int) -> tuple[list, list]:
    """Shuffle each device's samples and keep the first int(frac * n) for training (FedProx's
    90/10 split per device); returns (train parts, held-out parts)."""
    rng = np.random.default_rng(seed)
    train, held = [], []
    for p in parts:
        perm = rng.permutation(p)
        n_train = int(frac * len(p))
        train.append(perm[:n_train])
        held.append(perm[n_train:])
    return train, held


# ---------------------------------------------------------------- FedSoftMax: shards, hand-pick


def sorted_shards(
    labels: np.ndarray, num_clients: int, num_shards: int, seed: int
) -> list[np.ndarray]:
    """FedSoftMax's NIID/TNIID split (Tamaya src/datasplitting.py split_dataset), spec §6.5.

    Sort the whole training set by label + U(0,1) (classes in order, random order inside a
    class), cut it into num_shards contiguous shards of equal size (60: NIID, 100: TNIID) and
    deal them from the last: to a random device without data while there is one, otherwise to a
    random device. Every device gets at least one shard; sizes are unbalanced.
    """
    rng = np.random.default_rng(seed)
    if num_shards < num_clients:
        raise FedbenchError(
            f"shards: num_shards = {num_shards} < N = {num_clients}; every device needs a shard"
        )
    order = np.argsort(labels + rng.uniform(0, 1, len(labels)), kind="stable")
    shards = np.array_split(order, num_shards)
    out: list[list[np.ndarray]] = [[] for _ in range(num_clients)]
    for shard in reversed(shards):
        empty = [i for i in range(num_clients) if not out[i]]
        cid = empty[rng.integers(len(empty))] if empty else int(rng.integers(num_clients))
        out[cid].append(shard)
    return [np.sort(np.concatenate(o)) for o in out]


def handpick(
    labels: np.ndarray,
    num_clients: int,
    seed: int,
    per_client: int = 200,
    groups: int = 5,
    holdout: float = 0.15,
) -> list[np.ndarray]:
    """FedSoftMax's hand-pick split (Tamaya split_dataset_noniid with its size/number lists),
    spec §6.5: N/5 devices per group, group g holds classes 2g and 2g+1, 200 samples per device
    (100 of each class), of which 15% per class (int(0.15 * 100) = 15) are held out locally, so
    170 train. Deviation: the original reshuffles the class pool for every device, so two
    devices can share samples; we draw without replacement (the data suffice: 100 N / 5 per
    class)."""
    rng = np.random.default_rng(seed)
    classes = np.unique(labels)
    if num_clients % groups or len(classes) < 2 * groups:
        raise FedbenchError(
            f"handpick needs N divisible by {groups} and {2 * groups} classes; got N={num_clients}"
        )
    pools = {int(lab): list(rng.permutation(np.flatnonzero(labels == lab))) for lab in classes}
    per_class = per_client // 2
    n_train = per_class - int(holdout * per_class)
    out = []
    for cid in range(num_clients):
        g = cid // (num_clients // groups)
        mine = []
        for lab in (int(classes[2 * g]), int(classes[2 * g + 1])):
            if len(pools[lab]) < per_class:
                raise FedbenchError(
                    f"handpick: class {lab} has too few samples for N={num_clients}"
                )
            take, pools[lab] = pools[lab][:per_class], pools[lab][per_class:]
            mine.append(np.array(take[:n_train]))
        out.append(np.sort(np.concatenate(mine)))
    return out
