"""The method registry: each method module registers its classes with @register.

A new method is two files, a module here and its test, then `fedbench docs --write` for the
README's generated table: the recipe is ARCHITECTURE.md's "How to add a method". The
package imports every module in its folder, so registering needs no other edit, and the
registry-driven contract tests (tests/methods/test_contracts.py) check the method by themselves.

Registration checks the class (one-line FedbenchError at import): a unique name, a Params
dataclass whose fields all have a default and help, and no parameter named like a config field
or alias (``--set`` and sweep grids route those names to the config, never to a method).
"""

from __future__ import annotations

import dataclasses
import sys
from typing import Any

from fedbench.config import ALIASES, FIELD_TYPES
from fedbench.errors import FedbenchError
from fedbench.lazy import torch
from fedbench.methods.base import Method, RecordField, Setup, step_paths
from fedbench.methods.server_opt import STATE_NAMES
from fedbench.param_fields import check_ranges, coerce_params

# name -> class, in listing order (Method.listing_order, then name)
METHODS: dict[str, type[Method]] = {}


def register(cls: type[Method] | None = None, *, order: float | None = None):
    """Class decorator: check a Method subclass and add it to METHODS (``@register`` or
    ``@register(order=10)``; the order places it in listings, default after the built-in ones)."""

    def add(c: type[Method]) -> type[Method]:
        if order is not None:
            c.listing_order = order
        check_method_class(c, METHODS)
        METHODS[c.name] = c
        ordered = sorted(METHODS.items(), key=lambda kv: (kv[1].listing_order, kv[0]))
        METHODS.clear()
        METHODS.update(ordered)
        return c

    return add if cls is None else add(cls)


def check_method_class(cls: type[Method], registry: dict[str, type[Method]]) -> None:
    """The registration contract; raises a one-line FedbenchError naming what to fix."""
    where = f"method class {cls.__name__}"
    if not (isinstance(cls, type) and issubclass(cls, Method)) or not cls.name:
        raise FedbenchError(f"{where}: must subclass Method and set a name")
    if cls.name in registry and registry[cls.name] is not cls:
        raise FedbenchError(f"{where}: method name {cls.name!r} is already registered")
    if not dataclasses.is_dataclass(cls.Params):
        raise FedbenchError(f"{where}: Params must be a dataclass")
    params = {f.name: f for f in dataclasses.fields(cls.Params)}
    for name, f in params.items():
        if name in FIELD_TYPES or name in ALIASES:
            raise FedbenchError(
                f"{cls.name}: parameter {name!r} is also a config field or alias, so --set "
                f"{name}=... would never reach it; rename the parameter"
            )
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise FedbenchError(f"{cls.name}: parameter {name!r} needs a default")
        if not f.metadata.get("help"):
            raise FedbenchError(f"{cls.name}: parameter {name!r} needs metadata help")
    state_names = [s.name for s in cls.state]
    if len(set(state_names)) != len(state_names) or set(STATE_NAMES) & set(state_names):
        raise FedbenchError(
            f"{cls.name}: state names must be unique and not {' or '.join(STATE_NAMES)} "
            "(the server optimizer's)"
        )
    _check_record_fields(cls, registry)
    named = [cls.server_lr_param] if cls.server_lr_param else []
    named += list(cls.reduces_to_fedavg or {})
    for name in named:
        if name not in params:
            raise FedbenchError(f"{cls.name}: {name!r} is not one of its parameters")


def _check_record_fields(cls: type[Method], registry: dict[str, type[Method]]) -> None:
    """Unique RecordFields; a name another method records too has its type and unit (one
    column of rounds.parquet, fedbench.results.schema)."""
    fields = cls.record_fields
    names = [f.name for f in fields]
    if len(set(names)) != len(names) or not all(isinstance(f, RecordField) for f in fields):
        raise FedbenchError(f"{cls.name}: record_fields must be RecordFields with unique names")
    for other in registry.values():
        for f in other.record_fields:
            mine = next((m for m in cls.record_fields if m.name == f.name), None)
            if mine is not None and (mine.type, mine.unit) != (f.type, f.unit):
                raise FedbenchError(
                    f"{cls.name}: record field {f.name!r} is {mine.type} ({mine.unit or 'no unit'})"
                    f" but {other.name} records it as {f.type} ({f.unit or 'no unit'})"
                )


def method_class(name: str) -> type[Method]:
    if name not in METHODS:
        raise FedbenchError(f"unknown method {name!r}; choose one of: {', '.join(METHODS)}")
    return METHODS[name]


def method_params(name: str, values: dict[str, Any]) -> Any:
    """Build (and so validate: types, declared ranges, __post_init__) a method's Params from a
    dict of names from the papers."""
    cls = method_class(name)
    params = coerce_params(cls.Params, values, f"method {name}", name)
    check_ranges(params, name)
    return params


# what the stepwise path costs (local_step at every step): FedAvg's rounds forced stepwise over
# its fastest path, benchmarks/round_paths.py at 1 thread on a loaded 2-core machine: the default
# run (logreg, compiled) 2.74 vs 0.13 s/round at load ~15; FedLGA-FMNIST's MLP (window) 42.0 vs
# 17.9 s/round at load ~22
STEPWISE_COST = "2-20x slower"


def default_paths(cls: type[Method]) -> tuple[str, ...]:
    """The engine round paths (base.step_paths) the method's local step opens at its default
    parameters, read from linear_step() of an instance set up for one device and coordinate."""
    probe = cls(method_params(cls.name, {}))
    ones = torch.ones(1, dtype=torch.float64)
    probe.setup(Setup(1, 1, torch.device("cpu"), torch.float64, None, ones))
    return step_paths(probe.linear_step())


def path_text(paths: tuple[str, ...]) -> str:
    """How `fedbench methods` and the README say which paths a method's rounds may take."""
    if paths == ("stepwise",):
        return f"stepwise ({STEPWISE_COST}: local_step is not declared linear)"
    if "compiled" not in paths and "window" in paths:  # LinearStep.ascent or .decay
        return "window (MLPs with a hidden layer; other models stepwise)"
    return ", ".join(p for p in paths if p != "stepwise")


def describe_methods() -> list[dict[str, str]]:
    """One row per method: name, parameters with defaults, what each means (from the Params
    dataclass fields' metadata "help"), the engine round paths its local step may take at
    the defaults (fastest first; which one a run takes also depends on its model and config)
    and the first line of the class's docstring, else of the module's."""
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
            {
                "method": name,
                "parameters": "; ".join(params) or "–",
                "round paths": path_text(default_paths(cls)),
                "about": doc[0] if doc else "",
            }
        )
    return rows


def build_method(name: str, values: dict[str, Any]) -> Method:
    return method_class(name)(method_params(name, values))
