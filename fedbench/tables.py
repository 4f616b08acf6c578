"""Tables from results: rendering to the terminal (rich) and to files (md, csv, latex).

Paper tables (fedbench/paper_tables.py specs) are evaluated here: each cell's configs are
matched to finished runs by their canonical config hash (not by folder name), reduced over
seeds (mean and min–max or 95% CI) and set beside the paper's number.
"""

from __future__ import annotations

import math
import shlex
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pandas as pd

import fedbench
from fedbench.assembly import validate_config
from fedbench.errors import FedbenchError
from fedbench.identity import config_hash
from fedbench.paper_tables import (
    METRICS,
    Cell,
    Claim,
    PaperValue,
    TableSpec,
    Verdict,
    cell_config,
    lookup,
)
from fedbench.results import RunIndex

SUMMARY_COLUMNS = [
    "run_id",
    "status",
    "method",
    "method_params",
    "dataset",
    "seed",
    "rounds_run",
    "best_acc",
    "final_acc",
    "rounds_to_target",
    "seconds_to_target",
    "mean_round_seconds",
]
FORMATS = ("md", "csv", "latex")


def fmt_cell(v) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def header_lines(command: str, device: str | None = None, date: str | None = None) -> list[str]:
    date = date or datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [f"made by: {command}", f"fedbench {fedbench.__version__}, {date}"]
    if device:
        lines.append(f"device: {device}")
    return lines


def render_file(df: pd.DataFrame, fmt: str, header: list[str]) -> str:
    from tabulate import tabulate

    shown = df.map(fmt_cell) if hasattr(df, "map") else df.applymap(fmt_cell)
    if fmt == "csv":
        return "".join(f"# {h}\n" for h in header) + df.to_csv(index=False)
    if fmt == "md":
        body = tabulate(shown, headers="keys", tablefmt="github", showindex=False)
        return "".join(f"<!-- {h} -->\n" for h in header) + body + "\n"
    if fmt == "latex":
        body = tabulate(shown, headers="keys", tablefmt="latex_booktabs", showindex=False)
        return "".join(f"% {h}\n" for h in header) + body + "\n"
    raise ValueError(fmt)


def write_table(df: pd.DataFrame, name: str, fmt: str, out_dir: Path, header: list[str]) -> Path:
    ext = {"md": "md", "csv": "csv", "latex": "tex"}[fmt]
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{name}.{ext}"
    path.write_text(render_file(df, fmt, header))
    return path


def console():
    """rich Console for tables: the terminal's width, or wide when piped (no squeezed cells)."""
    from rich.console import Console

    c = Console()
    return c if c.is_terminal else Console(width=240)


def rich_table(df: pd.DataFrame, title: str | None = None):
    from rich.table import Table

    table = Table(title=title)
    for col in df.columns:
        table.add_column(str(col), justify="right" if df[col].dtype.kind in "fi" else "left")
    for _, row in df.iterrows():
        table.add_row(*(fmt_cell(v) for v in row))
    return table


# ---------------------------------------------------------------- paper tables

SPREADS = ("minmax", "ci95")


@dataclass
class Selection:
    """What the user chose on top of a table spec; echoed in the fill-in commands."""

    dataset: str | None = None
    seeds: tuple[int, ...] | None = None
    preset: str | None = None
    sets: dict[str, Any] = field(default_factory=dict)
    results: str = "results"

    def options(self) -> str:
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

    def compute_line(self) -> str:
        """How long the table's runs took to make: their count and summed wall time."""
        from datetime import datetime

        seen: dict[str, float] = {}
        for c in self.cells:
            for _, rec in c.records:
                m = rec.meta
                try:
                    wall = (
                        datetime.fromisoformat(m["ended"]) - datetime.fromisoformat(m["started"])
                    ).total_seconds()
                except (KeyError, TypeError, ValueError):
                    wall = float(rec.summary.get("total_seconds") or 0.0)
                seen[m.get("run_id", id(rec))] = wall
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
    from fedbench.assembly import apply_overrides
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


# ---------------------------------------------------------------- the papers' claims


class CellView:
    """One dataset's cells of a table result, as claim checks read them."""

    def __init__(self, result: TableResult, dataset: str):
        self.dataset = dataset
        self._by = {(c.cell.row, c.cell.col): c for c in result.cells if c.cell.dataset == dataset}
        self.cols = {col for _, col in self._by}

    def row(self, row) -> str:
        return row(self.dataset) if callable(row) else row

    def _get(self, row, col) -> CellResult | None:
        return self._by.get((self.row(row), col))

    def mean(self, row, col):
        c = self._get(row, col)
        if c is None or c.status in ("missing", "unavailable") or c.mean is None:
            return None
        return c.mean

    def paper(self, row, col) -> PaperValue | None:
        c = self._get(row, col)
        return None if c is None else c.paper


