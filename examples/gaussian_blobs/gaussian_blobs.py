"""Gaussian blobs: an example fedbench dataset plugin with settings of its own (README.md here).

Each device draws its samples around its own shift of two class centres, so devices differ
(a natural split, partition=natural): class c in {0, 1} has centre (2c - 1) * separation on the
first coordinate, device i adds device_shift * i / N to every coordinate, and the noise is a
standard normal. The dataset's settings are its Params (`--set separation=3` or
`--set data.separation=3`), stored in the run's dataset_params and part of its identity, not
fields of the run config: the whole dataset is this one file.

Load it with `--plugin examples/gaussian_blobs/gaussian_blobs.py --set dataset=gaussian_blobs`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fedbench.data.registry import Arrays, DataShape, dataset_params, register_dataset
from fedbench.param_fields import param


@dataclass(frozen=True)
class BlobParams:
    separation: float = param(1.0, "distance of each class centre from 0 (first coordinate)", "> 0")
    device_shift: float = param(0.5, "how far device N-1's data is shifted from device 0's", ">= 0")
    samples_per_device: int = param(20, "training samples per device", "an integer >= 1")
    dims: int = param(5, "input dimensions", "an integer >= 1")


def _draw(rng, n: int, centre_shift: float, p: BlobParams):
    y = rng.integers(0, 2, size=n)
    x = rng.normal(size=(n, p.dims)) + centre_shift
    x[:, 0] += (2 * y - 1) * p.separation
    return x.astype("float32"), y.astype("int64")


def shape(cfg) -> DataShape:
    p = dataset_params(cfg)
    n = p.samples_per_device * cfg.num_clients
    return DataShape(n, n // 4 or 1, (p.dims,), 4, 2)


@register_dataset("gaussian_blobs", natural=True, params=BlobParams, shape=shape)
def load(cfg) -> Arrays:
    p = dataset_params(cfg)
    rng = np.random.default_rng(cfg.effective_data_seed)
    xs, ys, parts, start = [], [], [], 0
    for i in range(cfg.num_clients):
        x, y = _draw(rng, p.samples_per_device, p.device_shift * i / cfg.num_clients, p)
        xs.append(x)
        ys.append(y)
        parts.append(np.arange(start, start + len(y)))
        start += len(y)
    test_x, test_y = _draw(rng, max(1, start // 4), 0.0, p)
    describe = f"Gaussian blobs (separation {p.separation}, device shift {p.device_shift})"
    return Arrays(np.concatenate(xs), np.concatenate(ys), test_x, test_y, 2, describe, parts)
