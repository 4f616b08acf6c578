"""MNIST and Fashion-MNIST from the standard IDX files (gzipped or not), without torchvision.

Where we look, in order: --data-dir, $FEDBENCH_DATA, the Debian package's folder (FMNIST),
../shared/data, ./data and the cache in torchvision's layout (MNIST/raw); then a download into
the cache (download.py) unless FEDBENCH_NO_DOWNLOAD is set.
"""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import numpy as np

from fedbench.data.download import auto_fetch
from fedbench.data.locate import cache_root, not_found
from fedbench.data.registry import Arrays, DataShape, float_bytes, register_dataset
from fedbench.errors import FedbenchError
from fedbench.lazy import torch

FILES = {
    "train_x": "train-images-idx3-ubyte",
    "train_y": "train-labels-idx1-ubyte",
    "test_x": "t10k-images-idx3-ubyte",
    "test_y": "t10k-labels-idx1-ubyte",
}
# torchvision folder names and the Debian package's folder
FOLDERS = {"mnist": "MNIST", "fmnist": "FashionMNIST"}
SYSTEM_DIRS = {"fmnist": ["/usr/share/datasets/fashion-mnist"], "mnist": []}
_LAYOUT = "its 4 IDX files ({train,t10k}-{images-idx3,labels-idx1}-ubyte, gzipped or not)"
HOW_TO_GET = {
    "mnist": "run `fedbench data get mnist` (a mirror: --url URL or $FEDBENCH_MIRROR), "
    f"or put {_LAYOUT} in --data-dir or $FEDBENCH_DATA",
    "fmnist": "run `fedbench data get fmnist` (a mirror: --url URL or $FEDBENCH_MIRROR; "
    f"or apt-get install dataset-fashion-mnist), or put {_LAYOUT} in --data-dir or "
    "$FEDBENCH_DATA",
}
# per-pixel mean and std of the training images, scaled to [0, 1]
NORMALIZE = {"mnist": (0.1307, 0.3081), "fmnist": (0.2860, 0.3530)}


def candidate_dirs(name: str, data_dir: str | None) -> list[Path]:
    roots = []
    if data_dir:
        roots.append(Path(data_dir))
    if os.environ.get("FEDBENCH_DATA"):
        roots.append(Path(os.environ["FEDBENCH_DATA"]))
    dirs: list[Path] = []
    for root in roots:
        dirs += [root, root / FOLDERS[name] / "raw", root / name]
    dirs += [Path(d) for d in SYSTEM_DIRS[name]]
    for root in (Path.cwd() / ".." / "shared" / "data", Path.cwd() / "data", cache_root()):
        dirs.append(root / FOLDERS[name] / "raw")
    return dirs


def _find(folder: Path, stem: str) -> Path | None:
    for fname in (stem, stem + ".gz"):
        if (folder / fname).is_file():
            return folder / fname
    return None


def locate(name: str, data_dir: str | None, download: bool = True) -> Path:
    """The folder holding the 4 IDX files; else a download into the cache (download=True and
    FEDBENCH_NO_DOWNLOAD unset); else one line naming where we looked."""
    dirs = candidate_dirs(name, data_dir)
    for d in dirs:
        if all(_find(d, stem) for stem in FILES.values()):
            return d
    if download and auto_fetch(name):
        return locate_no_download(name, dirs)
    raise not_found(name, dirs, HOW_TO_GET[name])


def locate_no_download(name: str, dirs: list[Path]) -> Path:
    for d in dirs:
        if all(_find(d, stem) for stem in FILES.values()):
            return d
    raise FedbenchError(f"{name} download finished but files are missing; {HOW_TO_GET[name]}")


def read_idx(path: Path) -> np.ndarray:
    """Parse one IDX file; a wrong or truncated file raises a one-line FedbenchError."""
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rb") as f:
            raw = f.read()
    except (OSError, EOFError) as e:
        raise FedbenchError(f"{path}: cannot read IDX file ({e}); re-download it") from None
    if len(raw) < 8 or raw[0] != 0 or raw[1] != 0 or raw[2] != 0x08:
        raise FedbenchError(f"{path}: not an IDX file of unsigned bytes (bad magic number)")
    ndim = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim)]
    offset = 4 + 4 * ndim
    expected = int(np.prod(dims))
    if len(raw) - offset != expected:
        raise FedbenchError(
            f"{path}: truncated or malformed IDX file (header says {dims}, "
            f"{expected} bytes expected, {len(raw) - offset} found); re-download it"
        )
    return np.frombuffer(raw, dtype=np.uint8, offset=offset).reshape(dims)


def load_idx_dataset(name: str, data_dir: str | None):
    """(train_x uint8 [n,28,28], train_y, test_x, test_y) as numpy arrays."""
    folder = locate(name, data_dir)
    arrays = {k: read_idx(_find(folder, stem)) for k, stem in FILES.items()}
    for split in ("train", "test"):
        x, y = arrays[f"{split}_x"], arrays[f"{split}_y"]
        if x.ndim != 3 or x.shape[1:] != (28, 28) or y.ndim != 1 or len(x) != len(y):
            raise FedbenchError(
                f"{folder}: {split} images {x.shape} and labels {y.shape} do not match; "
                "expected [n,28,28] images and n labels"
            )
    return arrays["train_x"], arrays["train_y"], arrays["test_x"], arrays["test_y"]


def images_to_tensor(x: np.ndarray, name: str, dtype: torch.dtype, normalize: str) -> torch.Tensor:
    if normalize == "none":  # raw 0-255 values (FedSoftMax's code)
        return torch.from_numpy(x.astype(np.float32)).unsqueeze(1).to(dtype)
    mean, std = NORMALIZE[name]
    t = torch.from_numpy(x.astype(np.float32) / 255.0)
    return ((t - mean) / std).unsqueeze(1).to(dtype)  # [n, 1, 28, 28]


def shape(cfg) -> DataShape:
    return DataShape(60000, 10000, (1, 28, 28), float_bytes(cfg), 10)


def find(cfg) -> Path:
    return locate(cfg.dataset, cfg.data_dir, download=False)


def fetch(cfg) -> bool:
    return auto_fetch(cfg.dataset)


@register_dataset("mnist", "fmnist", natural=False, shape=shape, locate=find, fetch=fetch)
def load(cfg) -> Arrays:
    name, dtype = cfg.dataset, getattr(torch, cfg.dtype)
    trx, train_y, tex, test_y = load_idx_dataset(name, cfg.data_dir)
    return Arrays(
        images_to_tensor(trx, name, dtype, cfg.normalize),
        train_y.astype(np.int64),
        images_to_tensor(tex, name, dtype, cfg.normalize),
        test_y.astype(np.int64),
        num_classes=10,
        describe=name,
        describe_tail=", raw 0-255 pixels" if cfg.normalize == "none" else "",
    )