@dataclass
class ClaimResult:
    claim: Claim
    dataset: str
    verdict: Verdict

    @property
    def status(self) -> str:
        return {True: "reproduced", False: "not reproduced", None: "n/a"}[self.verdict.holds]


def evaluate_claims(result: TableResult) -> list[ClaimResult]:
    datasets = list(dict.fromkeys(c.cell.dataset for c in result.cells))
    out = []
    for ds in datasets:
        view = CellView(result, ds)
        for claim in result.spec.claims:
            if claim.datasets is None or ds in claim.datasets:
                out.append(ClaimResult(claim, ds, claim.check(view)))
    return out


def claims_summary(result: TableResult) -> str:
    decided = [c for c in result.claims if c.verdict.holds is not None]
    held = sum(bool(c.verdict.holds) for c in decided)
    na = len(result.claims) - len(decided)
    return f"claims: {held} of {len(decided)} reproduced" + (
        f" ({na} n/a: cells without a number)" if na else ""
    )


def claim_lines(result: TableResult) -> list[str]:
    """'claims: k of n reproduced', then one line per claim: verdict, text, ours vs paper."""
    if not result.claims:
        return []
    many = len({c.dataset for c in result.claims}) > 1
    lines = [claims_summary(result)]
    for c in result.claims:
        where = f"[{c.dataset}] " if many else ""
        said = c.verdict.paper or c.claim.source
        paper = f"; paper: {said}" if said else ""
        lines.append(f"  {c.status}: {where}{c.claim.text} (ours: {c.verdict.ours}{paper})")
    return lines


# ---------------------------------------------------------------- rendering paper tables


def _digits(res: CellResult) -> int:
    if res.cell.kind == "data":  # counts, and per-device means/stds of counts
        return 0 if isinstance(res.mean, (int, float)) and float(res.mean).is_integer() else 1
    return METRICS[res.cell.metric].digits if res.cell.metric in METRICS else 3


def _num(v: float, d: int) -> str:
    """Fixed decimals per metric; tiny magnitudes (|x - x*| near 0) in scientific notation."""
    if v != 0 and abs(v) < 10 ** (-d):
        return f"{v:.2e}"
    return f"{v:.{d}f}"


def ours_text(res: CellResult, spread: str) -> str:
    if res.status == "unavailable":
        return "n/a"
    if res.status == "missing":
        return f"missing ({res.note})" if res.note else "missing"
    m = res.mean
    if m is None:
        text = "–"
    elif isinstance(m, str):
        text = m
    elif math.isinf(m):
        text = f"> {res.cap}" if res.cap else "not reached"
    else:
        d = _digits(res)
        text = _num(m, d)
        if res.low is not None and res.high is not None:
            if spread == "ci95":
                text += f" ± {_num((res.high - res.low) / 2, d)}"
            else:
                text += f" [{_num(res.low, d)}–{_num(res.high, d)}]"
    extra = []
    if res.cell.kind == "runs":
        if res.status == "partial":
            extra.append(f"{res.n}/{res.expected} seeds")
        if res.not_reached and m is not None and not (isinstance(m, float) and math.isinf(m)):
            extra.append(f"{res.n - res.not_reached - res.diverged}/{res.n} reached")
        if res.note:
            extra.append(res.note)
    return text + (f" ({'; '.join(extra)})" if extra else "")


def diff_text(res: CellResult) -> str:
    d = res.diff
    if d is None:
        return ""
    if isinstance(d, str):
        return d
    text = f"{d:+.{_digits(res)}f}"
    p = res.paper
    if p is not None and p.low is not None and isinstance(res.mean, float):
        text += " (in CI)" if p.low <= res.mean <= p.high else " (outside CI)"
    return text


def table_frame(result: TableResult) -> pd.DataFrame:
    """The display table: one row per (dataset, row), per column label ours / paper / diff
    (paper and diff only where the paper has a number)."""
    cols: list[str] = []
    with_paper: set[str] = set()
    rows: list[tuple[str, str]] = []
    for r in result.cells:
        c = r.cell
        if c.col not in cols:
            cols.append(c.col)
        if (c.dataset, c.row) not in rows:
            rows.append((c.dataset, c.row))
        if r.paper is not None:
            with_paper.add(c.col)
    many = len({ds for ds, _ in rows}) > 1
    by = {(r.cell.dataset, r.cell.row, r.cell.col): r for r in result.cells}
    records = []
    for ds, row in rows:
        rec: dict[str, str] = {"dataset": ds} if many else {}
        rec[""] = row
        for col in cols:
            r = by.get((ds, row, col))
            rec[col] = ours_text(r, result.spread) if r else ""
            if col in with_paper:
                rec[f"{col} (paper)"] = r.paper.text if r is not None and r.paper else ""
                rec[f"{col} diff"] = diff_text(r) if r is not None else ""
        records.append(rec)
    return pd.DataFrame(records)


