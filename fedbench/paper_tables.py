"""The papers' tables and figures as data: the runs each one needs, how runs reduce to cells,
and the reported number each cell is compared with (fedbench/data/paper_values.csv).

A TableSpec builds, for each dataset variant it covers, a list of Cells. A cell is one number
of the table:
- "runs": a RunConfig (a preset plus overrides) run over several seeds and reduced to mean and
  spread by a Metric; `fedbench sweep --table NAME` runs exactly the cells' configs;
- "derived": computed from other cells' means (FedLGA's improvement over a baseline);
- "const": a property of the problem known without training (SFL's zeta* and delta);
- "data": a statistic of the federated dataset alone (FedProx Table 1).

Names of fields and parameters that other parts of fedbench define (and that this module
assumes) are collected under "assumed names" below, so a rename is a one-line change. A cell
whose config cannot be built (a method or preset this build lacks) is shown as unavailable with
the reason; it never stops the rest of the table.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from fedbench.assembly import validate_config
from fedbench.errors import FedbenchError

# ---------------------------------------------------------------- assumed names
QUAD_GROUP = "quad_group"  # config field choosing the SFL quadratic group (1..4)
QUAD_DISTANCE = "dist_to_opt"  # per-round |x - x*| in rounds.parquet (SFL quadratic)
DISSIMILARITY = "dissimilarity"  # per-round FedProx gradient dissimilarity in rounds.parquet
DISSIMILARITY_OVERRIDES: dict[str, Any] = {"dissimilarity": True}  # fedprox records it only then
ADAPTIVE_MU = {"adaptive": True}  # fedprox parameters for FedProx's adaptive mu (App. C.3.3)
IMBALANCE = "xi"  # config field xi = |X_large| / |X_small| (FedLGA Fig. 10) ...
IMBALANCE_SPLIT = {"partition": "imbalance"}  # ... read only by this split
SOFTMAX_T = "T"  # fedsoftmax parameter T (the code's multiplier of the loss, spec §6.2)
# FedSoftMax's data "frameworks" (spec §6.5): IID, and shard splits of 60 / 100 shards
FRAMEWORKS: dict[str, dict[str, Any]] = {
    "TNIID": {"partition": "shards", "num_shards": 100},
    "NIID": {"partition": "shards", "num_shards": 60},
    "IID": {"partition": "iid"},
}
LOCAL_ACC_COLUMNS = ("local_acc", "train_acc", "test_acc")  # smoothness curve, first present
SFL_MODELS = ("vgg9", "resnet18")  # model names of SFL's VGG-9 and ResNet-18 (spec §5.2)
SFL_CLASSES = "P"  # the field giving each client's C classes in SFL's extended Dirichlet split

# ---------------------------------------------------------------- building blocks


@dataclass(frozen=True)
class PaperRef:
    """Which row(s) of paper_values.csv a cell is compared with. `setting` matches the CSV's
    setting exactly or as the part before a ':'; metric "X_ci" pairs rows X_ci_low/X_ci_high;
    `note_key` reads "key=value" from the note instead of the value."""

    paper: str
    table: str
    method: str
    metric: str
    setting: str | None = None
    dataset: str | None = None  # the CSV's dataset name; None: the cell's dataset
    note_key: str | None = None


@dataclass(frozen=True)
class PaperValue:
    value: float | str
    low: float | None = None
    high: float | None = None

    @property
    def text(self) -> str:
        if self.low is not None and self.high is not None:
            return f"{self.low:.2f}–{self.high:.2f}"
        if isinstance(self.value, float):
            return f"{self.value:g}"
        return str(self.value)


@dataclass(frozen=True)
class Derived:
    """A cell computed from the means of other cells (row, col) of the same dataset."""

    sources: tuple[tuple[str, str], ...]
    fn: Callable[..., float | str | None]


@dataclass(frozen=True)
class Metric:
    """How one run reduces to a number: fn(summary, rounds) where rounds(columns) loads
    rounds.parquet lazily (None when unreadable). math.inf means "target not reached"."""

    label: str
    fn: Callable[[dict, Callable[[list[str]], pd.DataFrame | None]], float | None]
    digits: int = 2
    higher_is_better: bool = True


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
    from fedbench.config import ALIASES, FIELD_TYPES
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


# ---------------------------------------------------------------- claims
# A claim is one line of the paper's text and a check over one dataset's cells. Checks read
# cells through a view (fedbench.tables.CellView): v.mean(row, col) is our mean (None when the
# cell is missing or n/a, math.inf when the target was not reached), v.paper(row, col) the
# paper's PaperValue (or None), v.dataset the dataset. A row may be a callable of the dataset.


@dataclass(frozen=True)
class Verdict:
    holds: bool | None  # None: n/a (a cell without a number, or nothing to decide)
    ours: str
    paper: str = ""


@dataclass(frozen=True)
class Claim:
    text: str
    check: Callable[[Any], Verdict] = field(repr=False)
    datasets: tuple[str, ...] | None = None  # None: every dataset of the table
    source: str = ""  # where the paper says it, shown when the check has no paper numbers


Ref = tuple[Any, str]  # (row or row(dataset), col)


def _show(v) -> str:
    if v is None:
        return "no number"
    if isinstance(v, float):
        if math.isinf(v):
            return "not reached"
        return f"{int(v)}" if v.is_integer() and abs(v) < 1e9 else f"{v:.3g}"
    return str(v)


def _label(v, ref: Ref) -> str:
    row = v.row(ref[0])
    return row if len(v.cols) == 1 else f"{row} {ref[1]}"


def _pv(v, ref: Ref):
    p = v.paper(*ref)
    return None if p is None or isinstance(p.value, str) else float(p.value)


def _na(v, refs, paper="") -> Verdict | None:
    """n/a when a cell has no number (no runs, n/a, no value), or when every cell is
    'not reached' (nothing to order)."""
    vals = [v.mean(*r) for r in refs]
    missing = [_label(v, r) for r, x in zip(refs, vals) if x is None]
    if missing:
        return Verdict(None, f"no number for {', '.join(missing[:3])}", paper)
    if all(isinstance(x, float) and math.isinf(x) for x in vals):
        return Verdict(None, "none reached the target", paper)
    return None


def _listing(v, refs, values) -> str:
    return ", ".join(f"{_label(v, r)} {_show(x)}" for r, x in zip(refs, values))


def lowest(best: Ref, others: list[Ref], lower: bool = True, stated: str = "") -> Callable:
    """`best` beats every one of `others` (lower value, or higher with lower=False)."""

    def check(v) -> Verdict:
        refs = [best, *others]
        paper_vals = [_pv(v, r) for r in refs]
        paper = stated
        if all(p is not None for p in paper_vals):
            paper = _listing(v, refs, paper_vals)
        na = _na(v, refs, paper)
        if na:
            return na
        a = v.mean(*best)
        rest = [v.mean(*r) for r in others]
        ok = all((a < b) if lower else (a > b) for b in rest)
        if lower:  # a tie in 'not reached' is not a win
            ok = ok and not math.isinf(a)
        return Verdict(ok, _listing(v, refs, [a, *rest]), paper)

    return check


def ordered(refs: list[Ref], increasing: bool = True, stated: str = "") -> Callable:
    """The cells' values are monotone along refs (ties allowed)."""

    def check(v) -> Verdict:
        paper_vals = [_pv(v, r) for r in refs]
        paper = _listing(v, refs, paper_vals) if None not in paper_vals else stated
        na = _na(v, refs, paper)
        if na:
            return na
        vals = [v.mean(*r) for r in refs]
        pairs = list(zip(vals, vals[1:]))
        ok = all((a <= b) if increasing else (a >= b) for a, b in pairs)
        return Verdict(ok, _listing(v, refs, vals), paper)

    return check


