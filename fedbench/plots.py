"""Figures from results (matplotlib, headless): runs' curves (`fedbench plot`) and the drawing
parts a paper table's figure shares (fedbench/table_plots.py)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from fedbench.errors import FedbenchError  # noqa: E402

METRICS = ("test_acc", "test_loss", "train_loss", "local_loss")


# ---------------------------------------------------------------- telling series apart

LINE_STYLES = ("-", "--", ":", "-.")


def series_styles(n: int) -> list[dict]:
    """n distinct (colour, line style) pairs: tab10's colours for the first 10 series (so a
    series added to a figure leaves the others' colours as they were), their light tab20
    partners for the next 10, then the 20 again dashed, dotted and dash-dotted (80), then evenly
    spaced hues of a continuous map; so no two lines of a figure look the same."""
    if n <= 20 * len(LINE_STYLES):
        cmap = plt.get_cmap("tab20")  # even entries are tab10's colours, odd their light ones
        return [
            {"color": cmap(i % 10 * 2 + i // 10 % 2), "linestyle": LINE_STYLES[i // 20]}
            for i in range(n)
        ]
    cmap = plt.get_cmap("turbo")
    return [
        {"color": cmap(i / (n - 1)), "linestyle": LINE_STYLES[i % len(LINE_STYLES)]}
        for i in range(n)
    ]


def _legend(ax, n: int, longest: int = 0, **kw) -> None:
    """A legend that stays readable: beside the axes and in columns when there are many
    entries, below the axes when an entry is long (`longest` characters: it would cover the
    curves); savefig's bbox_inches="tight" keeps it in the file."""
    if n > 8:
        ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.01, 1.0),
                  ncol=1 + (n - 1) // 30, **kw)  # fmt: skip
    elif longest > 28:
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.16), frameon=False,
                  ncol=1 if longest > 45 else 2, **kw)  # fmt: skip
    else:
        ax.legend(fontsize=7, **kw)


def _tight(fig) -> None:
    """tight_layout, quiet where a legend beside the axes leaves it nothing to do."""
    import warnings

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Tight layout not applied", UserWarning)
        fig.tight_layout()


def plot_curves(
    results: Path,
    out: Path,
    metric: str = "test_acc",
    on_error: str = "fail",
    strict: bool = False,
    flt=None,
) -> tuple[list[Path], list[str]]:
    """One line per run of `metric` against round (the runs `flt`, a
    fedbench.run_filter.RunFilter, keeps), labelled by method, the fields that vary among
    them and seed; writes PNG and PDF. Returns the paths and the notes of the results index
    (old-version records, copies)."""
    from fedbench.results import RunIndex
    from fedbench.run_filter import run_label, run_order, varying_fields

    if metric not in METRICS:
        raise FedbenchError(f"unknown metric {metric!r}; choose one of: {', '.join(METRICS)}")
    index = RunIndex(results, on_error=on_error, strict=strict)
    runs = [r for key in index.by_key for r in index.runs(key)]
    if not runs:
        raise FedbenchError(f"no runs in {results}; run fedbench train first")
    if flt:
        runs = [r for r in runs if flt.keeps(r.meta)]
        if not runs:
            raise FedbenchError(f"no run in {results} has {flt.describe()}; see fedbench table "
                                "summary for the runs there are")  # fmt: skip
    series = []
    for rec in sorted(runs, key=lambda r: r.run_dir.name):
        line = _curve(index, rec, metric)
        if line is not None:
            series.append((rec, line))
    shown = varying_fields([rec.meta for rec, _ in series], always=("method", "seed"))
    series.sort(key=lambda item: run_order(item[0].meta, shown))
    fig, ax = plt.subplots(figsize=(7, 4.5))
    labels = [run_label(rec.meta, shown) for rec, _ in series]
    for (_, line), style, label in zip(series, series_styles(len(series)), labels):
        ax.plot(line["round"], line[metric], label=label, lw=1.4, **style)
    ax.set_xlabel("round")
    ax.set_ylabel(metric.replace("_", " "))
    ax.grid(alpha=0.3)
    if series:
        _legend(ax, len(series), max(map(len, labels)))
    _tight(fig)
    out.parent.mkdir(parents=True, exist_ok=True)
    paths = [out.with_suffix(".png"), out.with_suffix(".pdf")]
    for p in paths:
        fig.savefig(p, dpi=150, bbox_inches="tight")  # keeps titles and outside legends
    plt.close(fig)
    return paths, [f"skipped: {p}" for p in index.problems] + index.notes


