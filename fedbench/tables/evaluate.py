"""Evaluating a paper table: each cell's configs are matched to finished runs by their
canonical config hash (not by folder name), reduced over seeds (mean and min–max or 95% CI) and
set beside the paper's number; then the table's claims are checked over the cells."""

from __future__ import annotations

import math
from pathlib import Path

from fedbench.errors import FedbenchError
from fedbench.identity import config_hash
from fedbench.results import RunIndex
from fedbench.tables.decision import t_interval
from fedbench.tables.metrics import METRICS
from fedbench.tables.paper_values import lookup
from fedbench.tables.result import CellResult, Selection, TableResult
from fedbench.tables.spec import TableSpec, cell_config
from fedbench.tables.verdicts import evaluate_claims

SPREADS = ("minmax", "ci95")


def _reduce(values: list[float], spread: str) -> tuple[float, float | None, float | None]:
    """Mean and spread over seeds: min-max, or the Student-t 95 % interval of the mean."""
    mean = sum(values) / len(values)
    if len(values) < 2:
        return mean, None, None
    if spread == "ci95":
        return t_interval(values)
    return mean, min(values), max(values)


_UNREADABLE = object()  # a run whose metric could not be read (reported; not counted)


def _read_metric(metric, rec, index: RunIndex):
    """One run's value of the metric (None: no value), or _UNREADABLE (reported)."""
    cache: dict = {}

    def rounds(cols):
        key = tuple(cols)
        if key not in cache:
            cache[key] = index.rounds(rec, list(cols))
        return cache[key]

    try:
        v = metric.fn(rec.summary, rounds)
        return v if v is None else float(v)
    except Exception as e:  # missing columns, wrong types in run.json or rounds.parquet
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        index._problem(f"{rec.run_dir}: cannot read {metric.label} ({first}); rerun it")
        return _UNREADABLE


def _add_seed(res: CellResult, seed: int, v: float, metric, rec) -> None:
    """A seed's value into the cell; one that never reached the target is censored at its
    cap ("> R": per_round x its rounds run, or the seconds it ran), not dropped."""
    if math.isinf(v):
        res.not_reached += 1
        cap = metric.per_round * float(rec.summary.get(metric.cap_key) or 0)
        res.cap = max(res.cap or 0, int(cap))
        res.seed_values[seed] = float(cap)
        res.censored.add(seed)
    else:
        res.seed_values[seed] = v
        res.reached += 1


def _run_cell(
    res: CellResult, seeds, index: RunIndex, sel: Selection, spread: str, devices: set
) -> None:
    cell = res.cell
    metric = METRICS[cell.metric]
    res.expected = len(seeds)
    failures: list[str] = []
    nodata = 0
    for seed in seeds:
        try:
            cfg = cell_config(cell, seed, sel.preset, sel.sets)
        except FedbenchError as e:
            res.status, res.note = "unavailable", str(e)
            return
        rec = index.finished(config_hash(cfg))
        if rec is None:
            other = index.find(config_hash(cfg))
            if other is not None and other.status == "failed":
                failures.append(other.meta.get("error", "failed"))
            continue
        if rec.meta.get("device_name"):
            devices.add(rec.meta["device_name"])
        if rec.status == "diverged":
            res.diverged += 1
            if not metric.diverged_counts:
                res.n += 1
                res.records.append((seed, rec))
                continue
        v = _read_metric(metric, rec, index)
        if v is _UNREADABLE:
            continue
        res.n += 1
        res.records.append((seed, rec))
        if v is None or math.isnan(v):
            nodata += 1
            continue
        _add_seed(res, seed, v, metric, rec)
    if res.n == 0:
        res.status = "missing"
        if failures:
            res.note = f"failed: {failures[0]}"
        return
    res.status = "ok" if res.n == res.expected else "partial"
    if res.reached:  # censored seeds enter at their caps: the mean is then a lower bound
        res.mean, res.low, res.high = _reduce(list(res.seed_values.values()), spread)
    elif res.not_reached:
        res.mean = math.inf
    notes = [f"{res.diverged} diverged"] if res.diverged else []
    if nodata:
        notes.append(f"{nodata} without {metric.label}")
    res.note = ", ".join(notes)


