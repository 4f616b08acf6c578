"""Calibration of a hyperparameter a paper leaves unstated, against one anchor cell of its table.

`fedbench calibrate --table tau --dataset fmnist --anchor fedavg --param lr` searches the value of
`lr` at which the anchor cell (FedAvg's rounds to 65 % in FedLGA Table VI) equals the paper's
value (116), then saves the fit to results/calibration/<table>-<dataset>.json. `fedbench
sweep/table/plot --calibrated` run and render the whole table at the fitted value: the anchor is
then a fit, every other cell a prediction.

The search (`search`), on a log scale:
- bracket: from the anchor's own value x0 (the preset's), step by a factor `step` towards the
  target until the metric crosses it. `direction=auto` walks the way that brings the metric
  closer to the target; where the metric is flat there (FedAvg's rounds do not change between lr
  1e-2 and 3e-4: client sampling decides the round), it walks down, the way a smaller lr slows
  training. A crossing not found within `max_steps` steps is a one-line error naming the points;
- bisection at the geometric mean of the bracket, values rounded to `digits` significant digits
  (a run's identity is its config, so a fitted 6.12e-06 is one reproducible run, not a float
  accident), until the bracket is within a factor 1 + rtol, a point lies within `tol` of the
  target, or `max_points` values were tried.
Noise and non-monotone metrics: each point is the mean over `seeds` (default: the table's) and
a seed that never reaches the target counts as infinitely many rounds. Bisection keeps one end on
each side of the target, so even a noisy, non-monotone metric ends at *a* crossing inside the
bracket (another crossing outside it is not looked for). The value kept is the point whose mean
is nearest the target among all points tried (ties: the last tried), with each seed's value
recorded, so the spread at the fit is visible.
Every point is a set of normal runs in results/, run through the sweep machinery (claimed,
resumable, cached by config): calibrating again, or with more points, reuses them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from typing import Any

from fedbench.atomic import atomic_write_json, refuse_links
from fedbench.errors import FedbenchError
from fedbench.identity import canonical_method_params, config_hash, run_id
from fedbench.tables.calibration import calibration_path, one_dataset

DIRECTIONS = ("auto", "up", "down")


@dataclass
class Point:
    value: float
    mean: float  # over seeds; inf: some seed never reached the target (or diverged)
    per_seed: list[float] = field(default_factory=list)
    run_ids: list[str] = field(default_factory=list)


@dataclass
class SearchResult:
    best: Point
    points: list[Point]  # in the order tried
    bracket: tuple[float, float] | None  # the last (lo, hi) with the target between them


def _round(x: float, digits: int) -> float:
    return float(f"{x:.{digits}g}")


def search(
    evaluate: Callable[[float], Point],
    x0: float,
    target: float,
    step: float = 10.0,
    rtol: float = 0.05,
    tol: float = 0.0,
    max_points: int = 12,
    max_steps: int = 6,
    direction: str = "auto",
    digits: int = 3,
) -> SearchResult:
    """Find x > 0 with evaluate(x).mean ~ target: log-scale bracket, then bisection (module doc)."""
    if not x0 > 0 or not step > 1:
        raise FedbenchError(f"calibrate needs a start value > 0 and step > 1, got {x0}, {step}")
    if direction not in DIRECTIONS:
        raise FedbenchError(f"direction must be one of {', '.join(DIRECTIONS)}, got {direction!r}")
    seen: dict[float, Point] = {}
    order: list[Point] = []

    def f(x: float) -> Point:
        x = _round(x, digits)
        if x not in seen:
            if len(order) >= max_points:
                raise _Budget
            seen[x] = evaluate(x)
            order.append(seen[x])
        return seen[x]

    def side(p: Point) -> int:
        return 0 if abs(p.mean - target) <= tol else (1 if p.mean > target else -1)

    def gap(p: Point) -> float:
        return abs(p.mean - target)

    bracket, out_of_budget = None, False
    try:
        p0 = f(x0)
        if side(p0) != 0:
            bracket = _bracket(f, side, gap, p0, step, max_steps, direction)
            if bracket is not None:
                bracket = _bisect(f, side, bracket, rtol, digits, max_points, order)
    except _Budget:
        out_of_budget = True
    if bracket is None and all(side(p) != 0 for p in order):
        tried = ", ".join(f"{p.value:g} -> {p.mean:g}" for p in order)
        why = (
            f"after {max_points} values (--max-points)"
            if out_of_budget
            else f"within {max_steps} steps of x{step:g} from {x0:g}"
        )
        raise FedbenchError(
            f"no value crosses the target {target:g} {why} (tried {tried}); "
            "pass --start, --step, --direction or --max-points"
        )
    best = min(reversed(order), key=gap)  # ties: the last tried
    values = (bracket[0].value, bracket[1].value) if bracket else None
    return SearchResult(best, order, values)


class _Budget(Exception):
    """max_points values tried: stop where the search is."""


def _bracket(f, side, gap, p0, step, max_steps, direction):
    """(p_a, p_b) on opposite sides of the target, walking from p0 by factors of `step`."""
    s0 = side(p0)
    prev, sign = p0, 1 if direction == "up" else -1
    if direction == "auto":
        down = f(p0.value / step)
        if side(down) != s0:
            return (down, p0)
        if gap(down) > gap(p0):  # farther down: walk up; closer or flat: on down
            sign = 1
        else:
            prev = down
    for _ in range(max_steps):
        nxt = f(prev.value * step**sign)
        if side(nxt) != s0:
            return (nxt, prev)
        prev = nxt
    return None


def _bisect(f, side, bracket, rtol, digits, max_points, order):
    """The bracket (lo, hi) shrunk by log-scale bisection, one end on each side of the target."""
    lo, hi = sorted(bracket, key=lambda p: p.value)
    while hi.value / lo.value > 1 + rtol and len(order) < max_points:
        mid = _round(math.sqrt(lo.value * hi.value), digits)
        if mid in (lo.value, hi.value):  # no value between them at this precision
            break
        p = f(mid)
        if side(p) == 0:
            break
        if side(p) == side(lo):
            lo = p
        else:
            hi = p
    return lo, hi


# ---------------------------------------------------------------- the anchor cell and its runs


def anchor_cell(spec, dataset: str, anchor: str, col: str | None = None):
    """The runs cell of `dataset` whose method (or row label) is `anchor` and which has a
    paper value (or the column `col`)."""
    from fedbench.tables import lookup

    cands = []
    for c in spec.cells(dataset):
        if c.kind != "runs" or (col is not None and c.col != col):
            continue
        method = dict(c.overrides).get("method")
        if anchor.lower() in (str(method).lower(), c.row.lower()):
            cands.append(c)
    with_paper = [c for c in cands if c.paper is not None and lookup(c.paper, dataset) is not None]
    pick = (with_paper or cands)[:1]
    if not pick:
        rows = sorted({c.row for c in spec.cells(dataset) if c.kind == "runs"})
        raise FedbenchError(
            f"table {spec.name} ({dataset}) has no runs cell for anchor {anchor!r}"
            + (f" in column {col!r}" if col else "")
            + f"; rows: {', '.join(rows)}"
        )
    return pick[0]


def paper_target(cell) -> float:
    from fedbench.tables import lookup

    pv = lookup(cell.paper, cell.dataset) if cell.paper is not None else None
    if pv is None or not isinstance(pv.value, float):
        raise FedbenchError(
            f"cell {cell.row} / {cell.col} has no numeric paper value; pass --target"
        )
    return pv.value


def start_value(cell, seed: int, sel, param: str) -> float:
    """The anchor's current value of `param` (config field or method parameter), > 0."""
    from fedbench.tables import cell_config

    if param in dict(cell.overrides):
        raise FedbenchError(
            f"cell {cell.row} / {cell.col} fixes {param} itself; calibrate a parameter the "
            "table leaves to the preset"
        )
    cfg = cell_config(cell, seed, sel.preset, sel.sets)
    v = getattr(cfg, param, None)
    if v is None:
        v = canonical_method_params(cfg).get(param)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0:
        raise FedbenchError(
            f"calibrate searches a positive number on a log scale; {param} is {v!r} here"
        )
    return float(v)


