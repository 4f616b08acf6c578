"""What a run needs of this machine, checked before any work starts: the files of its dataset
(found, or downloaded once) and its memory (an estimate from the config against the memory of
the device it would run on). Both refuse with one line that says what to do.

The memory estimate counts what a run certainly allocates, from sizes the config and the
dataset's loader know before reading a file (fedbench.data.registry.DataShape):
- the data on the device: every training and test input, its label and its device index;
- the [K, D] rows: the K sampled devices' models and their gradients (D parameters each);
- the round's mini-batch plan: indices and weights [K, S, B] for S local steps of B samples;
- one step's batch of inputs [K, B, input], in the run's float type.
A method's own state, the model's hidden activations and the allocator's slack come on top, so
a config refused here could never have run; one that passes may still not fit.
"""

from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass
from pathlib import Path

from fedbench.config import ALIASES, RunConfig
from fedbench.data.registry import DATASETS, DataShape, float_bytes
from fedbench.devices import resolve_device
from fedbench.errors import FedbenchError

_SHORT = {field: alias for alias, field in ALIASES.items()}  # num_clients -> N


def knob(field: str) -> str:
    """A config field as the user may type it: clients_per_round (K)."""
    return f"{field} ({_SHORT[field]})" if field in _SHORT else field


# ---------------------------------------------------------------- the dataset's files


def missing_data(configs: list[RunConfig], download: bool) -> tuple[list[str], list[str]]:
    """(errors, notes) about the datasets the configs read, each (dataset, data_dir) looked up
    once: an error is a one-line reason the data is not here and will not be; with download,
    a dataset that can be downloaded (FEDBENCH_NO_DOWNLOAD unset) is downloaded now, once;
    without, it is a note that the sweep will download it first."""
    from fedbench.data.locate import cache_root, may_download

    errors: list[str] = []
    notes: list[str] = []
    seen: set[tuple[str, str | None]] = set()
    for cfg in configs:
        if (cfg.dataset, cfg.data_dir) in seen:
            continue
        seen.add((cfg.dataset, cfg.data_dir))
        spec = DATASETS.lookup(cfg.dataset)
        missing = _not_found(spec, cfg)
        if missing is None:
            continue
        if spec.fetch is None or not may_download():
            why = "downloads are off (FEDBENCH_NO_DOWNLOAD)" if spec.fetch else "not downloadable"
            errors.append(f"{missing} [{why}]")
        elif not download:
            notes.append(f"{missing} [the sweep downloads it into {cache_root()} first]")
        else:
            failed = _fetch(spec, cfg)
            if failed:
                errors.append(f"{missing} [downloading it failed: {failed}]")
    return errors, notes


def _not_found(spec, cfg: RunConfig) -> str | None:
    if spec.locate is None:  # generated data: nothing to find
        return None
    try:
        spec.locate(cfg)
    except FedbenchError as e:
        return str(e)
    return None


def _fetch(spec, cfg: RunConfig) -> str | None:
    """Download the dataset; the first part of the reason it failed, or None."""
    try:
        spec.fetch(cfg)
    except FedbenchError as e:
        return str(e).split("; ")[0]
    return _not_found(spec, cfg)


# ---------------------------------------------------------------- memory


@dataclass(frozen=True)
class Part:
    what: str
    nbytes: float
    lower: str  # the fields that shrink it


def data_shape(cfg: RunConfig) -> DataShape | None:
    """The dataset's sizes before loading it; None when its loader does not say."""
    spec = DATASETS.lookup(cfg.dataset)
    return spec.shape(cfg) if spec.shape is not None else None


def model_input_shape(cfg: RunConfig, shape: DataShape) -> tuple[int, ...]:
    """One model input's shape: the stored input after the image pipeline's resize."""
    if cfg.resize and len(shape.input_shape) == 3:
        return (shape.input_shape[0], cfg.resize, cfg.resize)
    return shape.input_shape


_DIMS: dict[tuple, int] = {}


def model_dim(cfg: RunConfig, shape: DataShape) -> int:
    """D, the parameters of cfg's model on this data (the layout only: nothing of size D is
    allocated). The builders read the model's name, the data's sizes and hidden, norm, init."""
    key = (cfg.model, cfg.hidden, cfg.norm, cfg.init, model_input_shape(cfg, shape))
    key += (shape.num_classes, tuple(sorted(shape.info.items())))
    if key not in _DIMS:
        from fedbench.models import build_model

        model = build_model(cfg, key[4], shape.num_classes, dict(shape.info))
        _DIMS[key] = model.dim
    return _DIMS[key]