def ratio_near(num: Ref, den: Ref, tol: float = 0.25, paper_ratio: float | None = None):
    """ours num/den within a factor (1 + tol) of the paper's (its cells' ratio, or given)."""

    def check(v) -> Verdict:
        pn, pd_ = _pv(v, num), _pv(v, den)
        want = paper_ratio if paper_ratio is not None else (pn / pd_ if pn and pd_ else None)
        if want is None:
            return Verdict(None, "the paper gives no ratio here")
        paper = f"{want:.2f}x (within {tol:.0%})"
        na = _na(v, [num, den], paper)
        if na:
            return na
        a, b = v.mean(*num), v.mean(*den)
        if math.isinf(a) or math.isinf(b) or b == 0:
            return Verdict(None, f"{_show(a)} / {_show(b)}", paper)
        r = a / b
        return Verdict(want / (1 + tol) <= r <= want * (1 + tol), f"{r:.2f}x", paper)

    return check


def within_ci(refs: list[Ref]) -> Callable:
    """Every cell's mean inside the paper's interval."""

    def check(v) -> Verdict:
        have = [r for r in refs if v.paper(*r) is not None and v.paper(*r).low is not None]
        if not have:
            return Verdict(None, "the paper gives no interval here")
        paper = ", ".join(f"{_label(v, r)} {v.paper(*r).text}" for r in have)
        na = _na(v, have, paper)
        if na:
            return na
        vals = [v.mean(*r) for r in have]
        ok = all(v.paper(*r).low <= x <= v.paper(*r).high for r, x in zip(have, vals))
        return Verdict(ok, _listing(v, have, vals), paper)

    return check


def same_as_paper(refs: list[Ref], rel: float = 0.0) -> Callable:
    """Every cell equals the paper's value (strings), or is within rel of it (numbers)."""

    def check(v) -> Verdict:
        have = [r for r in refs if v.paper(*r) is not None]
        if not have:
            return Verdict(None, "the paper gives no value here")
        pvals = [v.paper(*r).value for r in have]
        paper = _listing(v, have, pvals)
        na = _na(v, have, paper)
        if na:
            return na
        vals = [v.mean(*r) for r in have]
        same = [
            x == p if isinstance(p, str) or isinstance(x, str) else abs(x - p) <= rel * abs(p)
            for x, p in zip(vals, pvals)
        ]
        if all(same):
            return Verdict(True, f"{len(same)} of {len(same)} equal")  # paper: the claim's source
        off = [i for i, ok in enumerate(same) if not ok]  # show only the cells that differ
        pick = [have[i] for i in off]
        return Verdict(
            False,
            f"{len(off)} of {len(same)} differ: " + _listing(v, pick, [vals[i] for i in off]),
            _listing(v, pick, [pvals[i] for i in off]),
        )

    return check


def reached(refs: list[Ref], stated: str = "") -> Callable:
    """Every cell reached the target (a finite number of rounds)."""

    def check(v) -> Verdict:
        vals = [v.mean(*r) for r in refs]
        if None in vals:
            return _na(v, refs, stated) or Verdict(None, "no number", stated)
        ok = not any(isinstance(x, float) and math.isinf(x) for x in vals)
        return Verdict(ok, _listing(v, refs, vals), stated)

    return check


def every(*checks: Callable) -> Callable:
    """All checks hold (n/a if any is n/a); ours and paper: the failing or first part."""

    def check(v) -> Verdict:
        out = [c(v) for c in checks]
        na = [x for x in out if x.holds is None]
        if na:
            return na[0]
        bad = [x for x in out if not x.holds]
        first = bad[0] if bad else out[0]
        return Verdict(not bad, first.ours, first.paper)

    return check


# ---------------------------------------------------------------- metrics


def _summary_or(key: str, curve_fn):
    def fn(summary, rounds):
        v = summary.get(key)
        if v is not None and not (isinstance(v, float) and math.isnan(v)):
            return float(v)
        return curve_fn(rounds) if curve_fn else None

    return fn


def _to_target(key: str):
    def fn(summary, rounds):
        if summary.get("target_acc") is None:
            return None
        v = summary.get(key)
        return math.inf if v is None else float(v)

    return fn


def _final_loss(summary, rounds):
    for key in ("final_train_loss", "final_local_loss"):
        v = summary.get(key)
        if v is not None and not math.isnan(v):
            return float(v)
    df = rounds(["train_loss", "local_loss"])
    if df is None:
        return None
    for col in ("train_loss", "local_loss"):
        if col in df and df[col].notna().any():
            return float(df[col].dropna().iloc[-1])
    return None


def _rounds_to(acc: float):
    """First round (0 = the initial model) whose test accuracy reaches acc (FedSoftMax R90)."""

    def fn(summary, rounds):
        df = rounds(["round", "test_acc"])
        if df is None or "test_acc" not in df:
            return None
        hit = df[df["test_acc"] >= acc]
        return float(hit["round"].iloc[0]) if len(hit) else math.inf

    return fn


def _smoothness(summary, rounds):
    """std(diff(c)) / |mean(diff(c))| of the per-round accuracy curve c (spec §6.6), per run."""
    df = rounds(["round", *LOCAL_ACC_COLUMNS])
    if df is None:
        return None
    for col in LOCAL_ACC_COLUMNS:
        if col in df and df[col].notna().sum() > 2:
            d = df[df["round"] > 0][col].dropna().diff().dropna()
            m = float(d.mean())
            return float(d.std(ddof=0)) / abs(m) if m else math.inf
    return None


def _column_stat(col: str, how: str, scale: float = 1.0, last: int = 0):
    def fn(summary, rounds):
        df = rounds([col])
        if df is None or col not in df or df[col].notna().sum() == 0:
            return None
        s = df[col].dropna()
        if last:
            s = s.iloc[-last:]
        return scale * float(s.iloc[-1] if how == "last" else s.mean())

    return fn