def table_notes(result: TableResult) -> list[str]:
    spec = result.spec
    seeds = result.selection.seeds if result.selection.seeds is not None else spec.seeds
    how = "mean ± 1.96·std/sqrt(n)" if result.spread == "ci95" else "mean [min–max]"
    lines = []
    if any(c.cell.kind == "runs" for c in result.cells):
        lines.append(
            f"ours: {how} over seeds {','.join(map(str, seeds))}; diff = ours - paper; "
            f"'> R': target not reached in R rounds"
        )
    lines += list(spec.notes)
    for reason, n in result.unavailable().items():
        lines.append(f"n/a ({n} cells): {reason}")
    for p in result.problems:
        lines.append(f"skipped: {p}")
    lines += result.notes
    cmds = result.fill_commands()
    if cmds:
        n = sum(c.status in ("missing", "partial") for c in result.cells if c.cell.kind == "runs")
        lines.append(f"missing runs in {n} cells; fill them with:")
        lines += [f"  {c}" for c in cmds]
    return lines


def render_paper_table(result: TableResult, fmt: str, header: list[str]) -> str:
    from tabulate import tabulate

    df = table_frame(result)
    notes = table_notes(result)
    title = f"{result.spec.source}: {result.spec.title}"
    claims = claim_lines(result)
    if fmt == "md":
        body = tabulate(
            df, headers="keys", tablefmt="github", showindex=False, disable_numparse=True
        )
        return (
            "".join(f"<!-- {h} -->\n" for h in header)
            + f"**{title}**\n\n{body}\n\n"
            + "".join(f"- `{n.strip()}`\n" if n.startswith("  ") else f"- {n}\n" for n in notes)
            + _md_claims(claims)
        )
    if fmt == "latex":
        body = tabulate(df, headers="keys", tablefmt="latex_booktabs", showindex=False)
        return (
            "".join(f"% {h}\n" for h in header)
            + f"% {title}\n{body}\n"
            + "".join(f"% {n}\n" for n in [*notes, *claims])
        )
    if fmt == "csv":  # claims as trailing comment lines: read_csv(comment="#") skips them
        return (
            "".join(f"# {h}\n" for h in header)
            + long_frame(result).to_csv(index=False)
            + "".join(f"# {n}\n" for n in claims)
        )
    raise ValueError(fmt)


def _md_claims(lines: list[str]) -> str:
    if not lines:
        return ""
    return f"\n**{lines[0]}**\n\n" + "".join(f"- {n.strip()}\n" for n in lines[1:])


def _clean(v):
    """Floats rounded to 10 significant digits (no 55.00000000000001 in the csv)."""
    return float(f"{v:.10g}") if isinstance(v, float) else v


def long_frame(result: TableResult) -> pd.DataFrame:
    """One line per cell, numbers unformatted (the csv format)."""
    rows = []
    for r in result.cells:
        c = r.cell
        num = r.mean if not isinstance(r.mean, float) or not math.isinf(r.mean) else None
        num, low, high, diff = (_clean(v) for v in (num, r.low, r.high, r.diff))
        rows.append(
            {
                "dataset": c.dataset,
                "row": c.row,
                "col": c.col,
                "metric": c.metric or c.kind,
                "ours": num,
                "low": low,
                "high": high,
                "runs": r.n,
                "expected": r.expected,
                "not_reached": r.not_reached,
                "status": r.status,
                "paper": None if r.paper is None else r.paper.value,
                "diff": diff,
                "note": r.note,
            }
        )
    return pd.DataFrame(rows)


def rich_paper_table(result: TableResult):
    from rich.table import Table
    from rich.text import Text

    df = table_frame(result)
    table = Table(title=f"{result.spec.name}: {result.spec.source} — {result.spec.title}")
    for col in df.columns:
        style = "dim" if col.endswith("(paper)") else ("cyan" if col.endswith(" diff") else None)
        table.add_column(
            str(col), style=style, justify="left" if col in ("", "dataset") else "right"
        )
    for _, row in df.iterrows():
        table.add_row(*(Text(str(v)) for v in row))
    return table


def table_file_name(result: TableResult) -> str:
    ds = result.selection.dataset
    return result.spec.name + (f"_{ds}" if ds else "")