def local_steps(cfg: RunConfig, shape: DataShape | None) -> int:
    """Steps of the round's longest local work, at least: local_steps, or E epochs of a device
    of mean size (at least one batch an epoch)."""
    if cfg.local_steps is not None:
        return cfg.local_steps
    n_train = shape.train if shape is not None else 0
    per_device = n_train / cfg.num_clients
    return cfg.local_epochs * max(1, math.ceil(per_device / cfg.batch_size))


def memory_parts(cfg: RunConfig) -> list[Part]:
    """What a run of cfg certainly allocates (see the module's docstring)."""
    shape = data_shape(cfg)
    fb, k, b = float_bytes(cfg), cfg.clients_per_round, cfg.batch_size
    s = local_steps(cfg, shape)
    parts = [
        Part(
            f"the mini-batch plan (K {k} x {s:,} steps x B {b:,})",
            k * s * b * (8 + fb),
            f"{knob('batch_size')}, {knob('local_steps')} or {knob('local_epochs')}",
        )
    ]
    if shape is None:
        return parts
    n = shape.train + shape.test
    grows_with_n = data_shape(dataclasses.replace(cfg, num_clients=2 * cfg.num_clients))
    parts.append(
        Part(
            f"{cfg.dataset}'s {n:,} samples",
            n * (math.prod(shape.input_shape) * shape.itemsize + 8) + shape.train * 8,
            knob("num_clients") if grows_with_n != shape else "the dataset",
        )
    )
    d = model_dim(cfg, shape)
    parts.append(
        Part(
            f"the [K, D] rows (K {k} x D {d:,}, models and gradients)",
            2 * k * d * fb,
            f"{knob('clients_per_round')} or the model ({cfg.model}"
            + (f", {knob('hidden')})" if cfg.model == "mlp" else ")"),
        )
    )
    per_input = math.prod(model_input_shape(cfg, shape))
    parts.append(
        Part(
            f"a step's inputs (K {k} x B {b:,} x {per_input:,} values)",
            k * b * per_input * fb,
            f"{knob('batch_size')} or {knob('clients_per_round')}"
            + (" or resize" if cfg.resize else ""),
        )
    )
    return parts


def device_memory(cfg: RunConfig) -> tuple[float, str] | None:
    """(bytes free, what they are) on the device a run of cfg uses; None when unknown."""
    if cfg.device != "cpu":
        dev = resolve_device(cfg.device)
        if dev.type == "cuda":
            import torch

            free, _ = torch.cuda.mem_get_info(dev)
            return float(free), f"free on {torch.cuda.get_device_name(dev)}"
    free = available_ram()
    return (free, "available RAM") if free is not None else None


def available_ram() -> float | None:
    """Bytes of RAM this process may still take: MemAvailable, under a cgroup's limit."""
    free = None
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    free = float(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    if free is None:
        try:
            free = float(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
        except (ValueError, OSError, AttributeError):
            return None
    cgroup = Path("/sys/fs/cgroup")
    try:
        limit = (cgroup / "memory.max").read_text().strip()
        if limit != "max":
            used = float((cgroup / "memory.current").read_text())
            free = min(free, float(limit) - used)
    except (OSError, ValueError):
        pass
    return free


def fmt_bytes(n: float) -> str:
    for unit, size in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n / 1e3:.3g} kB"


def check_memory(cfg: RunConfig, name: str = "the run") -> None:
    """Refuse a config whose estimate exceeds the device's free memory, naming the estimate,
    its largest part and what to lower."""
    parts = memory_parts(cfg)
    total = sum(p.nbytes for p in parts)
    have = device_memory(cfg)
    if have is None or total <= have[0]:
        return
    big = max(parts, key=lambda p: p.nbytes)
    raise FedbenchError(
        f"{name} needs an estimated {fmt_bytes(total)} of memory, most of it {big.what}: "
        f"{fmt_bytes(big.nbytes)}; this machine has {fmt_bytes(have[0])} {have[1]}; "
        f"lower {big.lower}"
    )
