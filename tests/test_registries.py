"""The dataset and model registries: every name the config accepts is registered by the module
that implements it, and nothing else is (config.py's tuples stay in step until validation reads
the registries), plus the generic Registry's one-line errors."""

from __future__ import annotations

import pytest

from fedbench import config
from fedbench.data import DATASETS
from fedbench.errors import FedbenchError
from fedbench.models import MODELS
from fedbench.names import Registry


def test_dataset_registry_matches_the_config():
    assert set(DATASETS) == set(config.DATASETS)
    assert set(DATASETS.names(natural=True)) == set(config.NATURAL_DATASETS)


def test_model_registry_matches_the_config():
    assert set(MODELS) == set(config.MODELS)


def test_each_name_is_registered_where_it_is_implemented():
    for name, spec in DATASETS.items():
        assert spec.name == name and spec.load.__module__.startswith("fedbench.data."), name
    for name, build in MODELS.items():
        assert build.__module__.startswith("fedbench.models."), name
    assert {s.name for s in DATASETS.values() if s.pipeline} == {"cifar10", "cifar100", "cinic10"}


def test_registry_register_lookup_and_errors():
    reg: Registry = Registry("widget")

    @reg.register("a", "b")
    def make():
        return 1

    assert list(reg) == ["a", "b"] and reg.lookup("b") is make
    reg.register("a")(make)  # the same object again: allowed (a module imported twice)
    with pytest.raises(FedbenchError, match="widget name 'a' is already registered"):
        reg.register("a")(lambda: 2)
    with pytest.raises(FedbenchError, match=r"unknown widget 'c'; choose one of: a, b"):
        reg.lookup("c")
    with pytest.raises(FedbenchError, match="at least one name"):
        reg.register()