def _data_cell(res: CellResult, sel: Selection, cache: dict) -> None:
    from fedbench.assembly import apply_overrides, validate_config
    from fedbench.presets import get_preset

    cell = res.cell
    try:
        cfg = get_preset(sel.preset or cell.preset)
        if sel.sets:
            cfg = apply_overrides(cfg, sel.sets)
        cfg = validate_config(cfg)
        key = config_hash(cfg)
        if key not in cache:  # the split's statistics need the arrays only, no tensors
            from fedbench.data import load_arrays, split_stats

            _, train_y, _, _, parts, _, info, _ = load_arrays(cfg)
            cache[key] = split_stats(train_y, parts, info)
        res.mean = cache[key][cell.data_stat]
        res.n = res.expected = 1
    except FedbenchError as e:
        res.status, res.note = "unavailable", str(e)


def evaluate_table(
    spec: TableSpec,
    results: Path | str = "results",
    selection: Selection | None = None,
    on_error: str = "fail",
    spread: str | None = None,
    strict: bool = False,
    index: RunIndex | None = None,
    shipped=True,
) -> TableResult:
    """Match the spec's cells to the runs under `results` and in the shipped store (or in
    `index`, read once for many tables) and reduce them."""
    sel = selection or Selection(results=str(results))
    spread = spread or spec.spread
    cells = spec.cells(sel.dataset)
    needs_runs = any(c.kind == "runs" for c in cells)
    if index is None:
        index = RunIndex(
            results, on_error=on_error, must_exist=needs_runs, strict=strict, shipped=shipped
        )
    out = TableResult(spec, sel, spread, [CellResult(c) for c in cells])
    data_cache: dict = {}
    for res in out.cells:
        c = res.cell
        if c.kind == "runs":
            seeds = c.seeds or (sel.seeds if sel.seeds is not None else spec.seeds)
            _run_cell(res, seeds, index, sel, spread, out.devices)
        elif c.kind == "const":
            res.mean, res.n, res.expected = c.const, 1, 1
        elif c.kind == "data":
            _data_cell(res, sel, data_cache)
    for res in out.cells:
        c = res.cell
        if c.kind == "derived":
            srcs = [out.cell(c.dataset, r, col) for r, col in c.derived.sources]
            means = [
                s.mean if s is not None and s.status in ("ok", "partial") else None for s in srcs
            ]
            # a mean with censored seeds is a bound, not a number to compute with
            means = [
                None
                if s is None or s.not_reached or (isinstance(m, float) and math.isinf(m))
                else m
                for s, m in zip(srcs, means)
            ]
            res.mean = c.derived.fn(*means)
            res.status = "ok" if res.mean is not None else "missing"
            na = [s for s in srcs if s is not None and s.status == "unavailable"]
            if res.mean is None and na:
                res.status, res.note = "unavailable", na[0].note
        if c.paper is not None:
            res.paper = lookup(c.paper, c.dataset)
    out.problems = index.problems
    out.notes = index.notes
    out.claims = evaluate_claims(out)
    return out


def absent_data(result: TableResult) -> list[str]:
    """One line for a table whose data cells could not be computed because their data is not
    here (a `not found` note), e.g. for `table report`, which never downloads; [] otherwise."""
    absent = {
        res.cell.dataset
        for res in result.cells
        if res.cell.kind == "data" and res.status == "unavailable" and "not found" in res.note
    }
    if not absent:
        return []
    names = ", ".join(sorted(absent))
    return [
        f"{result.spec.name}: not evaluated, its data is not here ({names}); get it with "
        f"`fedbench data get {' '.join(sorted(absent))}`, or point $FEDBENCH_DATA at it"
    ]