def _pct(key):
    def fn(summary, rounds):
        v = summary.get(key)
        return None if v is None else 100.0 * float(v)

    return fn


METRICS: dict[str, Metric] = {
    "best_acc": Metric("best test acc %", _pct("best_acc")),
    "final_acc": Metric("final test acc %", _pct("final_acc")),
    "rounds_to_target": Metric("rounds to target", _to_target("rounds_to_target"), 1, False),
    "seconds_to_target": Metric("s to target", _to_target("seconds_to_target"), 1, False),
    "mean_round_seconds": Metric("s / round", _summary_or("mean_round_seconds", None), 3, False),
    "final_train_loss": Metric("final train loss", _final_loss, 4, False),
    "r90": Metric("R90", _rounds_to(0.9), 2, False),
    "smoothness": Metric("smoothness", _smoothness, 3, False),
    "mean_dissimilarity": Metric(
        "mean dissimilarity", _column_stat(DISSIMILARITY, "mean"), 4, False
    ),
    "last25_acc": Metric(
        "test acc % (last 25 evals)", _column_stat("test_acc", "mean", 100.0, 25), 2
    ),
    "final_dist": Metric("final |x - x*|", _column_stat(QUAD_DISTANCE, "last"), 4, False),
}

# ---------------------------------------------------------------- paper values


@functools.cache
def paper_values() -> pd.DataFrame:
    from importlib.resources import files

    with files("fedbench.data").joinpath("paper_values.csv").open() as f:
        return pd.read_csv(f, dtype=str, keep_default_na=False)


def _number(text: str) -> float | str:
    try:
        if "/" in text:
            a, b = text.split("/")
            return float(a) / float(b)
        return float(text)
    except ValueError:
        return text


def lookup(ref: PaperRef, dataset: str) -> PaperValue | None:
    df = paper_values()
    ds = ref.dataset or dataset
    sel = (df["paper"] == ref.paper) & (df["table"] == ref.table) & (df["dataset"] == ds)
    sel &= df["method"] == ref.method
    if ref.setting is not None:
        setting = df["setting"]
        sel &= (setting == ref.setting) | setting.str.startswith(ref.setting + ":")
    rows = df[sel]
    if ref.metric.endswith("_ci"):
        lo = rows[rows["metric"] == ref.metric + "_low"]["value"]
        hi = rows[rows["metric"] == ref.metric + "_high"]["value"]
        if lo.empty or hi.empty:
            return None
        low, high = float(lo.iloc[0]), float(hi.iloc[0])
        return PaperValue((low + high) / 2, low, high)
    rows = rows[rows["metric"] == ref.metric]
    if rows.empty:
        return None
    if ref.note_key:
        for part in rows["note"].iloc[0].replace(";", ",").split(","):
            k, _, v = part.strip().partition("=")
            if k == ref.note_key:
                return PaperValue(_number(v))
        return None
    return PaperValue(_number(rows["value"].iloc[0]))


# ---------------------------------------------------------------- FedLGA (IEEE TCYB 2023)

FEDLGA_METHODS = (
    ("fedlga", "FedLGA"),
    ("fedavg", "FedAvg"),
    ("fedprox", "FedProx"),
    ("fednova", "FedNova"),
    ("scaffold", "Scaffold"),
    ("feddyn", "FedDyn"),
    ("fedcm", "FedCM"),
    ("mimelite", "MimeLite"),
    ("fedsam", "FedSAM"),
)
FEDLGA_DATASETS = ("fmnist", "cifar10", "cifar100")
E_GRID = (3, 5, 8)  # Fig. 6: the text names E=5 (default) and E=8; 3 is our third point
RHO_GRID = (0.1, 0.3, 0.5, 0.7, 0.9)  # Fig. 7: the text names 0.1 and 0.5
N_GRID = (30, 50, 100)  # Fig. 8
K_GRID = (5, 10, 25)  # Fig. 9
XI_GRID = (1, 2, 3)  # Fig. 10, with P = 3 (CIFAR-10) and 30 (CIFAR-100)
TAU_FRACTIONS = (0.8, 0.6, 0.4, 0.2)  # Table VI: tau_max in {0.8, 0.6, 0.4, 0.2} E
FEDLGA_TAU_ROW = "FedLGA tau_max=0.8E"


# Tables V-VI measure rounds and seconds to the target: their runs end there (and share ids)
TO_TARGET = {"stop_at_target": True}


def _tau_full(cfg) -> int:
    return cfg.work_units - 1  # tau_max = E - 1 (the default heterogeneity)


def _tau_fraction(f: float):
    def fn(cfg) -> int:
        e = cfg.work_units
        return min(e - 1, max(1, math.floor(f * e + 0.5)))

    fn.__name__ = f"tau_max={f}E"
    return fn


def _table6(label: str, fraction: float | None = None) -> PaperRef:
    setting = f"tau_max={fraction}E" if fraction else "baseline (tau_max=E-1)"
    if label == "FedLGA" and fraction is None:
        setting = "tau_max=0.8E"  # FedLGA at tau_max = E-1 = 0.8E (E=5) is Table VI's first row
    return PaperRef("fedlga", "TableVI_tau_max", label, "rounds_to_target", setting)


def _runtime(ds: str) -> list[Cell]:
    out = []
    for m, label in FEDLGA_METHODS:
        for col, metric, paper_metric in (
            ("single s/round", "mean_round_seconds", "single_round_seconds"),
            ("total s to target", "seconds_to_target", "total_seconds_to_target"),
        ):
            ref = PaperRef("fedlga", "TableV_runtime", label, paper_metric)
            out.append(runs(ds, label, col, metric, f"fedlga-{ds}", ref, method=m, **TO_TARGET))
    return out


def _tau(ds: str) -> list[Cell]:
    col = "rounds to target"
    out = [
        runs(
            ds,
            f"FedLGA tau_max={f}E",
            col,
            "rounds_to_target",
            f"fedlga-{ds}",
            _table6("FedLGA", f),
            x=f,
            method="fedlga",
            tau_max=_tau_fraction(f),
            **TO_TARGET,
        )
        for f in TAU_FRACTIONS
    ]
    for m, label in FEDLGA_METHODS[1:]:
        out.append(
            runs(
                ds,
                label,
                col,
                "rounds_to_target",
                f"fedlga-{ds}",
                _table6(label),
                x=0.8,  # tau_max = E-1 = 0.8E at the default E = 5
                method=m,
                tau_max=_tau_full,
                **TO_TARGET,
            )
        )
        out.append(
            Cell(
                ds,
                label,
                "x FedLGA's rounds",
                derived=Derived(((label, col), (FEDLGA_TAU_ROW, col)), _ratio),
                paper=PaperRef("fedlga", "text_rounds", label, "fedlga_speedup_x", "default"),
            )
        )
    return out


