"""CINIC-10 from its image-folder layout: CINIC-10/{train,valid,test}/<class>/*.png, 10 class
folders (sorted names give the labels, as torchvision's ImageFolder) of 32x32 PNGs. Decoded once
at load time into uint8 [n, 3, 32, 32] (grayscale PNGs are converted to RGB, as ImageFolder's
loader does). SFL uses train for the devices and test for evaluation (spec §5.2).

Decoding 90,000 PNGs takes a while, so a decoded split of at least CACHE_MIN images is kept in
the cache folder (~/.cache/fedbench/decoded), keyed by the folder and every file's name, size
and modification time: any change to the files decodes again."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np

from fedbench.data.download import auto_fetch
from fedbench.data.locate import cache_root, find_folder
from fedbench.data.registry import Arrays, DataShape, register_dataset
from fedbench.errors import FedbenchError

CLASSES = 10
CACHE_MIN = 1000  # images; smaller splits are decoded every time
HOW_TO_GET = (
    "expected CINIC-10/{train,test}/<10 class folders>/*.png (github.com/BayesWatch/cinic-10); "
    "run `fedbench data get cinic10` (from a mirror: --url URL or $FEDBENCH_MIRROR), or put "
    "CINIC-10/ in --data-dir or $FEDBENCH_DATA"
)


def _has_splits(d: Path) -> bool:
    """train/ and test/ folders, train/ with 10 class folders (not, say, LEAF's train/)."""
    if not ((d / "train").is_dir() and (d / "test").is_dir()):
        return False
    return sum(p.is_dir() for p in (d / "train").iterdir()) == CLASSES


def read_split(folder: Path) -> tuple[np.ndarray, np.ndarray]:
    from PIL import Image

    class_dirs = sorted(p for p in folder.iterdir() if p.is_dir())
    if len(class_dirs) != CLASSES:
        raise FedbenchError(
            f"{folder}: found {len(class_dirs)} class folders; expected {CLASSES} (CINIC-10 layout)"
        )
    files = [
        (label, f) for label, cdir in enumerate(class_dirs) for f in sorted(cdir.glob("*.png"))
    ]
    cache = _cache_path(folder, files) if len(files) >= CACHE_MIN else None
    if cache is not None and cache.is_file():
        try:
            with np.load(cache) as z:
                return z["x"], z["y"]
        except (OSError, ValueError, KeyError):
            pass  # a broken cache file is decoded again and rewritten
    images, labels = [], []
    for label, f in files:
        try:
            with Image.open(f) as im:
                arr = np.asarray(im.convert("RGB"))
        except Exception as e:
            raise FedbenchError(f"{f}: cannot decode PNG ({type(e).__name__})") from None
        if arr.shape != (32, 32, 3):
            raise FedbenchError(f"{f}: image is {arr.shape[1]}x{arr.shape[0]}; expected 32x32")
        images.append(arr)
        labels.append(label)
    if not images:
        raise FedbenchError(f"{folder}: no PNG images found; expected <class>/*.png")
    x = np.stack(images).transpose(0, 3, 1, 2).copy()
    y = np.array(labels, dtype=np.int64)
    if cache is not None:
        try:
            cache.parent.mkdir(parents=True, exist_ok=True)
            tmp = cache.with_suffix(f".{os.getpid()}.tmp.npz")
            np.savez(tmp, x=x, y=y)
            os.replace(tmp, cache)
        except OSError:
            pass  # no cache (read-only home): decode next time
    return x, y


def _cache_path(folder: Path, files: list[tuple[int, Path]]) -> Path:
    h = hashlib.sha256(str(folder.resolve()).encode())
    for label, f in files:
        st = f.stat()
        h.update(f"{label}/{f.name}/{st.st_size}/{st.st_mtime_ns}|".encode())
    return cache_root() / "decoded" / f"cinic10-{folder.name}-{h.hexdigest()[:16]}.npz"


def cinic_folder(data_dir: str | None, download: bool = True) -> Path:
    """The CINIC-10 folder; a download into the cache when none is found (unless download=False
    or FEDBENCH_NO_DOWNLOAD)."""
    return find_folder(
        "cinic10",
        data_dir,
        ["CINIC-10", "cinic-10", "cinic10", ""],
        _has_splits,
        HOW_TO_GET,
        (lambda: auto_fetch("cinic10")) if download else None,
    )


def load_cinic(data_dir: str | None):
    """(train_x uint8 [n,3,32,32], train_y, test_x, test_y, num_classes)."""
    folder = cinic_folder(data_dir)
    trx, tr_y = read_split(folder / "train")
    tex, te_y = read_split(folder / "test")
    return trx, tr_y, tex, te_y, CLASSES


def shape(cfg) -> DataShape:
    return DataShape(90000, 90000, (3, 32, 32), 1, CLASSES)  # uint8 on the device


def find(cfg) -> Path:
    return cinic_folder(cfg.data_dir, download=False)


def fetch(cfg) -> bool:
    return auto_fetch("cinic10")


@register_dataset("cinic10", natural=False, pipeline=True, shape=shape, locate=find, fetch=fetch)
def load(cfg) -> Arrays:
    *arrays, num_classes = load_cinic(cfg.data_dir)
    labels = " (coarse labels)" if cfg.coarse_labels else ""
    return Arrays(*arrays, num_classes=num_classes, describe=f"{cfg.dataset}{labels}")
