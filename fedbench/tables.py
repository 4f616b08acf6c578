"""Tables from results: rendering to the terminal (rich) and to files (md, csv, latex)."""

from __future__ import annotations

import math
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

import fedbench

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


def header_lines(command: str, device: str | None = None) -> list[str]:
    date = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
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
