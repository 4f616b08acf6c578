"""Federated datasets: all samples resident on the torch device, one index array per device.

Image datasets (CIFAR, CINIC) stay uint8 on the device; their input pipeline (normalize, crop,
flip, resize) runs per mini-batch through train_transform / eval_transform, which the engine
calls where it gathers a batch. Every other dataset is stored model-ready and the hooks are the
identity.

Each dataset is registered by its loader module (fedbench.data.registry: @register_dataset);
importing this package imports every module in it, so DATASETS is complete once it is imported.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import pkgutil
import sys
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from fedbench import version
from fedbench.atomic import atomic_write_json
from fedbench.config import RunConfig
from fedbench.data import partition as part
from fedbench.data.registry import DATASETS, Arrays, DatasetSpec, register_dataset
from fedbench.errors import FedbenchError, reading
from fedbench.lazy import torch  # loaded when tensors are made: reading arrays needs none

if TYPE_CHECKING:
    from fedbench.data.transforms import ImagePipeline


@dataclass
class FederatedData:
    train_x: torch.Tensor  # [n, ...] on the run's device
    train_y: torch.Tensor  # [n] int64
    test_x: torch.Tensor
    test_y: torch.Tensor
    client_indices: list[torch.Tensor]  # per device, indices into train_x (CPU, int64)
    num_classes: int
    info: dict = field(default_factory=dict)  # partition description and statistics
    pipeline: ImagePipeline | None = None  # per-batch input pipeline (image datasets)
    embeddings: torch.Tensor | None = None  # sent140 with GloVe: frozen word vectors [V+1, d]
    # what is computed from the data once and shared by every run on it (window_gram's Grams);
    # not an init field: dataclasses.replace (stack.py's merged data) starts it empty
    derived: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    @property
    def num_clients(self) -> int:
        return len(self.client_indices)

    @property
    def sizes(self) -> torch.Tensor:
        return torch.tensor([len(i) for i in self.client_indices])

    @property
    def input_shape(self) -> tuple[int, ...]:
        """Shape of one model input (after the pipeline's resize)."""
        shape = tuple(self.train_x.shape[1:])
        if self.pipeline is not None and self.pipeline.resize:
            shape = (*shape[:-2], self.pipeline.resize, self.pipeline.resize)
        return shape

    # ---- input-pipeline hooks (identity without a pipeline)
    def train_transform(self, xb: torch.Tensor, aug: torch.Tensor | None = None) -> torch.Tensor:
        return xb if self.pipeline is None else self.pipeline.train(xb, aug)

    def eval_transform(self, xb: torch.Tensor) -> torch.Tensor:
        return xb if self.pipeline is None else self.pipeline.eval(xb)

    def draw_augment(self, seed: int, r: int, clients, steps: int, batch: int):
        """Per-sample augmentation draws [K, steps, batch, 3] for one round, or None."""
        if self.pipeline is None:
            return None
        return self.pipeline.draw_augment(seed, r, clients, steps, batch, self.train_x.device)

    @property
    def eval_chunk(self) -> int:
        """Samples per evaluation chunk: small when inputs are resized (224x224 is 48x 32x32)."""
        if self.pipeline is not None and self.pipeline.resize:
            return max(64, 10000 * 32 * 32 // self.pipeline.resize**2)
        return 10000

    def positions(self, clients: list[int], batch_idx: torch.Tensor) -> torch.Tensor:
        """Each of a round's batch samples' place among its device's samples: batch_idx [k, ...]
        holds row i's sample indices (device clients[i]'s), the result the same shape (CPU).
        A slot holding another device's sample (past a row's last step, masked) gets place 0,
        so that it stays inside the device's own block."""
        batch = batch_idx.cpu()
        place = torch.zeros(len(self.train_x), dtype=torch.long)
        owner = torch.full((len(self.train_x),), -1, dtype=torch.long)
        out = torch.zeros_like(batch)
        for i, c in enumerate(clients):
            m = self.client_indices[c]
            place[m], owner[m] = torch.arange(len(m)), c
            out[i] = torch.where(owner[batch[i]] == c, place[batch[i]], 0)
        return out

    def padded_indices(self, clients: list[int]) -> torch.Tensor:
        """[len(clients), n_max] these devices' sample indices, each row padded to the longest
        with its first index (a padded place is never read: positions stay below n_i)."""
        members = [self.client_indices[c] for c in clients]
        out = torch.empty(len(members), max(len(m) for m in members), dtype=torch.long)
        for i, idx in enumerate(members):
            out[i, : len(idx)] = idx
            out[i, len(idx) :] = idx[0]
        return out


def make_partition(cfg: RunConfig, labels: np.ndarray) -> list[np.ndarray]:
    """The partition named by cfg.partition: a pure function of (labels, parameters, seed)."""
    seed, n = cfg.effective_data_seed, cfg.num_clients
    if n > len(labels):
        raise FedbenchError(
            f"N = {n} devices but {cfg.dataset}'s training data has {len(labels)} samples; "
            "lower N (num_clients)"
        )
    if cfg.partition == "iid":
        return part.iid(len(labels), n, seed)
    if cfg.partition == "pclass":
        return part.pclass_shards(labels, n, cfg.classes_per_client, seed)
    if cfg.partition == "dirichlet":
        return part.dirichlet(labels, n, cfg.dirichlet_alpha, seed)
    if cfg.partition == "exdir":
        return part.exdir(labels, n, cfg.classes_per_client, cfg.dirichlet_alpha, seed)
    if cfg.partition == "imbalance":
        return part.imbalanced_shards(labels, n, cfg.classes_per_client, cfg.xi, seed)
    if cfg.partition == "powerlaw":
        return part.powerlaw(labels, n, cfg.classes_per_client, seed, cfg.powerlaw_sigma)
    if cfg.partition == "shards":
        return part.sorted_shards(labels, n, cfg.num_shards, seed)
    if cfg.partition == "handpick":
        return part.handpick(labels, n, seed)
    raise AssertionError(cfg.partition)  # 'natural' is handled by the dataset itself


def describe_partition(cfg: RunConfig) -> str:
    extra = {
        "pclass": f"P={cfg.classes_per_client}",
        "dirichlet": f"alpha={cfg.dirichlet_alpha}",
        "exdir": f"C={cfg.classes_per_client}, alpha={cfg.dirichlet_alpha}",
        "imbalance": f"P={cfg.classes_per_client}, xi={cfg.xi}",
        "powerlaw": f"P={cfg.classes_per_client}, sigma={cfg.powerlaw_sigma}",
        "shards": f"{cfg.num_shards} shards",
        "handpick": "200 per device, 15% held out",
    }.get(cfg.partition)
    return f"partition={cfg.partition}" + (f" ({extra})" if extra else "")


def _image_pipeline(cfg: RunConfig, dtype: torch.dtype) -> ImagePipeline:
    from fedbench.data.transforms import STATS, ImagePipeline

    stats = {"dataset": STATS.get(cfg.dataset), "imagenet": STATS["imagenet"], "none": None}
    mean, std = stats[cfg.normalize] or (None, None)
    return ImagePipeline(mean, std, augment=cfg.augment, resize=cfg.resize, dtype=dtype)


def load_arrays(cfg: RunConfig):
    """Numpy arrays of one dataset and its split, before anything goes to the torch device:
    (train_x, train_y, test_x, test_y, parts, num_classes, info, extras), checked (check_arrays).
    """
    where = f"{cfg.dataset} data" + (f" in {cfg.data_dir}" if cfg.data_dir else "")
    with reading(where, "check the files or download them again"):
        out = _load_arrays(cfg)
    check_arrays(cfg, *out[:6])
    return out


def check_arrays(cfg: RunConfig, train_x, train_y, test_x, test_y, parts, num_classes) -> None:
    """What every dataset must satisfy, whatever its files held: as many labels as samples,
    labels among the classes, one input shape, and samples on every device."""
    for split, x, y in (("training", train_x, train_y), ("test", test_x, test_y)):
        y = np.asarray(y)
        if len(x) != len(y):
            raise FedbenchError(
                f"{cfg.dataset}: {len(x)} {split} samples but {len(y)} labels; check the files"
            )
        if num_classes > 1 and len(y) and (y.min() < 0 or y.max() >= num_classes):
            raise FedbenchError(
                f"{cfg.dataset}: {split} labels range over {y.min()}..{y.max()}, outside the "
                f"{num_classes} classes 0..{num_classes - 1}; check the files"
            )
    if tuple(train_x.shape[1:]) != tuple(test_x.shape[1:]):
        raise FedbenchError(
            f"{cfg.dataset}: training inputs have shape {tuple(train_x.shape[1:])} but test "
            f"inputs {tuple(test_x.shape[1:])}; check the files"
        )
    if min(len(p) for p in parts) == 0:
        raise FedbenchError(
            f"{cfg.dataset}, {describe_partition(cfg)}: a device has no samples; "
            "lower N or change the partition"
        )


def _load_arrays(cfg: RunConfig):
    """The registered loader of cfg.dataset; then the partition (datasets without a natural
    split) and the input pipeline (entries that ask for one)."""
    spec = DATASETS.lookup(cfg.dataset)
    a = spec.load(cfg)
    parts, desc, info, extras = a.parts, a.describe, dict(a.info), {}
    if not spec.natural:
        parts = make_partition(cfg, a.train_y)
        desc = f"{desc}, {describe_partition(cfg)}{a.describe_tail}"
    if spec.pipeline:
        pipe = _image_pipeline(cfg, getattr(torch, cfg.dtype))
        extras["pipeline"] = pipe
        desc += f"; {pipe.describe()}"
        info["pipeline"] = pipe.describe()
    if a.embeddings is not None:
        extras["embeddings"] = torch.from_numpy(a.embeddings).to(getattr(torch, cfg.dtype))
    info = {"description": desc, **info}
    return a.train_x, a.train_y, a.test_x, a.test_y, parts, a.num_classes, info, extras


def _to_tensor(a, dtype: torch.dtype) -> torch.Tensor:
    if isinstance(a, torch.Tensor):
        return a
    t = torch.from_numpy(np.ascontiguousarray(a))
    return t if t.dtype in (torch.uint8, torch.int64) else t.to(dtype)


def split_stats(train_y: np.ndarray, parts: list[np.ndarray], info: dict) -> dict:
    """Per-device statistics (FedProx Table 1). Datasets whose devices also hold test data
    (LEAF, FedProx MNIST: info["device_sizes"]) count whole devices, as the paper does."""
    stats = part.partition_stats(np.asarray(train_y), parts)
    if info.get("device_sizes") is not None:
        sizes = np.asarray(info["device_sizes"])
        stats = {**stats, **part.size_stats(sizes), "train_samples": len(train_y)}
    return stats


def load_federated(cfg: RunConfig, device: torch.device) -> FederatedData:
    dtype = getattr(torch, cfg.dtype)
    arrays, fingerprint = load_fingerprinted(cfg)
    train_x, train_y, test_x, test_y, parts, num_classes, info, extras = arrays
    train_y = np.asarray(train_y, dtype=np.int64)
    stats = split_stats(train_y, parts, info)
    info = {k: v for k, v in info.items() if k != "device_sizes"}
    emb = extras.get("embeddings")
    return FederatedData(
        train_x=_to_tensor(train_x, dtype).to(device),
        train_y=torch.from_numpy(train_y).to(device),
        test_x=_to_tensor(test_x, dtype).to(device),
        test_y=torch.from_numpy(np.asarray(test_y, dtype=np.int64)).to(device),
        client_indices=[torch.from_numpy(np.asarray(p, dtype=np.int64)) for p in parts],
        num_classes=num_classes,
        info={
            **info,
            "fingerprint": fingerprint,
            "partition_sha256": _partition_digest(parts),
            **stats,
        },
        pipeline=extras.get("pipeline"),
        embeddings=emb.to(device) if emb is not None else None,
    )


def _partition_digest(parts: list[np.ndarray]) -> str:
    import hashlib

    h = hashlib.sha256()
    for p in parts:
        h.update(np.asarray(p, dtype=np.int64).tobytes())
        h.update(b"|")
    return h.hexdigest()[:16]


# ---------------------------------------------------------------- data fingerprint
#
# A run records the fingerprint of the data it loaded: a SHA-256 of the train and test arrays
# (dtype, shape, bytes), so the same config on other data files is another run (see
# runner.check_not_done). Hashing needs the arrays, so each fingerprint is remembered in
# <cache>/fingerprints.json with what it depends on: the config fields the loader read, and the
# size and mtime of every file it opened (found with an audit hook); a sweep then learns the
# fingerprint of data it has loaded before from a few stat calls, and reloads only when a file
# changed.

FINGERPRINTS = "fingerprints.json"
_OPENED: list[set[str]] = []  # files opened for reading, per active capture
_HOOKED: list[bool] = []
_SKIP_SUFFIXES = (".py", ".pyc", ".so", ".pth")


def arrays_fingerprint(*arrays) -> str:
    h = hashlib.sha256()
    for a in arrays:
        if isinstance(a, torch.Tensor):
            a = a.detach().cpu().contiguous().numpy()
        a = np.asarray(a)
        h.update(f"{a.dtype.str}{a.shape}|".encode())
        if a.dtype.kind == "O":
            h.update(repr(a.tolist()).encode())
        else:
            h.update(np.ascontiguousarray(a).data)
    return h.hexdigest()[:16]


def _audit(event: str, args: tuple) -> None:
    if not _OPENED or event != "open":
        return
    path, mode, flags = args
    if not isinstance(path, (str, bytes, os.PathLike)):
        return
    writing = (
        any(c in mode for c in "wax+")
        if isinstance(mode, str)
        else bool((flags or 0) & (os.O_WRONLY | os.O_RDWR))
    )
    if not writing:
        _OPENED[-1].add(os.path.abspath(os.fsdecode(path)))


@contextmanager
def _files_read():
    if not _HOOKED:
        sys.addaudithook(_audit)
        _HOOKED.append(True)
    found: set[str] = set()
    _OPENED.append(found)
    try:
        yield found
    finally:
        _OPENED.pop()


class _FieldReads:
    """cfg, recording the names of the fields a loader reads."""

    def __init__(self, cfg: RunConfig):
        object.__setattr__(self, "_cfg", cfg)
        object.__setattr__(self, "names", set())

    def __getattr__(self, name: str):
        self.names.add(name)
        return getattr(self._cfg, name)


def _data_files(paths: set[str]) -> list[list]:
    """[path, size, mtime_ns] of the data files among the opened paths (not Python's own)."""
    skip = tuple({sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.dirname(__file__)})
    out = []
    for p in sorted(paths):
        if p.endswith(_SKIP_SUFFIXES) or p.startswith(("/proc/", "/sys/", "/dev/", *skip)):
            continue
        try:
            st = os.stat(p)
        except OSError:
            continue
        if os.path.isfile(p):
            out.append([p, st.st_size, st.st_mtime_ns])
    return out


def _memo_path() -> Path:
    from fedbench.data.locate import cache_root

    return cache_root() / FINGERPRINTS


def _memo_place() -> str:

    return json.dumps([os.getcwd(), os.environ.get("FEDBENCH_DATA"), version.__version__])


def _plain(v):
    return json.loads(json.dumps(v, default=str))


def _read_memo() -> dict:
    try:
        memo = json.loads(_memo_path().read_text())
        return memo if isinstance(memo, dict) else {}
    except (OSError, ValueError):
        return {}


def _remember(cfg: RunConfig, names: set[str], files: list[list], fp: str) -> None:

    memo = _read_memo()
    fields_read = {n: _plain(getattr(cfg, n)) for n in sorted(names)}
    entries = [e for e in memo.get(_memo_place(), []) if e.get("fields") != fields_read]
    entries.append({"fields": fields_read, "files": files, "fingerprint": fp})
    memo[_memo_place()] = entries[-500:]
    try:
        atomic_write_json(_memo_path(), memo)
    except OSError:  # a read-only cache: fingerprints are computed again next time
        pass


def _unchanged(files: list) -> bool:
    try:
        return all(
            (st := os.stat(p)).st_size == size and st.st_mtime_ns == mtime
            for p, size, mtime in files
        )
    except (OSError, TypeError, ValueError):
        return False


def load_fingerprinted(cfg: RunConfig):
    """load_arrays(cfg) and the fingerprint of its train and test arrays (remembered)."""
    spy = _FieldReads(cfg)
    with _files_read() as opened:
        arrays = load_arrays(spy)  # type: ignore[arg-type]
    fp = arrays_fingerprint(*arrays[:4])
    _remember(cfg, spy.names, _data_files(opened), fp)
    return arrays, fp


def data_fingerprint(cfg: RunConfig, compute: bool = True) -> str | None:
    """The fingerprint of the data cfg would load: remembered if its files are unchanged, else
    (compute=True) computed by loading the arrays; None when not remembered and not computed."""
    for e in _read_memo().get(_memo_place(), []):
        try:
            same = all(_plain(getattr(cfg, n)) == v for n, v in e["fields"].items())
        except (AttributeError, KeyError, TypeError):
            continue
        if same and _unchanged(e.get("files", [])):
            return e.get("fingerprint")
    if not compute:
        return None
    return load_fingerprinted(cfg)[1]


# every loader module registers its datasets on import; the image pipeline registers nothing
# and needs torch, which reading arrays (tables computed from the data) does not
for _mod in pkgutil.iter_modules(__path__):
    if _mod.name != "transforms":
        importlib.import_module(f"{__name__}.{_mod.name}")

__all__ = ["DATASETS", "Arrays", "DatasetSpec", "FederatedData", "register_dataset"]
