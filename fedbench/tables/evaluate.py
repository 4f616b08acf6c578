"""Evaluating a paper table: each cell's configs are matched to finished runs by their
canonical config hash (not by folder name), reduced over seeds (mean and min–max or 95% CI) and
set beside the paper's number; then the table's claims are checked over the cells."""

from __future__ import annotations

import math
from pathlib import Path

from fedbench.errors import FedbenchError
from fedbench.identity import config_hash
from fedbench.results import RunIndex
from fedbench.tables.metrics import METRICS
from fedbench.tables.paper_values import lookup
from fedbench.tables.result import CellResult, Selection, TableResult
from fedbench.tables.spec import TableSpec, cell_config
from fedbench.tables.verdicts import evaluate_claims

SPREADS = ("minmax", "ci95")


def _reduce(values: list[float], spread: str) -> tuple[float, float | None, float | None]:
    mean = sum(values) / len(values)
    if len(values) < 2:
        return mean, None, None
    if spread == "ci95":
        var = sum((v - mean) ** 2 for v in values) / (len(values) - 1)
        h = 1.96 * math.sqrt(var) / math.sqrt(len(values))
        return mean, mean - h, mean + h
    return mean, min(values), max(values)


def _run_cell(
    res: CellResult, seeds, index: RunIndex, sel: Selection, spread: str, devices: set
) -> None:
    cell = res.cell
    metric = METRICS[cell.metric]
    res.expected = len(seeds)
    values: list[float] = []
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
        res.n += 1
        res.records.append((seed, rec))
        if rec.meta.get("device_name"):
            devices.add(rec.meta["device_name"])
        if rec.status == "diverged":
            res.diverged += 1
            if not metric.diverged_counts:
                continue
        cache: dict = {}

        def rounds(cols, rec=rec, cache=cache):
            key = tuple(cols)
            if key not in cache:
                cache[key] = index.rounds(rec, list(cols))
            return cache[key]

        try:
            v = metric.fn(rec.summary, rounds)
            v = v if v is None else float(v)
        except Exception as e:  # missing columns, wrong types in run.json or rounds.parquet
            first = (str(e).strip().splitlines() or [type(e).__name__])[0]
            index._problem(f"{rec.run_dir}: cannot read {metric.label} ({first}); rerun it")
            res.n -= 1
            res.records.pop()
            continue
        if v is None or (isinstance(v, float) and math.isnan(v)):
            nodata += 1
            continue
        if math.isinf(v):
            res.not_reached += 1
            res.cap = max(res.cap or 0, int(rec.summary.get("rounds_run") or 0))
            continue
        values.append(float(v))
        res.reached += 1
    if res.n == 0:
        res.status = "missing"
        if failures:
            res.note = f"failed: {failures[0]}"
        return
    res.status = "ok" if res.n == res.expected else "partial"
    if values:
        res.mean, res.low, res.high = _reduce(values, spread)
    elif res.not_reached:
        res.mean = math.inf
    notes = []
    if res.diverged:
        notes.append(f"{res.diverged} diverged")
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
            means = [None if isinstance(m, float) and math.isinf(m) else m for m in means]
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