def _ratio(a, b):
    if a is None or b is None or b == 0 or math.isinf(b):
        return None
    return a / b


def _minus(a, b):
    return None if a is None or b is None else a - b


def _best_acc(ds: str) -> list[Cell]:
    col = "best acc %"
    out = []
    for m, label in FEDLGA_METHODS:
        ref = None
        if m in ("fedlga", "fedavg"):  # the text's absolute numbers (the rest: differences)
            ref = PaperRef("fedlga", "text_best_acc", label, "best_test_accuracy_pct", "default")
        out.append(runs(ds, label, col, "best_acc", f"fedlga-{ds}", ref, method=m))
        if m != "fedlga":
            out.append(
                Cell(
                    ds,
                    label,
                    "FedLGA minus this",
                    derived=Derived((("FedLGA", col), (label, col)), _minus),
                    paper=PaperRef(
                        "fedlga", "text_best_acc", label, "fedlga_improvement_pct_points", "default"
                    ),
                )
            )
    return out


def _versus_methods(param: str, grid, overrides, paper) -> Callable[[str], list[Cell]]:
    """Rounds to target of every method for each value of one parameter (Figs. 6 and 7)."""

    def build(ds: str) -> list[Cell]:
        out = []
        for m, label in FEDLGA_METHODS:
            for v in grid:
                out.append(
                    runs(
                        ds,
                        label,
                        f"{param}={v}",
                        "rounds_to_target",
                        f"fedlga-{ds}",
                        paper(ds, label, v),
                        x=v,
                        method=m,
                        **overrides(v),
                    )
                )
        return out

    return build


def _epochs_paper(ds, label, e):
    if e == 8 and label in ("FedLGA", "FedAvg"):
        return PaperRef("fedlga", "Fig6_E", label, "rounds_to_target", "E=8")
    return _table6(label) if e == 5 else None


def _epochs_overrides(e):
    return {"E": e, "tau_max": _tau_full}


def _rho_paper(ds, label, rho):
    return _table6(label) if rho == 0.5 else None


def _fedlga_ablation(param: str, grid, key: str, paper_for) -> Callable[[str], list[Cell]]:
    """FedLGA alone for each value of one parameter: rounds to target and best accuracy
    (Figs. 8-10, learning curves in the paper)."""

    def build(ds: str) -> list[Cell]:
        out = []
        for v in grid:
            over = {key: v, "tau_max": _tau_full}  # the figures' tau_max = E-1, whatever E
            if param == "xi":  # Fig. 10 uses P = 3 (CIFAR-10) and 30 (CIFAR-100)
                over.update(IMBALANCE_SPLIT, P=30 if ds == "cifar100" else 3)
            for row, metric, paper in (
                ("rounds to target", "rounds_to_target", paper_for(ds, v)),
                ("best acc %", "best_acc", None),
            ):
                out.append(
                    runs(
                        ds,
                        row,
                        f"{param}={v}",
                        metric,
                        f"fedlga-{ds}",
                        paper,
                        x=v,
                        method="fedlga",
                        **over,
                    )
                )
        return out

    return build


def _n_paper(ds, n):
    return _table6("FedLGA") if n == 50 else None


def _k_paper(ds, k):
    if k == 25:
        return PaperRef("fedlga", "Fig9_K", "FedLGA", "rounds_to_target", "K=25")
    return _table6("FedLGA") if k == 10 else None


# ---------------------------------------------------------------- SFL (Li & Lyu)

SFL_LR = {  # spec §5.2, the authors' README: (dataset, model, method, C) -> lr for K = 5, 20, 50
    ("cifar10", "vgg9", "pfl", 1): (0.1, 0.1, 0.1),
    ("cifar10", "vgg9", "pfl", 2): (0.1, 0.1, 0.1),
    ("cifar10", "vgg9", "sfl", 1): (0.03, 0.003, 0.003),
    ("cifar10", "vgg9", "sfl", 2): (0.03, 0.01, 0.01),
    ("cifar10", "resnet18", "pfl", 1): (0.3, 0.1, 0.1),
    ("cifar10", "resnet18", "pfl", 2): (0.3, 0.3, 0.3),
    ("cifar10", "resnet18", "sfl", 1): (0.03, 0.03, 0.01),
    ("cifar10", "resnet18", "sfl", 2): (0.03, 0.03, 0.03),
    ("cinic10", "vgg9", "pfl", 1): (0.1, 0.1, 0.1),
    ("cinic10", "vgg9", "pfl", 2): (0.1, 0.03, 0.1),
    ("cinic10", "vgg9", "sfl", 1): (0.01, 0.003, 0.003),
    ("cinic10", "vgg9", "sfl", 2): (0.01, 0.01, 0.01),
    ("cinic10", "resnet18", "pfl", 1): (0.1, 0.1, 0.1),
    ("cinic10", "resnet18", "pfl", 2): (0.3, 0.1, 0.3),
    ("cinic10", "resnet18", "sfl", 1): (0.03, 0.03, 0.03),
    ("cinic10", "resnet18", "sfl", 2): (0.03, 0.03, 0.01),
}
SFL_K = (5, 20, 50)
SFL_CLIP = {"pfl": 10.0, "sfl": 50.0}
SFL_SEEDS = (123, 1234, 12345)
QUAD_GROUPS = {  # spec §5.1: (a1, b1), (a2, b2) with F_m(x) = a_m x^2 + b_m x
    1: ((0.5, 0.0), (0.5, 0.0)),
    2: ((0.5, 1.0), (0.5, -1.0)),
    3: ((2 / 3, 1.0), (1 / 3, -1.0)),
    4: ((1.0, 1.0), (0.0, -1.0)),
}
QUAD_K = (2, 10)
QUAD_LR = 0.01  # one learning rate of the authors' grid for the table; plots show its curves
QUAD_SEEDS = (1, 12, 123, 1234, 12345)


def _sfl(ds: str) -> list[Cell]:
    out = []
    for model in SFL_MODELS:
        for m in ("pfl", "sfl"):
            for c in (1, 2):
                for k, lr in zip(SFL_K, SFL_LR[(ds, model, m, c)]):
                    ref = PaperRef(
                        "sfl",
                        "Table3_accuracy",
                        m.upper(),
                        "test_accuracy_pct",
                        f"model={model},C={c},K={k} (K = local steps)",
                    )
                    out.append(
                        runs(
                            ds,
                            f"{model} {m.upper()}",
                            f"C={c} K={k}",
                            "last25_acc",
                            f"sfl-{ds}",
                            ref,
                            method=m,
                            model=model,
                            **{SFL_CLASSES: c},
                            local_steps=k,
                            lr=lr,
                            grad_clip=SFL_CLIP[m],
                        )
                    )
    return out


