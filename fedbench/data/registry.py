"""The dataset registry: each loader module registers its dataset name(s) with
``@register_dataset(name, ..., natural=..., pipeline=...)`` on a function cfg -> Arrays;
optionally with ``shape=`` (cfg -> DataShape, its sizes before loading it: the memory estimate)
``locate=`` (cfg -> its folder) and ``fetch=`` (cfg -> downloaded into the cache): a sweep checks
that its data is here, or downloads it once, before planning.

fedbench.data.load_arrays looks the name up, partitions the training data when the dataset has
no natural split, and adds the image input pipeline when the entry asks for one.

A dataset's own settings are its ``params=`` dataclass (fields made with
fedbench.param_fields.param, as a method's Params): `--set NAME=...` (or data.NAME) stores them in
cfg.dataset_params and the loader reads them typed with ``dataset_params(cfg)``, so a new dataset
with settings is one file and its test, from outside the package too (examples/dataset_plugin/). The
built-in datasets' older settings (syn_alpha, quad_group, ...) stay config fields: stored runs keep
their ids.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fedbench.config import ALIASES, FIELD_TYPES, allow_name
from fedbench.errors import FedbenchError
from fedbench.names import Registry
from fedbench.param_fields import NoParams, check_ranges, coerce_params


@dataclass
class Arrays:
    """What a loader returns, before anything goes to the torch device (numpy arrays or CPU
    tensors). `describe` names the data; for datasets partitioned by fedbench the partition's
    description follows it, then `describe_tail`."""

    train_x: Any
    train_y: Any
    test_x: Any
    test_y: Any
    num_classes: int
    describe: str
    parts: list | None = None  # per-device index arrays: datasets with a natural split only
    info: dict = field(default_factory=dict)
    embeddings: Any = None  # frozen word vectors [V+1, d] (numpy), if any
    describe_tail: str = ""


@dataclass(frozen=True)
class DataShape:
    """A dataset's sizes as its loader knows them before reading a file (the memory estimate):
    samples (a lower bound where only the files know), one input's shape, the bytes of one
    stored input value on the device, classes, and what models read from the data's info."""

    train: int
    test: int
    input_shape: tuple[int, ...]
    itemsize: int
    num_classes: int
    info: dict = field(default_factory=dict)


def float_bytes(cfg) -> int:
    """Bytes of one value of the run's float dtype."""
    return 8 if cfg.dtype == "float64" else 4


@dataclass(frozen=True)
class DatasetSpec:
    name: str
    load: Callable[[Any], Arrays]  # cfg -> Arrays
    natural: bool  # comes with its own per-device split (partition=natural)
    pipeline: bool = False  # uint8 images that go through the per-batch input pipeline
    shape: Callable[[Any], DataShape] | None = None  # cfg -> sizes; None: not known
    # cfg -> the dataset's folder (never downloading), or a one-line FedbenchError naming the
    # folders searched, the layout expected and how to get it; None: nothing to find
    locate: Callable[[Any], Any] | None = None
    fetch: Callable[[Any], bool] | None = None  # cfg -> downloaded; None: not downloadable
    params: type = NoParams  # its own settings (cfg.dataset_params), a dataclass of param()s


def _spec(
    name: str,
    load,
    natural: bool,
    pipeline=False,
    shape=None,
    locate=None,
    fetch=None,
    params: type = NoParams,
) -> DatasetSpec:
    for f in dataclasses.fields(params):
        if f.name in FIELD_TYPES or f.name in ALIASES:
            raise FedbenchError(f"dataset {name}: parameter {f.name!r} is also a config field")
        if f.default is dataclasses.MISSING or not f.metadata.get("help"):
            raise FedbenchError(f"dataset {name}: parameter {f.name!r} needs a default and help")
    return DatasetSpec(name, load, natural, pipeline, shape, locate, fetch, params)


def _allow(name: str, spec: DatasetSpec) -> None:
    allow_name("dataset", name, natural=spec.natural)  # a plugin's dataset validates too


DATASETS: Registry[DatasetSpec] = Registry("dataset", _spec, _allow)
register_dataset = DATASETS.register


def dataset_params(cfg) -> Any:
    """The run's dataset settings, typed and checked: its Params from cfg.dataset_params."""
    spec = DATASETS.lookup(cfg.dataset)
    params = coerce_params(spec.params, cfg.dataset_params, f"dataset {cfg.dataset}", cfg.dataset)
    check_ranges(params, cfg.dataset)
    return params


def dataset_param_names() -> set[str]:
    """Every parameter name of a registered dataset (the bare names `--set` routes to one)."""
    return {f.name for spec in DATASETS.values() for f in dataclasses.fields(spec.params)}
