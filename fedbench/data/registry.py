"""The dataset registry: each loader module registers its dataset name(s) with
``@register_dataset(name, ..., natural=..., pipeline=...)`` on a function cfg -> Arrays.

fedbench.data.load_arrays looks the name up, partitions the training data when the dataset has
no natural split, and adds the image input pipeline when the entry asks for one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fedbench.config import allow_name
from fedbench.names import Registry


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
class DatasetSpec:
    name: str
    load: Callable[[Any], Arrays]  # cfg -> Arrays
    natural: bool  # comes with its own per-device split (partition=natural)
    pipeline: bool = False  # uint8 images that go through the per-batch input pipeline


def _spec(name: str, load, natural: bool, pipeline: bool = False) -> DatasetSpec:
    return DatasetSpec(name, load, natural, pipeline)


def _allow(name: str, spec: DatasetSpec) -> None:
    allow_name("dataset", name, natural=spec.natural)  # a plugin's dataset validates too


DATASETS: Registry[DatasetSpec] = Registry("dataset", _spec, _allow)
register_dataset = DATASETS.register