def quad_constants(group: int) -> tuple[float, float]:
    """(zeta*, delta) of a quadratic group: zeta* = max_m |F_m'(x*)|, delta = |a1 - a2|."""
    (a1, b1), (a2, b2) = QUAD_GROUPS[group]
    x_star = -(b1 + b2) / (2 * (a1 + a2))
    zeta = max(abs(2 * a1 * x_star + b1), abs(2 * a2 * x_star + b2))
    return zeta, abs(a1 - a2)


def _winner(pfl, sfl):
    if pfl is None or sfl is None:
        return None
    return "SFL" if sfl < pfl else ("PFL" if pfl < sfl else "tie")


def _quadratic(ds: str) -> list[Cell]:
    out = []
    for g in QUAD_GROUPS:
        row = f"Group {g}"
        zeta, delta = quad_constants(g)
        ref = PaperRef("sfl", "Table2_quadratic", "SFL vs PFL", "zeta_star", f"group={g}")
        out.append(Cell(ds, row, "zeta*", const=zeta, paper=ref))
        out.append(
            Cell(
                ds,
                row,
                "delta",
                const=delta,
                paper=PaperRef(
                    "sfl",
                    "Table2_quadratic",
                    "SFL vs PFL",
                    "zeta_star",
                    f"group={g}",
                    note_key="delta",
                ),
            )
        )
        for k in QUAD_K:
            for m in ("pfl", "sfl"):
                out.append(
                    runs(
                        ds,
                        row,
                        f"{m.upper()} K={k}",
                        "final_dist",
                        "sfl-quadratic",
                        None,
                        method=m,
                        local_steps=k,
                        lr=QUAD_LR,
                        **{QUAD_GROUP: g},
                    )
                )
            out.append(
                Cell(
                    ds,
                    row,
                    f"winner K={k}",
                    derived=Derived(((row, f"PFL K={k}"), (row, f"SFL K={k}")), _winner),
                    paper=PaperRef("sfl", "Fig1_quadratic", "SFL vs PFL", "winner", f"group={g}"),
                )
            )
    return out


# ---------------------------------------------------------------- FedSoftMax

SOFTMAX_METHODS = (("fedavg", "FedAvg"), ("fedsoftmax", "FedSoftMax"))
SOFTMAX_SEEDS = (0, 1, 2, 3, 4)
T_GRID = (5, 10, 20, 30)  # Fig. 5: "temperatures between 5 and 30"


def _softmax_frameworks(metric: str, paper_table: str, paper_metric: str):
    def build(ds: str) -> list[Cell]:
        out = []
        for m, label in SOFTMAX_METHODS:
            for fw, over in FRAMEWORKS.items():
                ref = PaperRef("fedsoftmax", paper_table, label, paper_metric, f"framework={fw}")
                out.append(runs(ds, label, fw, metric, f"fedsoftmax-{ds}", ref, method=m, **over))
        return out

    return build


def _temperature(ds: str) -> list[Cell]:
    rows = [("FedAvg", {"method": "fedavg"}, None)]
    rows += [(f"FedSoftMax T={t}", {"method": "fedsoftmax", SOFTMAX_T: t}, t) for t in T_GRID]
    out = []
    for label, over, t in rows:
        for col, metric in (("R90", "r90"), ("best acc %", "best_acc")):
            out.append(
                runs(
                    ds,
                    label,
                    col,
                    metric,
                    f"fedsoftmax-{ds}",
                    None,
                    x=t,
                    **over,
                    **FRAMEWORKS["NIID"],
                )
            )
    return out


def _participation(ds: str) -> list[Cell]:
    return [
        runs(
            ds,
            "FedSoftMax",
            "NIID",
            "best_acc",
            f"fedsoftmax-{ds}",
            None,
            seeds=(0,),
            method="fedsoftmax",
            **FRAMEWORKS["NIID"],
        )
    ]


# ---------------------------------------------------------------- FedProx (MLSys 2020)

FEDPROX_DATASETS = ("synthetic-1-1", "mnist", "femnist", "shakespeare", "sent140")
SYNTHETIC = ("synthetic-iid", "synthetic-0-0", "synthetic-0.5-0.5", "synthetic-1-1")
STRAGGLER_LEVELS = (0.0, 0.5, 0.9)


@functools.cache
def best_mu(ds: str) -> float:
    """FedProx's best mu per dataset (§5.3.2), read from paper_values.csv."""
    ref = PaperRef(
        "fedprox", "Sec5.3.2_best_mu", "FedProx", "best_mu", dataset=ds.replace("-", "_")
    )
    v = lookup(ref, ds)
    return float(v.value) if v is not None else 1.0


def _stragglers(ds: str) -> list[Cell]:
    mu = best_mu(ds)
    rows = (
        ("FedAvg", {"method": "fedavg"}),
        ("FedProx mu=0", {"method": "fedprox", "mu": 0.0}),
        (f"FedProx mu={mu:g}", {"method": "fedprox", "mu": mu}),
    )
    out = []
    for label, over in rows:
        for what, metric in (("loss", "final_train_loss"), ("acc", "final_acc")):
            for s in STRAGGLER_LEVELS:
                out.append(
                    runs(
                        ds,
                        label,
                        f"{what} {s:.0%}",
                        metric,
                        f"fedprox-{ds}",
                        None,
                        x=s,
                        hetero="stragglers",
                        stragglers=s,
                        straggler_policy="drop-fedavg",
                        **over,
                    )
                )
    return out


def _dissimilarity(ds: str) -> list[Cell]:
    out = []
    for label, mu in (("FedAvg (FedProx mu=0)", 0.0), ("FedProx mu=1", 1.0)):
        for col, metric in (
            ("final train loss", "final_train_loss"),
            ("mean dissimilarity", "mean_dissimilarity"),
        ):
            out.append(
                runs(
                    ds,
                    label,
                    col,
                    metric,
                    f"fedprox-{ds}",
                    None,
                    method="fedprox",
                    mu=mu,
                    hetero="none",
                    **DISSIMILARITY_OVERRIDES,
                )
            )
    return out


def _adaptive_mu(ds: str) -> list[Cell]:
    mu0 = 1.0 if ds == "synthetic-iid" else 0.0  # App. C.3.3: start at 1 (IID), 0 (non-IID)
    rows = (
        ("FedAvg (FedProx mu=0)", {"mu": 0.0}),
        (f"FedProx adaptive mu (from {mu0:g})", {"mu": mu0, **ADAPTIVE_MU}),
        ("FedProx mu=1", {"mu": 1.0}),
    )
    return [
        runs(
            ds,
            label,
            "final train loss",
            "final_train_loss",
            f"fedprox-{ds}",
            None,
            method="fedprox",
            hetero="none",
            **over,
        )
        for label, over in rows
    ]


