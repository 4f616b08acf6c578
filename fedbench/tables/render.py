"""Rendering tables: to the terminal (rich) and to files (md, csv, latex); plain frames (the
runs summary) and evaluated paper tables."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pandas as pd

from fedbench.atomic import atomic_write_bytes
from fedbench.errors import FedbenchError
from fedbench.tables.metrics import METRICS
from fedbench.tables.result import CellResult, TableResult
from fedbench.tables.verdicts import claim_lines
from fedbench.version import __version__ as fedbench_version

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
    """The head of a written table: the command, the fedbench version and the device. No date
    unless given: a table regenerated from the same runs is the same bytes."""
    version = f"fedbench {fedbench_version}" + (f", {date}" if date else "")
    lines = [f"made by: {command}", version]
    if device:
        lines.append(f"device: {device}")
    return lines


def runs_line(records) -> str:
    """Which runs a file was made from, as a digest of their identities and end times: the line
    changes when (and only when) the runs do."""
    import hashlib

    keys = sorted(
        "|".join(str(x) for x in (r.run_id, r.key, r.fingerprint, r.status, r.ended))
        for r in records
    )
    digest = hashlib.sha256("\n".join(keys).encode()).hexdigest()[:16]
    shipped = sum(r.shipped for r in records)
    where = f", {shipped} of them shipped (results/shipped)" if shipped else ""
    return f"runs: {len(keys)}{where}; digest {digest}"


# ---------------------------------------------------------------- writing files

SIDECAR = ".json"  # a csv's metadata beside it: NAME.csv -> NAME.csv.json


def file_run_count(path: Path) -> int | None:
    """How many runs a written table says it was made from (its compute line; a csv's is in its
    sidecar); None: no such file or line."""
    import json
    import re

    try:
        if path.suffix == ".csv":
            head = json.loads(Path(f"{path}{SIDECAR}").read_text()).get("header", [])
        else:
            head = path.read_text(errors="replace").splitlines()[:12]
    except (OSError, ValueError, AttributeError):
        return None
    for line in head:
        m = re.search(r"compute: (\d+) runs", str(line))
        if m:
            return int(m.group(1))
    return None


def write_guarded(path: Path, text: str, runs: int | None, sidecar: dict | None = None) -> bool:
    """Write a table file unless that would replace one made from more runs (a FedbenchError
    says why); the same bytes are not rewritten. Returns whether the file changed."""
    import json

    old = file_run_count(path) if path.exists() else None
    if old is not None and runs is not None and runs < old:
        raise FedbenchError(
            f"{path} was made from {old} runs, this one from {runs}: not replaced (the others are "
            "not in the results folder or the shipped store; run the fill-in sweep, write "
            "elsewhere with --out DIR, or delete the file first)"
        )
    files = {path: text}
    if sidecar is not None:
        files[Path(f"{path}{SIDECAR}")] = json.dumps(sidecar, indent=1) + "\n"
    changed = False
    for p, body in files.items():
        if not (p.is_file() and p.read_bytes() == body.encode()):
            atomic_write_bytes(p, body.encode())
            changed = True
    return changed


def csv_sidecar(header: list[str], notes: list[str] = (), claims: list[str] = ()) -> dict:
    """A csv's metadata (beside it, NAME.csv.json), so that the csv holds only data."""
    return {"header": list(header), "notes": list(notes), "claims": list(claims)}


def render_file(df: pd.DataFrame, fmt: str, header: list[str]) -> str:
    from tabulate import tabulate

    shown = df.map(fmt_cell) if hasattr(df, "map") else df.applymap(fmt_cell)
    if fmt == "csv":  # data only: the header goes beside it (csv_sidecar)
        return df.to_csv(index=False)
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
    sidecar = csv_sidecar(header) if fmt == "csv" else None
    write_guarded(path, render_file(df, fmt, header), None, sidecar)
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
    if fmt == "csv":  # data only: header, notes and claims go beside it (paper_table_sidecar)
        return long_frame(result).to_csv(index=False)
    raise ValueError(fmt)


def paper_table_sidecar(result: TableResult, header: list[str]) -> dict:
    return csv_sidecar(header, table_notes(result), claim_lines(result))


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
    """NAME[_DATASET][_substitute], plus each added method (`_plus_fedavg_l1_lam0.1`): a table
    with rows added never writes over the paper table's file; a substitute dataset variant says
    so in its file's name. DATASET only where the table has several (`fedbench table quadratic`
    and `reproduce sfl`, which names the dataset, write the same file)."""
    ds = result.selection.dataset
    sub = "_substitute" if result.spec.substitute(ds) else ""
    added = "".join(
        "_plus_" + re.sub(r"[^\w.-]+", "_", a.replace("=", "")) for a in result.selection.additions
    )
    named = ds and len(result.spec.datasets) > 1  # a one-dataset table's file is NAME either way
    return result.spec.name + (f"_{ds}" if named else "") + sub + added


def substitute_line(result: TableResult) -> str | None:
    """The header line of a table on a substitute dataset (None on the paper's own data)."""
    ds = result.selection.dataset
    said = result.spec.substitute(ds)
    return f"substitute: {ds}, not the paper's data: {said}" if said else None