def _curve(index, rec, metric: str):
    """A run's (round, metric) rows as floats; None (reported through the index) if none."""
    if rec.status == "failed" and not rec.rounds_path.exists():
        return None
    if not index.rounds_ok(rec, report=True):
        return None
    rounds = index.rounds(rec, ["round", metric])
    if rounds is None or metric not in rounds:
        return None
    try:
        return rounds[["round", metric]].dropna().astype(float)
    except (TypeError, ValueError) as e:
        index._problem(f"{rec.rounds_path}: {metric} is not numeric ({e}); rerun it")
        return None


# ---------------------------------------------------------------- paper figures

CURVE_LABELS = {
    "test_acc": "test accuracy",
    "train_loss": "training loss",
    "local_acc": "local training accuracy",
    "dissimilarity": "gradient dissimilarity",
    "dist_to_opt": "|x - x*|",
}
FALLBACK = {"train_loss": "local_loss", "local_acc": "train_acc"}


def _read(rec, columns: list[str]):
    """The columns a run recorded (local or shipped: RunRecord.read_rounds)."""
    return rec.read_rounds(columns)


def seed_curves(res, column: str, x: str = "round"):
    """{seed: Series indexed by round} of one cell's runs (FALLBACK column when absent); with
    x another column (cum_seconds), {seed: (values, x values)} both indexed by round."""
    out = {}
    for seed, rec in res.records:
        extra = [x] if x != "round" else []
        df = _read(rec, ["round", column, FALLBACK.get(column, column), *extra])
        col = column if column in df else FALLBACK.get(column)
        if col in df and df[col].notna().any():
            s = df.set_index("round")[col].dropna()
            out[seed] = s if not extra else (s, df.set_index("round")[x].reindex(s.index))
    return out


# a paper figure's series told apart by colour (series_styles' order) and marker (and, for the
# paper's values, hollow markers on dashed lines), in the order they are first drawn
MARKERS = ("o", "s", "^", "v", "D", "P", "X", "*", "<", ">", "h")


def _style(i: int, n: int = 1) -> dict:
    """The i-th of n series: colour and marker; earlier ones drawn wider, so that a series
    that equals a later one (FedAvg and FedProx mu=0 without stragglers) shows as its rim."""
    return {
        "color": series_styles(max(n, i + 1))[i]["color"],
        "marker": MARKERS[i % len(MARKERS)],
        "lw": 1.3 + 0.7 * max(0, min(n - 1 - i, 3)),
    }


def _band(ax, curves: dict, label: str, style: dict | None = None) -> bool:
    """The mean over seeds and its min-max band; curves of (values, x) pairs are drawn at each
    round's mean x (seconds differ by seed)."""
    import pandas as pd

    if not curves:
        return False
    style = dict(style or {})
    style.pop("marker", None)
    paired = isinstance(next(iter(curves.values())), tuple)
    frame = pd.DataFrame({s: c[0] if paired else c for s, c in curves.items()}).sort_index()
    xs = (
        pd.DataFrame({s: c[1] for s, c in curves.items()}).sort_index().mean(axis=1)
        if paired
        else frame.index
    )
    style.setdefault("lw", 1.4)
    (line,) = ax.plot(xs, frame.mean(axis=1).values, label=f"{label} (n={len(curves)})", **style)
    if len(curves) > 1:
        ax.fill_between(
            xs, frame.min(axis=1), frame.max(axis=1), alpha=0.15, color=line.get_color(), lw=0
        )
    return True


def _panels(result, ps):
    cells = [c for c in result.cells if c.cell.kind == "runs" and c.cell.metric == ps.use_metric]
    panels: dict[tuple, list] = {}
    for c in cells:
        key = {"col": (c.cell.dataset, c.cell.col), "row": (c.cell.dataset, c.cell.row)}.get(
            ps.panels, (c.cell.dataset,)
        )
        panels.setdefault(key, []).append(c)
    return panels


def _line_label(c, ps, members) -> str:
    if ps.panels == "col":
        return c.cell.row
    if ps.panels == "row":
        return c.cell.col
    rows = {m.cell.row for m in members}
    cols = {m.cell.col for m in members}
    if len(rows) == 1:
        return c.cell.col
    return c.cell.row if len(cols) == 1 else f"{c.cell.row} {c.cell.col}"


def _save(fig, out_base: Path) -> list[Path]:
    out_base.parent.mkdir(parents=True, exist_ok=True)
    paths = [out_base.with_name(out_base.name + ext) for ext in (".png", ".pdf")]
    for p in paths:  # no creation date in the PDF: the same runs redraw the same bytes
        meta = {"CreationDate": None} if p.suffix == ".pdf" else None
        fig.savefig(p, dpi=150, bbox_inches="tight", metadata=meta)  # keeps outside legends
    plt.close(fig)
    return paths


def _paper_number(c) -> float | None:
    p = c.paper
    if p is None or isinstance(p.value, str):
        return None
    return float(p.value)


def _has_paper(panels) -> bool:
    return any(_paper_number(c) is not None for cells in panels.values() for c in cells)
