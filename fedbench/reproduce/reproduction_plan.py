"""The plan of a reproduction: every run the chosen tables need at a scale, runs shared between
tables planned once, what the results folder or the shipped store already holds, the order and
the expected time of each table (docs/usage.md, "Reproducing a paper")."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from fedbench.data.locate import no_download_env
from fedbench.errors import FedbenchError
from fedbench.identity import run_id

SCALES = ("paper", "cut", "quick")
ORDERS = ("cheapest", "listed")
QUICK_ROUNDS = 2  # quick: the first seed, this many rounds: the pipeline end to end in minutes
# quick, lighter still where every run of a table stays valid and its FLOPs fall (the first
# that does): smaller devices (FedLGA's FMNIST tables: 7.5x less work a round), else one local
# epoch (FedSoftMax's 2, FedProx's 20) on 5 devices a round, else one local epoch
QUICK_LIGHTER = (
    ("num_clients=600",),
    ("local_epochs=1", "clients_per_round=5"),
    ("local_epochs=1",),
)
QUICK_DIR = "quick"  # quick runs live in RESULTS/quick, never beside paper-scale ones


def paper_of(spec) -> str:
    """The paper a table belongs to: its module's name (fedbench.papers.fedlga_readings ->
    fedlga)."""
    return spec.build.__module__.rsplit(".", 1)[-1].split("_")[0]


def paper_tables() -> dict[str, list]:
    """{paper: its tables of runs}, in registry order."""
    from fedbench.tables import TABLES

    out: dict[str, list] = {}
    for spec in TABLES.values():
        if spec.is_table and spec.seeds:
            out.setdefault(paper_of(spec), []).append(spec)
    return out


def choose_tables(papers, every: bool, tables: str | None, dataset: str | None) -> list:
    """The specs asked for; an unknown paper, table or dataset is one line."""
    known = paper_tables()
    if every and papers:
        raise FedbenchError("give papers or --all, not both")
    if not every and not papers and not tables:
        raise FedbenchError(f"reproduce what? name papers ({', '.join(known)}) or pass --all")
    for p in papers:
        if p not in known:
            raise FedbenchError(f"unknown paper {p!r}; choose one of: {', '.join(known)}")
    chosen = [s for p, specs in known.items() if every or not papers or p in papers for s in specs]
    if tables:
        names = [t.strip() for t in tables.split(",") if t.strip()]
        for name in names:
            if name not in {s.name for s in chosen}:
                raise FedbenchError(
                    f"unknown table {name!r} here; choose from: {', '.join(s.name for s in chosen)}"
                )
        chosen = [s for s in chosen if s.name in names]
    if dataset:
        chosen = [s for s in chosen if dataset in s.datasets]
        if not chosen:
            raise FedbenchError(f"no chosen table has dataset {dataset!r}")
    return chosen


@dataclass
class Unit:
    """One table on one dataset, and its runs."""

    spec: object
    dataset: str
    selection: object
    configs: list = field(default_factory=list)
    unavailable: dict = field(default_factory=dict)
    todo: list = field(default_factory=list)  # its runs not done (shared ones included)
    own: list = field(default_factory=list)  # the runs this unit runs (not an earlier one)
    done: int = 0
    busy: int = 0
    missing: str | None = None  # why its runs cannot run here (its data is not here, ...)
    label: str = "no data"  # the screen's word for missing
    seconds: float | None = 0.0  # expected time of `own` (None: some have no estimate)
    scale_note: str | None = None

    @property
    def name(self) -> str:
        return f"{self.spec.name} ({self.dataset})"

    @property
    def complete(self) -> bool:
        return bool(self.configs) and not self.todo and not self.busy

    @property
    def rounds(self) -> int:
        return sum(c.rounds for c in self.own)


@dataclass
class ReproPlan:
    units: list
    results: Path
    scale: str
    shipped: bool
    plan: object = None  # the sweep Plan of every unit's runs together
    estimate: object = None  # fedbench.sweep.rates.Estimate of every run to do
    rates: object = None  # fedbench.sweep.rates.Rates read once
    device: str = ""

    @property
    def runnable(self) -> list:
        return [u for u in self.units if u.own]

    @property
    def todo(self) -> list:
        return [c for u in self.units for c in u.own]


def results_folder(results: str | Path, scale: str) -> Path:
    return Path(results) / QUICK_DIR if scale == "quick" else Path(results)


def unit_selection(spec, dataset: str, scale: str, results: Path):
    """(selection, note) of a table on a dataset at a scale."""
    from fedbench.tables.selection import make_selection

    if scale == "quick":
        return quick_selection(spec, dataset, results), None
    if scale == "cut":
        sel = committed_selection(spec.name, dataset, str(results))
        if sel is not None:
            return sel, None
        note = "no committed table file: at the paper's scale"
        return make_selection(dataset, None, None, (), results), note
    return make_selection(dataset, None, None, (), results), None


def quick_selection(spec, dataset: str, results: Path):
    """The quick scale's selection: the first seed, QUICK_ROUNDS rounds, and the first of
    QUICK_LIGHTER that leaves every run of the table valid (a cell's own values win)."""
    from fedbench.sweep import table_configs
    from fedbench.tables.selection import make_selection

    base = (f"rounds={QUICK_ROUNDS}",)
    plain = make_selection(dataset, spec.seeds[:1], None, base, results)
    wanted = table_configs(spec, plain)[0]
    for lighter in QUICK_LIGHTER:
        sel = make_selection(dataset, spec.seeds[:1], None, base + lighter, results)
        configs = table_configs(spec, sel)[0]
        flops = _flops(configs)
        if len(configs) == len(wanted) and 0 < flops < math.inf and flops <= 0.6 * _flops(wanted):
            return sel
    return plain


def _flops(configs) -> float:
    """The configs' FLOPs (rates.round_flops; inf where one has none: not known lighter)."""
    from fedbench.sweep.rates import round_flops

    each = [round_flops(c) for c in configs]
    return math.inf if None in each else sum(f * c.rounds for f, c in zip(each, configs))


def committed_selection(name: str, dataset: str, results: str, folder: Path | None = None):
    """The selection of the committed table file (in `folder`, default tables/ of this source
    tree) of a table on a dataset: the cut scale its runs were made at; None when there is
    none."""
    from fedbench.tables.report import _made_by, parse_table_command

    folder = Path(__file__).resolve().parents[2] / "tables" if folder is None else folder
    for path in sorted(folder.glob(f"{name}*.md")) if folder.is_dir() else []:
        cmd = _made_by(path)
        parsed = parse_table_command(cmd, results) if cmd else None
        if not parsed or parsed[0] != name or "--calibrated" in parsed[2]:
            continue
        if parsed[1].dataset in (dataset, None):
            return parsed[1]
    return None


def build_plan(specs, dataset, scale, results, order="cheapest", on_error="skip",
               probe=(0.0, None)) -> ReproPlan:  # fmt: skip
    """Every unit's runs, planned together (fedbench.sweep.plan_sweep), then ordered; probe:
    (seconds, threads) of the probe before the estimate (fedbench.sweep.probe: None seconds
    its default, 0 none)."""
    from fedbench.identity import config_hash
    from fedbench.results.shipped_store import store_root
    from fedbench.sweep import dedupe, plan_sweep, table_configs

    folder = results_folder(results, scale)
    rp = ReproPlan([], folder, scale, shipped=scale != "quick" and store_root() is not None)
    for spec in specs:
        for ds in spec.variants(dataset):
            sel, note = unit_selection(spec, ds, scale, folder)
            configs, unavailable = table_configs(spec, sel)
            rp.units.append(Unit(spec, ds, sel, configs, unavailable, scale_note=note))
            if scale == "quick":
                _check_quick(rp.units[-1])
    everything = dedupe([c for u in rp.units for c in u.configs])
    with no_download_env():  # a plan reads what is here; the runs fetch their data themselves
        rp.plan = plan_sweep(everything, folder, on_error=on_error, shipped=rp.shipped)
    todo = {config_hash(c) for c in rp.plan.todo}
    busy = set(rp.plan.busy)
    for u in rp.units:
        u.todo = [c for c in u.configs if config_hash(c) in todo]
        u.busy = sum(run_id(c) in busy for c in u.configs)
        u.done = len(u.configs) - len(u.todo) - u.busy
    _check_data(rp.units)
    _order(rp, order, probe)
    return rp


def _check_quick(u: Unit) -> None:
    """A table whose cells fix their own rounds (sfl-fmnist-lr: 250) is not run at the quick
    scale: its runs would take the paper's time, and at fewer rounds the table would not find
    them."""
    longest = max((c.rounds for c in u.configs), default=0)
    if longest > QUICK_ROUNDS:
        u.missing = (f"its cells fix their rounds ({longest:,} a run), not the quick scale's "
                     f"{QUICK_ROUNDS}; --scale cut or paper runs it")  # fmt: skip
        u.label = "not quick"


def _check_data(units) -> None:
    """A unit whose data is not here is left out, with why (short: the dataset, why not, and
    the command that gets it). A reproduction never downloads: a download under a budget would
    spend it, and a machine with no network would fail every run of the unit."""
    from fedbench.resources import missing_data

    for u in units:
        if u.todo and not u.missing:
            errors, notes = missing_data(u.todo, download=False)
            first = (errors or notes or [None])[0]
            u.missing = _short(first, u.dataset, bool(errors)) if first else None


def _short(error: str, dataset: str, refused: bool = True) -> str:
    why = error.rsplit("[", 1)[-1].rstrip("]") if error.endswith("]") and refused else ""
    name = error.split(" not found", 1)[0] if " not found" in error else dataset
    return f"no {name} data here" + (f", {why}" if why else "") + f"; fedbench data get {name}"


def _order(rp: ReproPlan, order: str, probe=(0.0, None)) -> None:
    """Units done first, then (cheapest) the one whose runs not yet planned are expected to take
    least, again and again, so that a budget that ends leaves whole tables; (listed) in the
    registry's order. Units whose data is missing last. Each unit's `own` runs are set."""
    from fedbench.sweep.estimate import this_device
    from fedbench.sweep.probe import default_seconds, probe_plan
    from fedbench.sweep.rates import Rates

    rates = rp.rates = Rates.read(rp.results, rp.shipped)
    runnable = [c for u in rp.units if not u.missing for c in u.todo]
    rp.device = this_device(runnable[0]) if runnable else ""
    seconds = default_seconds() if probe[0] is None else probe[0]
    probe_plan(rates, runnable, rp.device, seconds, probe[1])
    planned: set[str] = set()
    left = [u for u in rp.units if not u.missing]
    ordered = []
    while left:
        costs = [(_cost(u, planned, rates, rp.device), i) for i, u in enumerate(left)]
        pick = min(costs)[1] if order == "cheapest" else 0
        u = left.pop(pick)
        u.own = [c for c in u.todo if run_id(c) not in planned]
        u.seconds = _seconds(u.own, rates, rp.device)
        planned.update(run_id(c) for c in u.own)
        ordered.append(u)
    rp.units = ordered + [u for u in rp.units if u.missing]
    rp.estimate = rates.estimate(rp.todo, rp.device) if rp.todo else None


def _cost(u: Unit, planned: set, rates, device: str) -> tuple:
    own = [c for c in u.todo if run_id(c) not in planned]
    seconds = _seconds(own, rates, device)
    return (bool(own), math.inf if seconds is None else seconds, len(own))


def _seconds(configs, rates, device: str) -> float | None:
    """Expected seconds of the configs; None when any has no estimate."""
    if not configs:
        return 0.0
    guess = rates.estimate(configs, device)
    return guess.seconds if guess.timed == len(configs) else None


def round_seconds(rp: ReproPlan) -> float:
    """The longest expected round of the runs to do (how early a deadline's stop is asked)."""
    longest = 0.0
    for c in rp.todo:
        longest = max(longest, rp.rates.round_rate(c, rp.device) or 0.0)
    return longest
