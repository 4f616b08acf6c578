"""Declaring a method's parameters (fedbench.methods.params): param's ranges, checked once by
the registry with the one-line message every method used to write by hand."""

import math
from dataclasses import dataclass, fields

import pytest

from fedbench.errors import FedbenchError
from fedbench.methods import METHODS, method_params
from fedbench.methods.base import Method
from fedbench.methods.params import RANGES, NoParams, check_ranges, param


@dataclass(frozen=True)
class _Toy:
    a: float = param(1.0, "a rate", "> 0", why="it divides")
    b: float = param(0.5, "a share", "in [0, 1)")
    k: int = param(1, "a count", "an integer >= 1")
    name: str = param("x", "no range")


@pytest.mark.parametrize(
    "values,message",
    [
        ({"a": 0.0}, "toy: a must be > 0 (it divides), got 0.0"),
        ({"a": math.nan}, "toy: a must be > 0 (it divides), got nan"),
        ({"b": 1.0}, "toy: b must be in [0, 1), got 1.0"),
        ({"b": -0.1}, "toy: b must be in [0, 1), got -0.1"),
        ({"k": 0}, "toy: k must be an integer >= 1, got 0"),
    ],
)
def test_a_value_outside_its_range_is_one_line(values, message):
    with pytest.raises(FedbenchError) as e:
        check_ranges(_Toy(**values), "toy")
    assert str(e.value) == message


def test_the_edges_of_each_range_are_in_it():
    check_ranges(_Toy(a=1e-300, b=0.0, k=1), "toy")
    assert RANGES["in [0, 1]"](1.0) and RANGES[">= 0"](0.0) and not RANGES["in [0, 1)"](1.0)


def test_param_keeps_default_and_help_and_refuses_an_unknown_range():
    (a, *_, name) = fields(_Toy)
    assert a.default == 1.0 and a.metadata["help"] == "a rate"
    assert name.metadata["must_be"] is None
    with pytest.raises(FedbenchError, match="param must_be 'positive' is not one of"):
        param(1.0, "x", "positive")


def test_the_registry_checks_ranges_when_it_builds_params():
    with pytest.raises(FedbenchError, match="^fedcm: alpha must be in \\[0, 1\\], got 1.5$"):
        method_params("fedcm", {"alpha": 1.5})
    with pytest.raises(FedbenchError, match="^feddyn: alpha must be > 0 \\(the server step"):
        method_params("feddyn", {"alpha": 0.0})


def test_a_method_without_parameters_has_no_params():
    assert Method.Params is NoParams and not fields(NoParams)
    assert METHODS["fedavg"].Params is NoParams and METHODS["sfl"].Params is NoParams
    assert method_params("fedavg", {}) == NoParams()
