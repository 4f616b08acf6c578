"""The papers fedbench reproduces, one module each: its presets and its table specs, registered
next to each other (fedbench.presets.register_preset, fedbench.tables.spec.table/register).
Importing the package imports every module in it: the entry points (the command line,
fedbench.api) import it to fill the two catalogs; the registries below never do."""

from __future__ import annotations

import importlib
import pkgutil

# The order `fedbench table`, `plot` and `presets` list the papers in (the order they were
# taken up); a new module needs no entry here: it is found by pkgutil and listed after these.
LISTED_FIRST = (
    "fedlga_paper",
    "fedlga_sensitivity",
    "fedlga_readings",
    "sfl_paper",
    "sfl_fmnist",
    "fedsoftmax_paper",
    "fedprox_paper",
)


def _listing_key(name: str) -> tuple[int, str]:
    return (LISTED_FIRST.index(name) if name in LISTED_FIRST else len(LISTED_FIRST), name)


for _name in sorted((m.name for m in pkgutil.iter_modules(__path__)), key=_listing_key):
    importlib.import_module(f"{__name__}.{_name}")