DATA_STATS = (
    ("devices", "devices", "devices"),
    ("samples", "samples", "samples"),
    ("samples/device mean", "mean_per_device", "samples_per_device_mean"),
    ("samples/device std", "std_per_device", "samples_per_device_std"),
)


def _data_stats(ds: str) -> list[Cell]:
    return [
        Cell(
            ds,
            f"fedprox-{ds}",
            col,
            preset=f"fedprox-{ds}",
            data_stat=stat,
            paper=PaperRef("fedprox", "Table1_stats", "-", metric),
        )
        for col, stat, metric in DATA_STATS
    ]


# ---------------------------------------------------------------- the papers' claims

_TO = "rounds to target"
_BASELINES = [label for _, label in FEDLGA_METHODS[1:]]
_TAU_ROWS = [f"FedLGA tau_max={f}E" for f in TAU_FRACTIONS]


def _fedlga_first(col_of) -> Callable:
    """FedLGA needs fewer rounds than every baseline in each of the columns col_of gives."""
    return every(
        *(lowest(("FedLGA", c), [(b, c) for b in _BASELINES], stated="text") for c in col_of)
    )


TAU_CLAIMS = (
    Claim(
        "FedLGA (tau_max = 0.8E) needs fewer rounds to the target than FedAvg",
        lowest((FEDLGA_TAU_ROW, _TO), [("FedAvg", _TO)]),
    ),
    Claim(
        "FedAvg needs about 1.9x (FMNIST, CIFAR-100) / 1.6x (CIFAR-10) FedLGA's rounds",
        ratio_near(("FedAvg", _TO), (FEDLGA_TAU_ROW, _TO)),
    ),
    Claim(
        "at every tau_max FedLGA needs fewer rounds than every baseline",
        every(*(lowest((r, _TO), [(b, _TO) for b in _BASELINES]) for r in _TAU_ROWS)),
    ),
    Claim(
        "FedLGA degrades as tau_max grows (rounds: 0.2E <= 0.4E <= 0.6E <= 0.8E)",
        ordered([(r, _TO) for r in reversed(_TAU_ROWS)]),
    ),
)
RUNTIME_CLAIMS = (
    Claim(
        "FedLGA reaches the target in the least total time of all methods",
        lowest(
            ("FedLGA", "total s to target"),
            [(b, "total s to target") for b in _BASELINES],
            stated="text: best total time on all three datasets",
        ),
    ),
    Claim(
        "FedAvg and FedNova take less time per round than FedLGA (its work is on the server)",
        every(
            lowest(("FedAvg", "single s/round"), [("FedLGA", "single s/round")]),
            lowest(("FedNova", "single s/round"), [("FedLGA", "single s/round")]),
        ),
    ),
)
BEST_ACC_CLAIMS = (
    Claim(
        "FedLGA has the best test accuracy of all methods",
        lowest(
            ("FedLGA", "best acc %"),
            [(b, "best acc %") for b in _BASELINES],
            lower=False,
            stated="text: best on each dataset",
        ),
    ),
    Claim(
        "FedLGA improves FedAvg's best accuracy (64.44 vs 60.91 % on CIFAR-10)",
        lowest(("FedLGA", "best acc %"), [("FedAvg", "best acc %")], lower=False),
    ),
)
EPOCHS_CLAIMS = (
    Claim(
        "at every E FedLGA needs fewer rounds than every baseline",
        _fedlga_first([f"E={e}" for e in E_GRID]),
    ),
    Claim(
        "at E = 8 FedAvg needs about 2x FedLGA's rounds (104 vs 52)",
        ratio_near(("FedAvg", "E=8"), ("FedLGA", "E=8")),
        datasets=("fmnist",),
    ),
)
RHO_CLAIMS = (
    Claim(
        "at every rho FedLGA needs fewer rounds than every baseline",
        _fedlga_first([f"rho={r}" for r in RHO_GRID]),
    ),
)
DEVICES_CLAIMS = (
    Claim(
        "FedLGA learns better as N grows (best accuracy: N=30 <= 50 <= 100)",
        ordered([("best acc %", f"N={n}") for n in N_GRID], stated="text and Fig. 8"),
    ),
    Claim(
        "FedLGA converges faster as N grows (rounds: N=30 >= 50 >= 100)",
        ordered([(_TO, f"N={n}") for n in N_GRID], increasing=False, stated="text and Fig. 8"),
    ),
)
SAMPLED_CLAIMS = (
    Claim(
        "FedLGA needs fewer rounds as K grows (K=5 >= 10 >= 25)",
        ordered([(_TO, f"K={k}") for k in K_GRID], increasing=False, stated="text and Fig. 9"),
    ),
    Claim(
        "K = 25 needs 46% fewer rounds than K = 10 (78 vs 145 on CIFAR-100)",
        ratio_near((_TO, "K=25"), (_TO, "K=10")),
        datasets=("cifar100",),
    ),
)
IMBALANCE_CLAIMS = (
    Claim(
        "FedLGA degrades as xi grows (best accuracy: xi=1 >= 2 >= 3)",
        ordered([("best acc %", f"xi={x}") for x in XI_GRID], False, "text and Fig. 10"),
    ),
    Claim(
        "FedLGA still reaches the target at every xi",
        reached([(_TO, f"xi={x}") for x in XI_GRID], "text"),
    ),
)
SFL_CLAIMS = (
    Claim(
        "SFL beats PFL at C = 1 (extreme heterogeneity) for both models and every K",
        every(
            *(
                lowest((f"{m} SFL", f"C=1 K={k}"), [(f"{m} PFL", f"C=1 K={k}")], lower=False)
                for m in SFL_MODELS
                for k in SFL_K
            )
        ),
    ),
)
QUADRATIC_CLAIMS = (
    Claim(
        "zeta* and delta of the four groups are Table 2's",
        same_as_paper([(f"Group {g}", c) for g in QUAD_GROUPS for c in ("zeta*", "delta")], 1e-9),
        source="Table 2",
    ),
    Claim(
        "SFL ends closer to x* in groups 1, 3, 4 and PFL in group 2 (Fig. 1), for K = 2 and 10",
        same_as_paper([(f"Group {g}", f"winner K={k}") for g in QUAD_GROUPS for k in QUAD_K]),
        source="Fig. 1",
    ),
)
_FW = tuple(FRAMEWORKS)  # TNIID, NIID, IID
R90_CLAIMS = (
    Claim(
        "FedSoftMax reaches 90% in fewer rounds than FedAvg on TNIID and NIID",
        every(*(lowest(("FedSoftMax", fw), [("FedAvg", fw)]) for fw in ("TNIID", "NIID"))),
    ),
    Claim(
        "every R90 lies within the paper's 95% interval",
        within_ci([(m, fw) for _, m in SOFTMAX_METHODS for fw in _FW]),
    ),
)
SMOOTHNESS_CLAIMS = (
    Claim(
        "FedSoftMax's accuracy curve is less smooth than FedAvg's on TNIID and NIID",
        every(
            *(lowest(("FedSoftMax", fw), [("FedAvg", fw)], lower=False) for fw in ("TNIID", "NIID"))
        ),
    ),
)
TEMPERATURE_CLAIMS = (
    Claim(
        "a higher temperature converges faster (R90: T=5 >= 10 >= 20 >= 30)",
        ordered([(f"FedSoftMax T={t}", "R90") for t in T_GRID], False, "text and Fig. 5"),
    ),
    Claim(
        "FedSoftMax at T = 30 reaches 90% before FedAvg",
        lowest((f"FedSoftMax T={T_GRID[-1]}", "R90"), [("FedAvg", "R90")], stated="Fig. 5"),
    ),
)


