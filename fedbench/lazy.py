"""Modules imported on first use.

The method modules take torch from here, so `import fedbench.methods` registers every method and
its typed parameters without importing torch (4 s): hashing a config reads the parameters'
defaults, and indexing stored runs or listing methods must not pay for torch.
"""

from __future__ import annotations

import importlib
from typing import Any


class LazyModule:
    """Stands for a module; the first attribute read imports it."""

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        value = getattr(importlib.import_module(self._name), attr)
        setattr(self, attr, value)  # later reads are plain attribute reads
        return value

    def __repr__(self) -> str:
        return f"<lazy module {self._name}>"


torch: Any = LazyModule("torch")
