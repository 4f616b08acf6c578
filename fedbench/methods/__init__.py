"""Federated methods. Each module in this package registers its classes with @register (see
fedbench.methods.registry for the two files a new method touches); importing the package imports
every module in it, so the registry is complete once `fedbench.methods` is imported."""

from __future__ import annotations

import importlib
import pkgutil

from fedbench.methods.base import LocalResult, Method, RoundContext, Setup, State, weighted_mean
from fedbench.methods.registry import (
    METHODS,
    build_method,
    check_param_value,
    describe_methods,
    method_class,
    method_params,
    register,
)

# services (what methods may ask of the engine) registers nothing and needs torch at import:
# the engine imports it, so that importing the registry (and hashing a config) needs no torch
for _mod in pkgutil.iter_modules(__path__):
    if _mod.name != "services":
        importlib.import_module(f"{__name__}.{_mod.name}")

__all__ = [
    "METHODS",
    "LocalResult",
    "Method",
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
