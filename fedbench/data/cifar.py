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
from fedbench.data.registry import Arrays, register_dataset
from fedbench.errors import FedbenchError

LAYOUT = {
    "cifar10": ("cifar-10-batches-py", [f"data_batch_{i}" for i in range(1, 6)], ["test_batch"]),
    "cifar100": ("cifar-100-python", ["train"], ["test"]),
}
HOW_TO_GET = (
    "run `fedbench data get {name}`, or put the {folder}/ folder (the python version from "
    "cs.toronto.edu/~kriz/cifar.html) in --data-dir"
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


def load_cifar(name: str, data_dir: str | None, coarse: bool = False):
    """(train_x uint8 [n,3,32,32], train_y, test_x, test_y, num_classes) as numpy arrays."""
    folder_name, train_files, test_files = LAYOUT[name]
    folder = find_folder(
        name,
        data_dir,
        [folder_name, f"{name}/{folder_name}", ""],
        lambda d: all((d / f).is_file() for f in train_files + test_files),
        HOW_TO_GET.format(name=name, folder=folder_name),
        lambda: auto_fetch(name),
    )
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


@register_dataset("cifar10", "cifar100", natural=False, pipeline=True)
def load(cfg) -> Arrays:
    *arrays, num_classes = load_cifar(cfg.dataset, cfg.data_dir, cfg.coarse_labels)
    labels = " (coarse labels)" if cfg.coarse_labels else ""
    return Arrays(*arrays, num_classes=num_classes, describe=f"{cfg.dataset}{labels}")
