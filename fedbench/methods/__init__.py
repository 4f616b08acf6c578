"""Federated methods. Each module in this package registers its classes with @register (see
fedbench.methods.registry for the two files a new method touches); importing the package imports
every module in it, so the registry is complete once `fedbench.methods` is imported."""

from __future__ import annotations

import importlib
import pkgutil

from fedbench.methods.base import (
    EXTRA_GRAD_FIELDS,
    EngineServices,
    LocalResult,
    Method,
    RecordField,
    RoundContext,
    Setup,
    State,
    weighted_mean,
)
from fedbench.methods.registry import (
    METHODS,
    build_method,
    describe_methods,
    method_class,
    method_params,
    register,
)
from fedbench.param_fields import check_param_value

for _mod in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_mod.name}")

__all__ = [
    "EXTRA_GRAD_FIELDS",
    "METHODS",
    "EngineServices",
    "LocalResult",
    "Method",
    "RecordField",
    "RoundContext",
    "Setup",
    "State",
    "build_method",
    "describe_methods",
    "check_param_value",
    "method_class",
    "method_params",
    "register",
    "weighted_mean",
]
