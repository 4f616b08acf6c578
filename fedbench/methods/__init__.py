"""Method registry. Add a method: one module with a Method subclass, one line here."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from fedbench.errors import FedbenchError
from fedbench.methods.base import LocalResult, Method, RoundContext, Setup, weighted_mean
from fedbench.methods.fedavg import FedAvg
from fedbench.methods.fedcm import FedCM
from fedbench.methods.feddyn import FedDyn
from fedbench.methods.fedlga import FedLGA
from fedbench.methods.fednova import FedNova
from fedbench.methods.fedprox import FedProx
from fedbench.methods.fedsam import FedSAM
from fedbench.methods.fedsoftmax import FedMax, FedSoftMax
from fedbench.methods.mimelite import MimeLite
from fedbench.methods.scaffold import Scaffold
from fedbench.methods.sfl import PFL, SFL

# order: the papers' main methods, then the FedLGA baselines, then the other papers' methods
METHODS: dict[str, type[Method]] = {
    m.name: m
    for m in (
        FedAvg,
        FedProx,
        FedLGA,
        FedNova,
        Scaffold,
        FedDyn,
        FedCM,
        MimeLite,
        FedSAM,
        FedMax,
        FedSoftMax,
        SFL,
        PFL,
    )
}


def method_class(name: str) -> type[Method]:
    if name not in METHODS:
        raise FedbenchError(f"unknown method {name!r}; choose one of: {', '.join(METHODS)}")
    return METHODS[name]


def check_param_value(key: str, value: Any) -> None:
    """One method parameter's value on its own: one finite number, true/false or text."""
    if isinstance(value, float) and not math.isfinite(value):
        raise FedbenchError(f"parameter {key} must be a finite number, got {value!r}")
    if not isinstance(value, (bool, int, float, str)):
        raise FedbenchError(
            f"parameter {key} expects one value (number, true/false or text), got {value!r}"
        )


def method_params(name: str, values: dict[str, Any]) -> Any:
    """Build (and so validate) a method's Params from a dict of names from the papers: every
    value one finite scalar of its default's type, then the Params' own checks."""
    cls = method_class(name)
    known = {f.name: f for f in dataclasses.fields(cls.Params)}
    unknown = sorted(set(values) - set(known))
    if unknown:
        allowed = ", ".join(known) or "none"
        raise FedbenchError(
            f"unknown parameter {unknown[0]!r} for method {name}; its parameters: {allowed}"
        )
    coerced = {}
    for k, v in values.items():
        default = known[k].default
        if isinstance(default, float) and isinstance(v, int) and not isinstance(v, bool):
            v = float(v)
        try:
            check_param_value(k, v)
        except FedbenchError as e:
            raise FedbenchError(f"{name}: {e}") from None
        if default is not dataclasses.MISSING and default is not None:
            # bool is an int to python, not to a parameter
            if not isinstance(v, type(default)) or isinstance(v, bool) != isinstance(default, bool):
                raise FedbenchError(
                    f"{name}: parameter {k} expects {type(default).__name__}, got {v!r}"
                )
        coerced[k] = v
    return cls.Params(**coerced)


def describe_methods() -> list[dict[str, str]]:
    """One row per method: name, parameters with defaults, what each means (from the Params
    dataclass fields' metadata "help") and the first line of the class's docstring, else of the
    module's."""
    import sys

    rows = []
    for name, cls in METHODS.items():
        params = []
        for f in dataclasses.fields(cls.Params):
            text = f"{f.name}={f.default}"
            if f.metadata.get("help"):
                text += f" ({f.metadata['help']})"
            params.append(text)
        # a class docstring names one of several methods sharing a module
        doc = (cls.__doc__ or sys.modules[cls.__module__].__doc__ or "").strip().splitlines()
        rows.append(
            {"method": name, "parameters": "; ".join(params) or "–", "about": doc[0] if doc else ""}
        )
    return rows


def build_method(name: str, values: dict[str, Any]) -> Method:
    return method_class(name)(method_params(name, values))


__all__ = [
    "METHODS",
    "LocalResult",
    "Method",
    "RoundContext",
    "Setup",
    "build_method",
    "check_param_value",
    "method_class",
    "method_params",
    "weighted_mean",
]
