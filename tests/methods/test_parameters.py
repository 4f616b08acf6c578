"""Methods' parameters: help for each, and one-line errors for bad values and combinations."""

import pytest
from conftest import tiny_config

from fedbench.assembly import validate_config
from fedbench.errors import FedbenchError
from fedbench.methods import METHODS, method_params


def test_bad_method_params():
    with pytest.raises(FedbenchError, match="mu must be >= 0"):
        method_params("fedprox", {"mu": -1.0})
    with pytest.raises(FedbenchError, match="unknown parameter 'alpha' for method fedprox"):
        method_params("fedprox", {"alpha": 0.1})
    with pytest.raises(FedbenchError, match="unknown method"):
        method_params("nosuch", {})


NEW = ["fednova", "scaffold", "feddyn", "fedcm", "mimelite"]


@pytest.mark.parametrize("method", NEW)
def test_registered_with_help(method):
    import dataclasses

    cls = METHODS[method]
    assert cls.name == method
    for f in dataclasses.fields(cls.Params):
        assert f.metadata.get("help"), f"{method}.{f.name} has no help"


@pytest.mark.parametrize(
    "method,params,message",
    [
        ("fednova", {"mu": -0.1}, "fednova: mu must be >= 0"),
        ("fednova", {"tau_eff": "steps"}, "fednova: tau_eff must be one of: paper, code"),
        ("fednova", {"gmf": 1.0}, "fednova: gmf must be in"),
        ("scaffold", {"eta_g": 0.0}, "scaffold: eta_g must be > 0"),
        ("feddyn", {"alpha": -0.01}, "feddyn: alpha must be > 0"),
        ("feddyn", {"alpha": 0.0}, "feddyn: alpha must be > 0"),
        ("fedcm", {"alpha": 1.5}, r"fedcm: alpha must be in \[0, 1\]"),
        ("fedcm", {"alpha": -0.1}, r"fedcm: alpha must be in \[0, 1\]"),
        ("fedcm", {"eta_g": -1.0}, "fedcm: eta_g must be > 0"),
        ("mimelite", {"beta": 1.2}, r"mimelite: beta must be in \[0, 1\]"),
        ("mimelite", {"eta_s": 0}, "mimelite: eta_s must be > 0"),
        ("mimelite", {"damped": "yes"}, "mimelite: parameter damped expects bool"),
        ("scaffold", {"c": 5}, "unknown parameter 'c' for method scaffold"),
    ],
)
def test_bad_params_one_line(method, params, message):
    with pytest.raises(FedbenchError, match=message) as e:
        method_params(method, params)
    assert "\n" not in str(e.value)


def test_bad_params_are_one_line_errors():
    cases = [
        ("fedsam", {"r": -0.1}, "r must be >= 0"),
        ("fedsoftmax", {"T": 0.0}, "T must be > 0"),
        ("fedsoftmax", {"temperature": "cold"}, "temperature must be"),
        ("fedsoftmax", {"loss": "end"}, "loss must be one of"),
        ("fedmax", {"k": 0}, "k must be an integer >= 1"),
        ("fedmax", {"fstar": "one"}, "fstar must be one of"),
        ("fedlga", {"g": "C"}, "g must be one of text, eq6, path"),
        ("fedlga", {"eta_g": 0.0}, "eta_g must be > 0"),
        ("pfl", {"eta_g": -1.0}, "eta_g must be > 0"),
    ]
    for name, params, msg in cases:
        with pytest.raises(FedbenchError, match=msg) as e:
            method_params(name, params)
        assert "\n" not in str(e.value)
    with pytest.raises(FedbenchError, match=r"k = 5 exceeds the devices per round K = 3") as e:
        validate_config(tiny_config(method="fedmax", method_params={"k": 5}))
    assert "\n" not in str(e.value)
    with pytest.raises(FedbenchError, match="T must be > 0"):
        validate_config(tiny_config(method="fedsoftmax", method_params={"T": 0}))
    validate_config(tiny_config(method="fedmax", method_params={"k": 3}))  # k = K is fine