def evaluate_point(
    cell, sel, param: str, x: float, seeds, executor, quiet: bool, run_plan=None
) -> Point:
    """Run (or find) the anchor's runs at param = x, one per seed; reduce each with the cell's
    metric. A seed that never reaches the target or diverges counts as inf (-inf for a metric
    where higher is better). run_plan(plan, label): how to run them (the CLI's: the sweep's
    progress lines, summary and signal handling); default run_sweep with `executor`."""
    from fedbench.results import RunIndex
    from fedbench.sweep import plan_sweep, run_sweep
    from fedbench.tables import METRICS, cell_config

    sets = {**sel.sets, param: x}
    configs = [cell_config(cell, s, sel.preset, sets) for s in seeds]
    plan, label = plan_sweep(configs, sel.results), f"{param}={x:g}"
    if run_plan is not None:
        run_plan(plan, label)
    else:
        run_sweep(plan, sel.results, executor, quiet, label)
    index = RunIndex(sel.results, on_error="skip", must_exist=False)
    metric = METRICS[cell.metric]
    worst = -math.inf if metric.higher_is_better else math.inf
    values = []
    for cfg in configs:
        rec = index.finished(config_hash(cfg))
        if rec is None:
            other = index.find(config_hash(cfg))
            why = other.meta.get("error", other.status) if other is not None else "not run"
            raise FedbenchError(f"calibration run {run_id(cfg)} did not finish ({why})")
        v = None
        if rec.status != "diverged":
            v = metric.fn(rec.summary, lambda cols, rec=rec: index.rounds(rec, list(cols)))
        values.append(worst if v is None or math.isinf(v) else float(v))
    mean = sum(values) / len(values)
    return Point(x, mean, values, [run_id(c) for c in configs])


