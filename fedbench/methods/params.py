"""Declaring a method's parameters (its Params dataclass, fedbench.methods.base): each field
with its default, what it means and the range it must lie in, checked in one place."""

from __future__ import annotations

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


@dataclass(frozen=True)
class NoParams:
    """The Params of a method without parameters (FedAvg, SFL)."""
