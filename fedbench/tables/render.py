"""Rendering tables: to the terminal (rich) and to files (md, csv, latex); plain frames (the
runs summary) and evaluated paper tables."""

from __future__ import annotations

import math
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

import fedbench
from fedbench.tables.metrics import METRICS
from fedbench.tables.result import CellResult, TableResult
from fedbench.tables.verdicts import claim_lines

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
        text = ("> " if res.not_reached else "") + _num(m, d)  # censored seeds: a lower bound
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
            extra.append(f"{res.not_reached}/{res.n} seeds > {res.cap}, counted at {res.cap}")
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
    how = "mean ± t(0.975, n-1)·std/sqrt(n) (Student's t)"
    how = how if result.spread == "ci95" else "mean [min–max]"
    lines = []
    if any(c.cell.kind == "runs" for c in result.cells):
        lines.append(
            f"ours: {how} over seeds {','.join(map(str, seeds))}; diff = ours - paper; "
            "'> R': target not reached in R rounds (censored: counted at R in means and "
            "spreads, so '> m' is a lower bound)"
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
    if substitute_line(result):
        title += f" (SUBSTITUTE: {result.selection.dataset}, not the paper's data)"
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
    """NAME[_DATASET][_substitute]: a substitute dataset variant says so in its file's name."""
    ds = result.selection.dataset
    sub = "_substitute" if result.spec.substitute(ds) else ""
    return result.spec.name + (f"_{ds}" if ds else "") + sub


def substitute_line(result: TableResult) -> str | None:
    """The header line of a table on a substitute dataset (None on the paper's own data)."""
    ds = result.selection.dataset
    said = result.spec.substitute(ds)
    return f"substitute: {ds}, not the paper's data: {said}" if said else None