def calibrate(
    spec,
    sel,
    anchor: str,
    param: str = "lr",
    col: str | None = None,
    target: float | None = None,
    start: float | None = None,
    executor=None,
    quiet: bool = False,
    run_plan=None,
    **search_kw: Any,
) -> dict:
    """Fit `param` on the anchor cell, save the fit (atomically) and return it."""

    if param in sel.sets:
        raise FedbenchError(f"--set {param}=... fixes the parameter calibrate is to search")
    dataset = one_dataset(spec, sel.dataset)
    if spec.calibrated_by:
        raise FedbenchError(
            f"table {spec.name} takes the fit of table {spec.calibrated_by} (--calibrated); "
            f"run: fedbench calibrate --table {spec.calibrated_by} --dataset {dataset} ..."
        )
    cell = anchor_cell(spec, dataset, anchor, col)
    source = "paper" if target is None else "given"
    target = paper_target(cell) if target is None else float(target)
    seeds = tuple(sel.seeds if sel.seeds is not None else (cell.seeds or spec.seeds))
    x0 = start if start is not None else start_value(cell, seeds[0], sel, param)
    res = search(
        lambda x: evaluate_point(cell, sel, param, x, seeds, executor, quiet, run_plan),
        x0,
        target,
        **search_kw,
    )
    fit = {
        "table": spec.name,
        "dataset": dataset,
        "anchor": {"row": cell.row, "col": cell.col, "metric": cell.metric},
        "param": param,
        "value": res.best.value,
        "target": target,
        "target_source": source,
        "achieved": res.best.mean,
        "achieved_per_seed": res.best.per_seed,
        "seeds": list(seeds),
        "preset": sel.preset,
        "sets": {k: str(v) for k, v in sel.sets.items()},
        "bracket": list(res.bracket) if res.bracket else None,
        "points": [asdict(p) for p in res.points],
        "runs_spent": sum(len(p.run_ids) for p in res.points),
        "fitted": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    path = calibration_path(sel.results, spec.name, dataset)
    refuse_links(path, sel.results)  # never written through a planted link
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_json(path, fit)
    fit["path"] = str(path)
    return fit
