"""The spec language of the papers' tables and figures, and their registry.

A TableSpec builds, for each dataset variant it covers, a list of Cells. A cell is one number
of the table:
- "runs": a RunConfig (a preset plus overrides) run over several seeds and reduced to mean and
  spread by a Metric; `fedbench sweep --table NAME` runs exactly the cells' configs;
- "derived": computed from other cells' means (FedLGA's improvement over a baseline);
- "const": a property of the problem known without training (SFL's zeta* and delta);
- "data": a statistic of the federated dataset alone (FedProx Table 1).

Each paper's module (fedbench/papers/) registers its specs here with @table or register(); a
cell whose config cannot be built (a method or preset this build lacks) is shown as unavailable
with the reason; it never stops the rest of the table.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fedbench.config import ALIASES, FIELD_TYPES
from fedbench.errors import FedbenchError
from fedbench.tables.claims import Claim
from fedbench.tables.paper_values import PaperRef, paper_values


@dataclass(frozen=True)
class Derived:
    """A cell computed from the means of other cells (row, col) of the same dataset."""

    sources: tuple[tuple[str, str], ...]
    fn: Callable[..., float | str | None]


@dataclass(frozen=True)
class Cell:
    dataset: str
    row: str
    col: str
    metric: str = ""
    preset: str | None = None
    overrides: tuple[tuple[str, Any], ...] = ()
    paper: PaperRef | None = None
    derived: Derived | None = None
    const: float | str | None = None
    data_stat: str | None = None
    seeds: tuple[int, ...] | None = None  # None: the table's seeds
    x: float | None = None  # the varied parameter's value, for "versus" plots

    @property
    def kind(self) -> str:
        if self.derived is not None:
            return "derived"
        if self.const is not None:
            return "const"
        if self.data_stat is not None:
            return "data"
        return "runs"


@dataclass(frozen=True)
class PlotSpec:
    """kind: curves (per-round `curves`, mean line and min–max band over seeds), versus
    (the cells' metric against cell.x), bars, heatmap (agg_weights per round and device).
    Only cells whose metric is `use_metric` are drawn; `panels` says which cell attribute
    makes the panels (the other one makes the lines)."""

    kind: str
    use_metric: str
    curves: tuple[str, ...] = ("test_acc",)
    panels: str = "col"  # col | row | dataset
    xlabel: str = ""
    logy: bool = False
    x: str = "round"  # curves: the rounds.parquet column drawn along x (cum_seconds: seconds)
    logx: bool = False


@dataclass(frozen=True)
class TableSpec:
    name: str
    source: str
    title: str
    datasets: tuple[str, ...]
    build: Callable[[str], list[Cell]] = field(repr=False)
    seeds: tuple[int, ...] = (0, 1, 2)
    spread: str = "minmax"  # minmax | ci95
    plot: PlotSpec | None = None
    notes: tuple[str, ...] = ()
    is_table: bool = True  # False: a figure only (fedbench plot NAME)
    claims: tuple[Claim, ...] = ()  # the paper's qualitative claims, checked over the cells
    # the table whose fit `--calibrated` applies (None: this table's own). For a table with no
    # anchor of its own whose setting is another table's (FedLGA's Table V reads Table VI's
    # runs; Figs. 5 and 7 vary one setting of it and give no FMNIST number to fit to)
    calibrated_by: str | None = None
    # (dataset, what it stands in for and why): a dataset variant that is not the paper's, run
    # with the table's protocol where the paper's data is not here; labelled in the table's file
    # name, header and REPORT
    substitutes: tuple[tuple[str, str], ...] = ()

    def substitute(self, dataset: str | None) -> str | None:
        """What a substitute dataset variant stands in for (None: the paper's own data)."""
        return dict(self.substitutes).get(dataset) if dataset else None

    def variants(self, dataset: str | None = None) -> tuple[str, ...]:
        if dataset is None:
            return self.datasets
        if dataset not in self.datasets:
            raise FedbenchError(
                f"table {self.name} has no dataset {dataset!r}; choose one of: "
                f"{', '.join(self.datasets)}"
            )
        return (dataset,)

    def cells(self, dataset: str | None = None) -> list[Cell]:
        return [_reported(c) for ds in self.variants(dataset) for c in self.build(ds)]


def _reported(cell: Cell) -> Cell:
    """The cell without its paper reference where the paper's table has no number for this
    dataset at all (builders name refs for every dataset; papers report some). A ref into a
    table that covers the dataset is kept, so a misspelt method or setting still shows."""
    ref = cell.paper
    if ref is None:
        return cell
    df = paper_values()
    ds = ref.dataset or cell.dataset
    covered = (df["paper"] == ref.paper) & (df["table"] == ref.table) & (df["dataset"] == ds)
    return cell if covered.any() else dataclasses.replace(cell, paper=None)


def runs(
    ds: str,
    row: str,
    col: str,
    metric: str,
    preset: str,
    paper=None,
    x=None,
    seeds=None,
    **overrides,
) -> Cell:
    """A cell reduced from runs of `preset` with `overrides` (values may be callables of the
    config built so far, e.g. tau_max = E - 1). Names are checked here, so a spec that drifts
    from the config or a method's parameters fails when it is built, not as n/a cells."""
    check_override_names(preset, overrides, f"{ds} / {row} / {col}")
    return Cell(ds, row, col, metric, preset, tuple(overrides.items()), paper, x=x, seeds=seeds)


class SpecError(FedbenchError):
    """A table spec names a config field or method parameter this build does not have."""


def check_override_names(preset: str, overrides: dict[str, Any], where: str) -> None:
    """Every key must be a RunConfig field (or paper alias) or a parameter of the cell's method
    (the override's, else the preset's). A method this build lacks is left to the cell (n/a)."""
    from fedbench.methods import METHODS
    from fedbench.presets import PRESETS

    method = overrides.get("method") or PRESETS.get(preset, ("", {}))[1].get("method", "fedavg")
    if method not in METHODS:
        return
    params = {f.name for f in dataclasses.fields(METHODS[method].Params)}
    for key in overrides:
        name = ALIASES.get(key, key)
        if name in FIELD_TYPES or name.removeprefix("method.") in params:
            continue
        raise SpecError(
            f"table cell {where}: {key!r} is neither a config field nor a parameter of "
            f"method {method} ({', '.join(sorted(params)) or 'none'})"
        )


# ---------------------------------------------------------------- the registry

TABLES: dict[str, TableSpec] = {}  # filled by the paper modules, in the order they register


def register(spec: TableSpec) -> TableSpec:
    """Add a table or figure to the registry (fedbench table / plot / sweep --table find it)."""
    if spec.name in TABLES:
        raise ValueError(f"table {spec.name!r} is registered twice")
    TABLES[spec.name] = spec
    return spec


def table(name: str, source: str, title: str, datasets: tuple[str, ...], **options):
    """Decorator: register the decorated cell builder as the table `name`."""

    def wrap(build: Callable[[str], list[Cell]]) -> Callable[[str], list[Cell]]:
        register(TableSpec(name, source, title, datasets, build, **options))
        return build

    return wrap


def get_table(name: str, figure: bool = False) -> TableSpec:
    if name not in TABLES:
        kinds = [n for n, t in TABLES.items() if t.is_table or figure]
        raise FedbenchError(f"unknown table {name!r}; choose one of: {', '.join(kinds)}")
    spec = TABLES[name]
    if not figure and not spec.is_table:
        raise FedbenchError(f"{name} is a figure only; use: fedbench plot {name}")
    if figure and spec.plot is None:
        raise FedbenchError(f"{name} is a table only; use: fedbench table {name}")
    return spec


# ---------------------------------------------------------------- configs of cells


def cell_config(
    cell: Cell, seed: int, preset: str | None = None, sets: dict[str, Any] | None = None
):
    """The RunConfig of one seed of a cell: its preset (or `preset`), then the user's `sets`,
    then the cell's own overrides (callables see the config built so far), validated."""
    from fedbench.assembly import apply_overrides, validate_config
    from fedbench.presets import get_preset

    cfg = get_preset(preset or cell.preset)
    if sets:
        cfg = apply_overrides(cfg, sets)
    plain = {k: v for k, v in cell.overrides if not callable(v)}
    if "method" in plain:  # first, so that the cell's own method parameters survive the switch
        cfg = apply_overrides(cfg, {"method": plain.pop("method")})
    cfg = apply_overrides(cfg, {**plain, "seed": seed})
    later = {k: v(cfg) for k, v in cell.overrides if callable(v)}
    if later:
        cfg = apply_overrides(cfg, later)
    return validate_config(cfg)
