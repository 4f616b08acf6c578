"""Declaring parameters: a method's, a server optimizer's or a dataset's Params dataclass (each
field with its default, what it means and the range it must lie in), built from a dict of names
and checked in one place. A leaf: methods, server optimizers and datasets all use it."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field, fields
from typing import Any

from fedbench.errors import FedbenchError

# the ranges a parameter may declare (param(must_be=...)): what the error says -> the test
RANGES = {
    "> 0": lambda v: v > 0,
    ">= 0": lambda v: v >= 0,
    "in [0, 1]": lambda v: 0 <= v <= 1,
    "in [0, 1)": lambda v: 0 <= v < 1,
    "an integer >= 1": lambda v: v >= 1,
}


def param(default: Any, help: str, must_be: str | None = None, why: str = "") -> Any:
    """A Params field: its default, what it means (`fedbench methods` shows it) and the range
    check_ranges holds it to (a key of RANGES; `why` is said with the error)."""
    if must_be is not None and must_be not in RANGES:
        raise FedbenchError(f"param must_be {must_be!r} is not one of {', '.join(RANGES)}")
    return field(default=default, metadata={"help": help, "must_be": must_be, "why": why})


def check_ranges(params: Any, method: str) -> None:
    """Rejects the first field outside its declared range (param's must_be), one line:
    `fedcm: alpha must be in [0, 1], got 2.0`. NaN lies in no range."""
    for f in fields(params):
        rule, value = f.metadata.get("must_be"), getattr(params, f.name)
        if rule and not RANGES[rule](value):
            why = f" ({f.metadata['why']})" if f.metadata.get("why") else ""
            raise FedbenchError(f"{method}: {f.name} must be {rule}{why}, got {value}")


def check_param_value(key: str, value: Any) -> None:
    """One parameter's value on its own: one finite number, true/false or text."""
    if isinstance(value, float) and not math.isfinite(value):
        raise FedbenchError(f"parameter {key} must be a finite number, got {value!r}")
    if not isinstance(value, (bool, int, float, str)):
        raise FedbenchError(
            f"parameter {key} expects one value (number, true/false or text), got {value!r}"
        )


def coerce_params(params_class: type, values: dict[str, Any], owner: str, label: str) -> Any:
    """A Params instance from a dict of names (types coerced and checked, then __post_init__):
    `owner` names whose parameters they are in the unknown-name error ("method fedprox"),
    `label` starts the other errors ("fedprox: ...")."""
    known = {f.name: f for f in dataclasses.fields(params_class)}
    unknown = sorted(set(values) - set(known))
    if unknown:
        allowed = ", ".join(known) or "none"
        raise FedbenchError(
            f"unknown parameter {unknown[0]!r} for {owner}; its parameters: {allowed}"
        )
    coerced = {}
    for k, v in values.items():
        default = known[k].default
        if isinstance(default, float) and isinstance(v, int) and not isinstance(v, bool):
            v = float(v)
        try:
            check_param_value(k, v)
        except FedbenchError as e:
            raise FedbenchError(f"{label}: {e}") from None
        if default is not dataclasses.MISSING and default is not None:
            # bool is an int to python, not to a parameter
            if not isinstance(v, type(default)) or isinstance(v, bool) != isinstance(default, bool):
                raise FedbenchError(
                    f"{label}: parameter {k} expects {type(default).__name__}, got {v!r}"
                )
        coerced[k] = v
    return params_class(**coerced)


@dataclass(frozen=True)
class NoParams:
    """The Params of a method, server optimizer or dataset without parameters (FedAvg, SFL)."""
