"""Rows a user adds to a paper table: a method of theirs (a plugin's, or a built-in one the
paper did not run) beside the paper's rows, run at the settings of the table's baseline row.

`fedbench sweep --table tau --dataset fmnist --add-method mine` trains only the added rows;
`fedbench table tau --dataset fmnist --add-method mine` shows them, marked "(added)", beside
the paper's rows, which keep their runs (shipped or local) and the paper's numbers. An added
row has no paper value and no claim names it, so the claims' verdicts are those of the paper's
rows alone.

The baseline row is the table's FedAvg row (runs of plain FedAvg), else its first row of runs:
each of its cells is copied with the method replaced (the baseline method's parameters dropped,
the added method's own set), so the new method runs in every column the baseline runs in.
Derived cells of that row (a ratio to FedLGA's rounds, a difference of accuracies) are copied
too, reading the added row where they read the baseline's.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from fedbench.config import ALIASES, FIELD_TYPES
from fedbench.errors import FedbenchError
from fedbench.tables.spec import Cell, Derived, TableSpec

ADDED = "(added)"


@dataclass(frozen=True)
class Addition:
    """One --add-method: a method and the parameters its rows run with."""

    method: str
    params: tuple[tuple[str, Any], ...] = ()

    @property
    def text(self) -> str:
        """As given on the command line: NAME or NAME:KEY=VALUE,KEY=VALUE."""
        params = ",".join(f"{k}={v}" for k, v in self.params)
        return self.method + (f":{params}" if params else "")

    @property
    def label(self) -> str:
        """The row's label: the method, its parameters, and the mark."""
        params = " ".join(f"{k}={v}" for k, v in self.params)
        return " ".join(x for x in (self.method, params, ADDED) if x)


def parse_addition(text: str) -> Addition:
    """'NAME' or 'NAME:KEY=VALUE,...' -> Addition, the method and its parameters checked."""
    from fedbench.config_input import parse_param_text  # `fedbench --help` loads no config_input
    from fedbench.methods import method_class, method_params

    name, _, rest = str(text).partition(":")
    name = name.strip()
    if not name:
        raise FedbenchError(f"--add-method expects METHOD[:KEY=VALUE,...], got {text!r}")
    method_class(name)
    params: dict[str, Any] = {}
    for item in (x for x in rest.split(",") if x.strip()):
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise FedbenchError(f"--add-method {text}: expected KEY=VALUE, got {item!r}")
        params[key.strip()] = parse_param_text(value)
    method_params(name, params)  # one line for an unknown parameter or a bad value
    return Addition(name, tuple(params.items()))


def _cell_method(cell: Cell) -> tuple[str, dict[str, Any]]:
    """The method a runs cell trains and the method parameters it sets."""
    from fedbench.config_input import canonical_key  # `fedbench --help` loads no config_input
    from fedbench.presets import PRESETS

    over = dict(cell.overrides)
    preset = PRESETS.get(cell.preset or "", ("", {}))[1]
    method = over.get("method") or preset.get("method", "fedavg")
    params = dict(preset.get("method_params", {})) if "method" not in over else {}
    params.update(over.get("method_params") or {})
    for k, v in over.items():
        if k not in ("method", "method_params") and ALIASES.get(k, k) not in FIELD_TYPES:
            params[canonical_key(k)] = v
    return method, params


def baseline_row(cells: list[Cell]) -> str | None:
    """The row added methods copy: plain FedAvg's, else the first row with runs."""
    rows: dict[str, list[Cell]] = {}
    for c in cells:
        if c.kind == "runs":
            rows.setdefault(c.row, []).append(c)
    for row, members in rows.items():
        if all(_cell_method(c) == ("fedavg", {}) for c in members):
            return row
    return next(iter(rows), None)


def _added_cell(cell: Cell, base: str, add: Addition) -> Cell | None:

    if cell.kind == "derived":
        sources = tuple((add.label if r == base else r, col) for r, col in cell.derived.sources)
        derived = Derived(sources, cell.derived.fn)
        return dataclasses.replace(cell, row=add.label, derived=derived, paper=None)
    if cell.kind != "runs":
        return None
    kept = [
        (k, v)
        for k, v in cell.overrides
        if k not in ("method", "method_params") and ALIASES.get(k, k) in FIELD_TYPES
    ]
    over = (("method", add.method), *kept, *add.params)
    return dataclasses.replace(cell, row=add.label, overrides=over, paper=None)


def add_rows(spec: TableSpec, additions: list[Addition]) -> TableSpec:
    """The spec with each addition's rows after the paper's, per dataset."""
    if not additions:
        return spec
    labels = [a.label for a in additions]
    if len(set(labels)) < len(labels):
        raise FedbenchError("--add-method names one method and parameters twice; give it once")

    def build(ds: str) -> list[Cell]:
        cells = spec.build(ds)
        base = baseline_row(cells)
        if base is None:
            raise FedbenchError(f"table {spec.name} has no rows of runs to add a method beside")
        taken = {c.row for c in cells}
        out = list(cells)
        for add in additions:
            if add.label in taken:
                raise FedbenchError(f"table {spec.name} already has a row {add.label!r}")
            found = (_added_cell(c, base, add) for c in cells if c.row == base)
            out += [c for c in found if c is not None]
        return out

    note = (
        f"rows marked {ADDED} are not the paper's (--add-method "
        f"{', '.join(a.text for a in additions)}): run at the settings of the baseline row (the "
        "FedAvg row where there is one), with no paper value; the claims read the paper's rows "
        "only"
    )
    return dataclasses.replace(spec, build=build, notes=(*spec.notes, note))


def added_rows(spec: TableSpec, dataset: str | None = None) -> set[str]:
    """The labels of the rows an addition made (marked ADDED)."""
    return {c.row for c in spec.cells(dataset) if c.row.endswith(ADDED)}