def _mu_row(ds: str) -> str:
    return f"FedProx mu={best_mu(ds):g}"


STRAGGLERS_CLAIMS = (
    Claim(
        "FedProx mu>0 ends with a lower training loss than FedAvg at 50% and 90% stragglers",
        every(*(lowest((_mu_row, f"loss {s}"), [("FedAvg", f"loss {s}")]) for s in ("50%", "90%"))),
        source="Fig. 1",
    ),
    Claim(
        "FedProx mu>0 ends with a lower training loss than mu=0 at 90% stragglers",
        lowest((_mu_row, "loss 90%"), [("FedProx mu=0", "loss 90%")], stated="Fig. 1"),
    ),
    Claim(
        "keeping stragglers' partial work (mu=0) beats dropping them (FedAvg) at 90%",
        lowest(("FedProx mu=0", "loss 90%"), [("FedAvg", "loss 90%")], stated="Fig. 1"),
    ),
    Claim(
        "FedProx mu>0 has a higher test accuracy than FedAvg at 90% stragglers (+22 points "
        "on average over the datasets)",
        lowest((_mu_row, "acc 90%"), [("FedAvg", "acc 90%")], lower=False, stated="Fig. 7"),
    ),
)
_PROX0, _PROX1 = "FedAvg (FedProx mu=0)", "FedProx mu=1"
DISSIMILARITY_CLAIMS = (
    Claim(
        "mu = 1 gives a smaller gradient dissimilarity than mu = 0",
        lowest((_PROX1, "mean dissimilarity"), [(_PROX0, "mean dissimilarity")], stated="Fig. 2"),
    ),
    Claim(
        "on heterogeneous data mu = 1 ends with a lower training loss than mu = 0",
        lowest((_PROX1, "final train loss"), [(_PROX0, "final train loss")], stated="Fig. 2"),
        datasets=("synthetic-0.5-0.5", "synthetic-1-1"),
    ),
)


def _adaptive_row(ds: str) -> str:
    return f"FedProx adaptive mu (from {1.0 if ds == 'synthetic-iid' else 0.0:g})"


def _adaptive_near_best(v) -> Verdict:
    """Adaptive mu's final loss within 10% of the better fixed mu's (Fig. 3: 'works well')."""
    col = "final train loss"
    refs = [(_adaptive_row, col), (_PROX0, col), (_PROX1, col)]
    na = _na(v, refs, "Fig. 3: close to the better fixed mu")
    if na:
        return na
    a, best = v.mean(*refs[0]), min(v.mean(*refs[1]), v.mean(*refs[2]))
    return Verdict(a <= 1.1 * best, _listing(v, refs, [v.mean(*r) for r in refs]), "Fig. 3")


ADAPTIVE_MU_CLAIMS = (
    Claim(
        "adaptive mu ends within 10% of the better fixed mu's training loss", _adaptive_near_best
    ),
)
DATA_STATS_CLAIMS = (
    Claim(
        "devices and samples are Table 1's (within 1%)",
        lambda v: same_as_paper(
            [(f"fedprox-{v.dataset}", c) for c in ("devices", "samples")], 0.01
        )(v),
        source="Table 1",
    ),
)


# ---------------------------------------------------------------- the registry

_CURVES = ("test_acc", "train_loss")

