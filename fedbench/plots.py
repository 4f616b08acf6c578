"""Figures from results (matplotlib, headless)."""

from __future__ import annotations

import re
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


def _legend(ax, n: int, **kw) -> None:
    """A legend that stays readable: beside the axes and in columns when there are many
    (savefig's bbox_inches="tight" keeps it in the file)."""
    if n > 8:
        ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.01, 1.0),
                  ncol=1 + (n - 1) // 30, **kw)  # fmt: skip
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
    for (rec, line), style in zip(series, series_styles(len(series))):
        ax.plot(line["round"], line[metric], label=run_label(rec.meta, shown), lw=1.4, **style)
    ax.set_xlabel("round")
    ax.set_ylabel(metric.replace("_", " "))
    ax.grid(alpha=0.3)
    if series:
        _legend(ax, len(series))
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


def seed_curves(res, column: str):
    """{seed: Series indexed by round} of one cell's runs (FALLBACK column when absent)."""
    out = {}
    for seed, rec in res.records:
        df = _read(rec, ["round", column, FALLBACK.get(column, column)])
        col = column if column in df else FALLBACK.get(column)
        if col in df and df[col].notna().any():
            s = df.set_index("round")[col].dropna()
            out[seed] = s
    return out


def _band(ax, curves: dict, label: str, color=None, linestyle="-") -> bool:
    import pandas as pd

    if not curves:
        return False
    frame = pd.DataFrame(curves).sort_index()
    mean = frame.mean(axis=1)
    (line,) = ax.plot(
        mean.index,
        mean.values,
        label=f"{label} (n={len(curves)})",
        lw=1.4,
        color=color,
        linestyle=linestyle,
    )
    if len(curves) > 1:
        ax.fill_between(
            frame.index,
            frame.min(axis=1),
            frame.max(axis=1),
            alpha=0.2,
            color=line.get_color(),
            lw=0,
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


def plot_spec(result, out_base: Path) -> list[Path]:
    """The figure of a paper table spec from its evaluated cells; PNG and PDF at out_base."""
    spec, ps = result.spec, result.spec.plot
    panels = _panels(result, ps)
    if not any(c.records for cells in panels.values() for c in cells):
        cmds = result.fill_commands()
        hint = f"; fill them with: {cmds[0]}" if cmds else ""
        raise FedbenchError(f"no finished runs for {spec.name} in {result.selection.results}{hint}")
    title = f"{spec.source}: {spec.title}"
    fig = {"curves": _curves, "versus": _versus, "bars": _bars, "heatmap": _heatmap}[ps.kind](
        panels, ps
    )
    fig.suptitle(title, fontsize=10)
    _tight(fig)
    return _save(fig, out_base)


def _grid(n_rows: int, n_cols: int):
    fig, axes = plt.subplots(
        n_rows, n_cols, figsize=(4.2 * n_cols, 3.3 * n_rows + 0.5), squeeze=False
    )
    return fig, axes


def _panel_title(key: tuple) -> str:
    return " · ".join(str(k) for k in key)


def _curves(panels, ps):
    fig, axes = _grid(len(ps.curves), len(panels))
    for j, (key, members) in enumerate(panels.items()):
        for i, column in enumerate(ps.curves):
            ax = axes[i][j]
            drawn = False
            for c, style in zip(members, series_styles(len(members))):
                drawn |= _band(ax, seed_curves(c, column), _line_label(c, ps, members), **style)
            ax.set_xlabel("round")
            ax.set_ylabel(CURVE_LABELS.get(column, column))
            if i == 0:
                ax.set_title(_panel_title(key), fontsize=9)
            if ps.logy and drawn:
                ax.set_yscale("log")
            ax.grid(alpha=0.3)
            if drawn:
                _legend(ax, len(members))
            else:
                ax.text(0.5, 0.5, f"no {column} recorded", ha="center", transform=ax.transAxes)
    return fig


def _versus(panels, ps):
    import math

    by_ds: dict[str, list] = {}
    for key, members in panels.items():
        by_ds.setdefault(key[0], []).extend(members)
    fig, axes = _grid(1, len(by_ds))
    for j, (ds, members) in enumerate(by_ds.items()):
        ax = axes[0][j]
        lines: dict[str, list] = {}
        for c in members:
            # "FedLGA tau_max=0.6E" and "FedLGA tau_max=0.2E" are points of one FedLGA line
            lines.setdefault(re.sub(r"\s+\S+=\S+$", "", c.cell.row), []).append(c)
        for (label, cells), style in zip(lines.items(), series_styles(len(lines))):
            pts = [
                (c.cell.x, c.mean, c.low, c.high)
                for c in cells
                if isinstance(c.mean, float) and math.isfinite(c.mean) and c.cell.x is not None
            ]
            if not pts:
                continue
            pts.sort()
            xs = [p[0] for p in pts]
            ys = [p[1] for p in pts]
            lo = [p[1] - (p[2] if p[2] is not None else p[1]) for p in pts]
            hi = [(p[3] if p[3] is not None else p[1]) - p[1] for p in pts]
            ax.errorbar(
                xs, ys, yerr=[lo, hi], marker="o", ms=3, capsize=2, lw=1.2, label=label, **style
            )
        ax.set_title(ds, fontsize=9)
        ax.set_xlabel(ps.xlabel)
        ax.set_ylabel(METRIC_LABEL.get(ps.use_metric, ps.use_metric))
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
    return fig


METRIC_LABEL = {
    "rounds_to_target": "rounds to target",
    "best_acc": "best test accuracy (%)",
    "seconds_to_target": "seconds to target",
}


def _bars(panels, ps):
    import math

    fig, axes = _grid(1, len(panels))
    for j, (key, members) in enumerate(panels.items()):
        ax = axes[0][j]
        names, ys, lo, hi = [], [], [], []
        for c in members:
            ok = isinstance(c.mean, float) and math.isfinite(c.mean)
            names.append(c.cell.row)
            ys.append(c.mean if ok else 0.0)
            lo.append(c.mean - c.low if ok and c.low is not None else 0.0)
            hi.append(c.high - c.mean if ok and c.high is not None else 0.0)
        ax.bar(range(len(names)), ys, yerr=[lo, hi], capsize=3, color="tab:blue", alpha=0.8)
        ax.set_xticks(range(len(names)), names, rotation=45, ha="right", fontsize=8)
        ax.set_ylabel(METRIC_LABEL.get(ps.use_metric, ps.use_metric))
        ax.set_title(_panel_title(key), fontsize=9)
        ax.grid(alpha=0.3, axis="y")
    return fig


def _heatmap(panels, ps):
    import numpy as np

    members = [c for cells in panels.values() for c in cells if c.records]
    fig, axes = _grid(1, len(members))
    for j, c in enumerate(members):
        seed, rec = c.records[0]
        df = _read(rec, ["round", "clients", "agg_weights"])
        if "agg_weights" not in df:
            raise FedbenchError(
                f"{rec.rounds_path} has no per-round agg_weights (fedsoftmax records them)"
            )
        df = df[df["round"] > 0]
        n = int(rec.meta.get("data", {}).get("devices") or 0)
        n = max(n, 1 + max((max(cl) for cl in df["clients"] if len(cl)), default=0))
        mat = np.zeros((len(df), n))
        for i, (cl, wt) in enumerate(zip(df["clients"], df["agg_weights"])):
            if wt is not None and len(wt):
                mat[i, np.asarray(cl, dtype=int)] = np.asarray(wt, dtype=float)
        ax = axes[0][j]
        r0, r1 = int(df["round"].min()), int(df["round"].max())
        im = ax.imshow(
            mat,
            aspect="auto",
            origin="lower",
            cmap="viridis",
            interpolation="nearest",
            extent=(-0.5, n - 0.5, r0 - 0.5, r1 + 0.5),
        )
        ax.set_xlabel("client")
        ax.set_ylabel("round")
        ax.set_title(f"{c.cell.dataset} · {c.cell.row} {c.cell.col} · seed {seed}", fontsize=9)
        fig.colorbar(im, ax=ax, label="aggregation weight")
    return fig
