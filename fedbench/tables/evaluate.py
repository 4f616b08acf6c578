"""Evaluating a paper table: each cell's configs are matched to finished runs by their
canonical config hash (not by folder name), reduced over seeds (mean and min–max or 95% CI) and
set beside the paper's number; then the table's claims are checked over the cells."""

from __future__ import annotations

import math
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fedbench.errors import FedbenchError
from fedbench.identity import config_hash
from fedbench.results import RunIndex
from fedbench.tables.claims import ClaimResult, evaluate_claims
from fedbench.tables.metrics import METRICS
from fedbench.tables.paper_values import PaperValue, lookup
from fedbench.tables.spec import Cell, TableSpec, cell_config

SPREADS = ("minmax", "ci95")


@dataclass
class Selection:
    """What the user chose on top of a table spec; echoed in the fill-in commands."""

    dataset: str | None = None
    seeds: tuple[int, ...] | None = None
    preset: str | None = None
    sets: dict[str, Any] = field(default_factory=dict)
    results: str = "results"
    # the user's selection when this one is at a calibrated value: commands echo it + --calibrated
    calibrated_from: Selection | None = None

    def options(self) -> str:
        if self.calibrated_from is not None:
            return " ".join(x for x in (self.calibrated_from.options(), "--calibrated") if x)
        out = []
        if self.preset:
            out.append(f"--preset {self.preset}")
        if self.seeds is not None:
            out.append("--seeds " + ",".join(str(s) for s in self.seeds))
        out += [f"--set {shlex.quote(f'{k}={v}')}" for k, v in self.sets.items()]
        if str(self.results) != "results":
            out.append(f"--results {shlex.quote(str(self.results))}")
        return " ".join(out)


@dataclass
class CellResult:
    cell: Cell
    status: str = "ok"  # ok | partial | missing | unavailable
    mean: float | str | None = None
    low: float | None = None
    high: float | None = None
    n: int = 0  # finished runs found
    expected: int = 0
    not_reached: int = 0  # runs whose metric is inf (target never reached)
    cap: int | None = None  # rounds run by those, for "> cap"
    diverged: int = 0
    reached: int = 0  # runs with a finite value
    note: str = ""
    paper: PaperValue | None = None
    records: list = field(default_factory=list)  # (seed, RunRecord) of the finished runs

    @property
    def diff(self) -> float | str | None:
        if self.paper is None or self.mean is None:
            return None
        p = self.paper.value
        if isinstance(self.mean, str) or isinstance(p, str):
            return "same" if str(self.mean) == str(p) else "differs"
        if math.isinf(self.mean):
            return None
        return self.mean - float(p)


@dataclass
class TableResult:
    spec: TableSpec
    selection: Selection
    spread: str
    cells: list[CellResult]
    problems: list[str] = field(default_factory=list)
    devices: set[str] = field(default_factory=set)
    notes: list[str] = field(default_factory=list)  # old-version records used, copies
    claims: list[ClaimResult] = field(default_factory=list)

    def cell(self, dataset: str, row: str, col: str) -> CellResult | None:
        for c in self.cells:
            if (c.cell.dataset, c.cell.row, c.cell.col) == (dataset, row, col):
                return c
        return None

    @property
    def missing_datasets(self) -> list[str]:
        seen: list[str] = []
        for c in self.cells:
            if c.status in ("missing", "partial") and c.cell.kind == "runs":
                if c.cell.dataset not in seen:
                    seen.append(c.cell.dataset)
        return seen

    def _records(self) -> dict:
        """The table's distinct runs (cells may share one), by run id."""
        return {rec.meta.get("run_id", id(rec)): rec for c in self.cells for _, rec in c.records}

    def run_count(self) -> int:
        return len(self._records())

    def compute_line(self) -> str:
        """How long the table's runs took to make: their count and summed wall time."""
        from datetime import datetime

        seen: dict[str, float] = {}
        for key, rec in self._records().items():
            m = rec.meta
            try:
                wall = (
                    datetime.fromisoformat(m["ended"]) - datetime.fromisoformat(m["started"])
                ).total_seconds()
            except (KeyError, TypeError, ValueError):
                wall = float(rec.summary.get("total_seconds") or 0.0)
            seen[key] = wall
        total = sum(seen.values())
        return f"compute: {len(seen)} runs, {total / 60:.1f} min of run wall time (summed)"

    def fill_commands(self) -> list[str]:
        opts = self.selection.options()
        return [
            f"fedbench sweep --table {self.spec.name} --dataset {ds}" + (f" {opts}" if opts else "")
            for ds in self.missing_datasets
        ]

    def unavailable(self) -> dict[str, int]:
        reasons: dict[str, int] = {}
        for c in self.cells:
            if c.status == "unavailable":
                reasons[c.note] = reasons.get(c.note, 0) + 1
        return reasons


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
) -> TableResult:
    """Match the spec's cells to the runs under `results` (or in `index`, read once for many
    tables) and reduce them."""
    sel = selection or Selection(results=str(results))
    spread = spread or spec.spread
    cells = spec.cells(sel.dataset)
    needs_runs = any(c.kind == "runs" for c in cells)
    if index is None:
        index = RunIndex(results, on_error=on_error, must_exist=needs_runs, strict=strict)
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