TABLES: dict[str, TableSpec] = {
    t.name: t
    for t in (
        TableSpec(
            "runtime",
            "FedLGA (TCYB 2023) Table V",
            "Running time: seconds per round and to target",
            FEDLGA_DATASETS,
            _runtime,
            plot=PlotSpec("curves", "seconds_to_target", _CURVES, panels="dataset"),
            notes=(
                "paper: GTX 1080Ti; ours: the device in the header. Compare ratios, not "
                "seconds. Targets: FMNIST 65%, CIFAR-10 55%, CIFAR-100 40%.",
                "fedbench plot runtime draws the learning curves of these runs (the default "
                "setting: FedLGA Figs. 3-4, test accuracy and training loss).",
            ),
            claims=RUNTIME_CLAIMS,
        ),
        TableSpec(
            "tau",
            "FedLGA (TCYB 2023) Table VI",
            "Rounds to target accuracy for tau_max",
            FEDLGA_DATASETS,
            _tau,
            plot=PlotSpec("versus", "rounds_to_target", xlabel="tau_max / E"),
            notes=(
                "baselines run at tau_max = E-1; 'x FedLGA's rounds' is a baseline's rounds "
                "over FedLGA's (paper: the CIFAR-100 text, 1.9x ... 1.1x).",
            ),
            claims=TAU_CLAIMS,
        ),
        TableSpec(
            "best-acc",
            "FedLGA (TCYB 2023) Fig. 5",
            "Best test accuracy",
            FEDLGA_DATASETS,
            _best_acc,
            plot=PlotSpec("bars", "best_acc"),
            notes=(
                "paper numbers are from the text (CIFAR-10 only): FedLGA 64.44% 'improves' by "
                "5.7, 3.8, ... %; the CSV's FedAvg 60.91% reads them as relative, the "
                "'FedLGA minus this' column as points.",
            ),
            claims=BEST_ACC_CLAIMS,
        ),
        TableSpec(
            "epochs",
            "FedLGA (TCYB 2023) Fig. 6",
            "Rounds to target against local epochs E",
            FEDLGA_DATASETS,
            _versus_methods("E", E_GRID, _epochs_overrides, _epochs_paper),
            plot=PlotSpec("versus", "rounds_to_target", xlabel="E (local epochs)"),
            notes=(
                "tau_max = E-1, rho = 0.5. The figure's E grid is not in the text (E=8 is); "
                "E=5 matches Table VI.",
            ),
            claims=EPOCHS_CLAIMS,
        ),
        TableSpec(
            "rho",
            "FedLGA (TCYB 2023) Fig. 7",
            "Rounds to target against the slow ratio rho",
            FEDLGA_DATASETS,
            _versus_methods(
                "rho", RHO_GRID, lambda r: {"rho": r, "tau_max": _tau_full}, _rho_paper
            ),
            plot=PlotSpec("versus", "rounds_to_target", xlabel="rho"),
            notes=("E = 5, tau_max = E-1; rho = 0.5 matches Table VI.",),
            claims=RHO_CLAIMS,
        ),
        TableSpec(
            "devices",
            "FedLGA (TCYB 2023) Fig. 8",
            "FedLGA against the number of devices N",
            ("cifar10", "cifar100"),
            _fedlga_ablation("N", N_GRID, "N", _n_paper),
            plot=PlotSpec("curves", "rounds_to_target", ("test_acc",), panels="dataset"),
            claims=DEVICES_CLAIMS,
        ),
        TableSpec(
            "sampled",
            "FedLGA (TCYB 2023) Fig. 9",
            "FedLGA against devices per round K",
            ("cifar10", "cifar100"),
            _fedlga_ablation("K", K_GRID, "K", _k_paper),
            plot=PlotSpec("curves", "rounds_to_target", ("test_acc",), panels="dataset"),
            claims=SAMPLED_CLAIMS,
        ),
        TableSpec(
            "imbalance",
            "FedLGA (TCYB 2023) Fig. 10",
            "FedLGA against data imbalance xi",
            ("cifar10", "cifar100"),
            _fedlga_ablation("xi", XI_GRID, IMBALANCE, lambda ds, v: None),
            plot=PlotSpec("curves", "rounds_to_target", ("test_acc",), panels="dataset"),
            claims=IMBALANCE_CLAIMS,
        ),
        TableSpec(
            "sfl",
            "SFL vs PFL (Li & Lyu) Table 3",
            "Test accuracy, sequential vs parallel FL",
            ("cifar10", "cinic10"),
            _sfl,
            seeds=SFL_SEEDS,
            plot=PlotSpec("curves", "last25_acc", ("test_acc",), panels="col"),
            notes=(
                "ours: mean of the last 25 evaluations (spec §5.2), mean and spread over "
                "seeds; the paper's +- (not compared) is likely the std of those 25 points.",
            ),
            claims=SFL_CLAIMS,
        ),
        TableSpec(
            "quadratic",
            "SFL vs PFL (Li & Lyu) Table 2 / Fig. 1",
            "Quadratic groups: heterogeneity and who converges closer",
            ("quadratic",),
            _quadratic,
            seeds=QUAD_SEEDS,
            plot=PlotSpec("curves", "final_dist", (QUAD_DISTANCE,), panels="row", logy=True),
            notes=(
                f"lr = {QUAD_LR}, R from the preset; the band in the plot is min-max over "
                "seeds (SFL's random order).",
            ),
            claims=QUADRATIC_CLAIMS,
        ),
        TableSpec(
            "r90",
            "FedSoftMax Table 3",
            "Rounds to 90% test accuracy (R90)",
            ("mnist", "fmnist"),
            _softmax_frameworks("r90", "Table3_R90", "R90_ci"),
            seeds=SOFTMAX_SEEDS,
            spread="ci95",
            plot=PlotSpec("curves", "r90", ("test_acc",), panels="col"),
            notes=(
                "R90 counts round 0 (before training) as index 0; spread: mean +- 1.96 "
                "std/sqrt(runs), as the paper's interval.",
            ),
            claims=R90_CLAIMS,
        ),
        TableSpec(
            "smoothness",
            "FedSoftMax Table 4",
            "Smoothness of the accuracy curve (lower = smoother)",
            ("mnist", "fmnist"),
            _softmax_frameworks("smoothness", "Table4_stability", "smoothness"),
            seeds=SOFTMAX_SEEDS,
            plot=PlotSpec("curves", "smoothness", ("local_acc", "test_acc"), panels="col"),
            notes=(
                "std(diff(c))/|mean(diff(c))| per run (spec §6.6), c = clients' local "
                "accuracy (local_acc; train_acc or test_acc when not recorded).",
            ),
            claims=SMOOTHNESS_CLAIMS,
        ),
        TableSpec(
            "temperature",
            "FedSoftMax Fig. 5",
            "FedSoftMax(T) against FedAvg, MNIST NIID",
            ("mnist", "fmnist"),
            _temperature,
            seeds=SOFTMAX_SEEDS,
            plot=PlotSpec("curves", "r90", ("test_acc",), panels="dataset"),
            claims=TEMPERATURE_CLAIMS,
        ),
        TableSpec(
            "participation",
            "FedSoftMax Fig. 7",
            "Clients' aggregation weights per round",
            ("mnist", "fmnist"),
            _participation,
            seeds=(0,),
            plot=PlotSpec("heatmap", "best_acc"),
            is_table=False,
        ),
        TableSpec(
            "stragglers",
            "FedProx (MLSys 2020) Fig. 1 (and Fig. 7)",
            "Final training loss and test accuracy with 0/50/90% stragglers",
            FEDPROX_DATASETS,
            _stragglers,
            plot=PlotSpec("curves", "final_train_loss", ("train_loss",), panels="col"),
            notes=(
                "FedAvg drops stragglers, FedProx keeps their partial work (the paper's "
                "setup); the paper reports FedProx +22% test accuracy on average at 90%.",
            ),
            claims=STRAGGLERS_CLAIMS,
        ),
        TableSpec(
            "dissimilarity",
            "FedProx (MLSys 2020) Fig. 2",
            "Training loss and gradient dissimilarity, no stragglers",
            SYNTHETIC,
            _dissimilarity,
            plot=PlotSpec(
                "curves", "final_train_loss", ("train_loss", DISSIMILARITY), panels="dataset"
            ),
            claims=DISSIMILARITY_CLAIMS,
        ),
        TableSpec(
            "adaptive-mu",
            "FedProx (MLSys 2020) Fig. 3",
            "Adaptive mu against fixed mu",
            ("synthetic-iid", "synthetic-1-1"),
            _adaptive_mu,
            plot=PlotSpec("curves", "final_train_loss", ("train_loss",), panels="dataset"),
            claims=ADAPTIVE_MU_CLAIMS,
        ),
        TableSpec(
            "data-stats",
            "FedProx (MLSys 2020) Table 1",
            "Statistics of the federated datasets",
            ("mnist", "femnist", "shakespeare", "sent140"),
            _data_stats,
            seeds=(),
            claims=DATA_STATS_CLAIMS,
        ),
    )
}


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
    from fedbench.assembly import apply_overrides
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
