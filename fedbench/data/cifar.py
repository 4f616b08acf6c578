"""CIFAR-10 and CIFAR-100 from torchvision's on-disk layout (the python pickles):
cifar-10-batches-py/{data_batch_1..5, test_batch, batches.meta} and
cifar-100-python/{train, test, meta}; each batch a pickle with bytes keys b"data" (uint8
[n, 3072], channel-major 32x32), b"labels" or b"fine_labels"/b"coarse_labels", b"filenames".
"""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np

from fedbench.data.download import auto_fetch
from fedbench.data.locate import find_folder
from fedbench.data.registry import Arrays, DataShape, register_dataset
from fedbench.errors import FedbenchError

LAYOUT = {
    "cifar10": ("cifar-10-batches-py", [f"data_batch_{i}" for i in range(1, 6)], ["test_batch"]),
    "cifar100": ("cifar-100-python", ["train"], ["test"]),
}
HOW_TO_GET = (
    "expected {folder}/{{{files}}} (the python version from cs.toronto.edu/~kriz/cifar.html); "
    "run `fedbench data get {name}` (from a mirror: --url URL or $FEDBENCH_MIRROR), or put the "
    "{folder}/ folder in --data-dir or $FEDBENCH_DATA"
)


def read_batch(path: Path, label_key: bytes) -> tuple[np.ndarray, np.ndarray]:
    """(images uint8 [n, 3, 32, 32], labels int64 [n]) of one pickle; one-line errors."""
    try:
        with open(path, "rb") as f:
            d = pickle.load(f, encoding="bytes")
    except FileNotFoundError:
        raise FedbenchError(f"{path} is missing; expected a CIFAR python batch") from None
    except Exception as e:
        raise FedbenchError(
            f"{path}: not a CIFAR python pickle ({type(e).__name__}); re-download it"
        ) from None
    if not isinstance(d, dict) or b"data" not in d or label_key not in d:
        keys = sorted(d) if isinstance(d, dict) else type(d).__name__
        raise FedbenchError(f"{path}: expected keys b'data' and {label_key!r}, found {keys}")
    x = np.asarray(d[b"data"])
    y = np.asarray(d[label_key], dtype=np.int64)
    if x.dtype != np.uint8 or x.ndim != 2 or x.shape[1] != 3072 or len(x) != len(y):
        raise FedbenchError(
            f"{path}: data is {x.dtype} {x.shape} with {len(y)} labels; "
            "expected uint8 [n, 3072] and n labels"
        )
    return x.reshape(-1, 3, 32, 32), y


def cifar_folder(name: str, data_dir: str | None, download: bool = True) -> Path:
    """The folder holding the python batches; a download into the cache when none does (unless
    download=False or FEDBENCH_NO_DOWNLOAD)."""
    folder_name, train_files, test_files = LAYOUT[name]
    return find_folder(
        name,
        data_dir,
        [folder_name, f"{name}/{folder_name}", ""],
        lambda d: all((d / f).is_file() for f in train_files + test_files),
        HOW_TO_GET.format(name=name, folder=folder_name, files=",".join(train_files + test_files)),
        (lambda: auto_fetch(name)) if download else None,
    )


def load_cifar(name: str, data_dir: str | None, coarse: bool = False):
    """(train_x uint8 [n,3,32,32], train_y, test_x, test_y, num_classes) as numpy arrays."""
    _, train_files, test_files = LAYOUT[name]
    folder = cifar_folder(name, data_dir)
    if name == "cifar10":
        key, num_classes = b"labels", 10
    else:
        key, num_classes = (b"coarse_labels", 20) if coarse else (b"fine_labels", 100)
    parts = {}
    for split, files in (("train", train_files), ("test", test_files)):
        xs, ys = zip(*(read_batch(folder / f, key) for f in files))
        parts[split] = (np.concatenate(xs), np.concatenate(ys))
    for split, (_, y) in parts.items():
        if len(y) and (y.min() < 0 or y.max() >= num_classes):
            raise FedbenchError(f"{folder}: {split} labels outside 0..{num_classes - 1}")
    return (*parts["train"], *parts["test"], num_classes)


def shape(cfg) -> DataShape:
    classes = 10 if cfg.dataset == "cifar10" else (20 if cfg.coarse_labels else 100)
    return DataShape(50000, 10000, (3, 32, 32), 1, classes)  # uint8 on the device


def find(cfg) -> Path:
    return cifar_folder(cfg.dataset, cfg.data_dir, download=False)


def fetch(cfg) -> bool:
    return auto_fetch(cfg.dataset)


@register_dataset(
    "cifar10", "cifar100", natural=False, pipeline=True, shape=shape, locate=find, fetch=fetch
)
def load(cfg) -> Arrays:
    *arrays, num_classes = load_cifar(cfg.dataset, cfg.data_dir, cfg.coarse_labels)
    labels = " (coarse labels)" if cfg.coarse_labels else ""
    return Arrays(*arrays, num_classes=num_classes, describe=f"{cfg.dataset}{labels}")
