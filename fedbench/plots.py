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


X_LABELS = {"round": "round", "cum_seconds": "seconds (cumulative, this machine)"}
SPREAD_WORDS = {"minmax": "min-max over seeds", "ci95": "Student-t 95% interval over seeds"}


def figure_title(result) -> str:
    """What the figure draws (not the table's title): its metric or curves against its axis,
    the spread, where the paper's values are, and whether the runs are a calibrated or a
    substitute setting."""
    spec, ps = result.spec, result.spec.plot
    metric = METRIC_LABEL.get(ps.use_metric, ps.use_metric)
    curves = " and ".join(CURVE_LABELS.get(c, c) for c in ps.curves)
    x = X_LABELS.get(ps.x, ps.x)
    what = {
        "curves": f"{curves} against {x}; mean, band: min-max over seeds",
        "versus": f"{metric} against {ps.xlabel}; bars: {SPREAD_WORDS[result.spread]}",
        "bars": f"{metric}; bars: {SPREAD_WORDS[result.spread]}",
        "heatmap": "aggregation weight of each client per round (first seed)",
    }[ps.kind]
    panels = _panels(result, ps)
    if ps.kind != "heatmap" and _has_paper(panels):
        what += "; the paper's values beside ours"
    sel = result.selection
    marks = [
        "at the calibrated lr" if sel is not None and sel.calibrated_from is not None else "",
        "SUBSTITUTE data: " + sel.dataset
        if sel is not None and spec.substitute(sel.dataset)
        else "",
    ]
    return f"{spec.source}\n{what}" + "".join(f"; {m}" for m in marks if m)


def plot_spec(result, out_base: Path) -> list[Path]:
    """The figure of a paper table spec from its evaluated cells; PNG and PDF at out_base."""
    spec, ps = result.spec, result.spec.plot
    panels = _panels(result, ps)
    if not any(c.records for cells in panels.values() for c in cells):
        cmds = result.fill_commands()
        hint = f"; fill them with: {cmds[0]}" if cmds else ""
        raise FedbenchError(f"no finished runs for {spec.name} in {result.selection.results}{hint}")
    fig = {"curves": _curves, "versus": _versus, "bars": _bars, "heatmap": _heatmap}[ps.kind](
        panels, ps
    )
    fig.suptitle(figure_title(result), fontsize=9)
    fig.tight_layout()
    return _save(fig, out_base)


def _grid(n_rows: int, n_cols: int, legend_rows: int = 0):
    """Panels of a fixed, wide size; legend_rows of room below them for legends (so a legend
    never narrows the axes)."""
    fig, axes = plt.subplots(
        n_rows,
        n_cols,
        figsize=(4.6 * n_cols, 3.3 * n_rows + 0.6 + 0.22 * legend_rows),
        squeeze=False,
    )
    return fig, axes


def _panel_title(key: tuple) -> str:
    return " · ".join(str(k) for k in key)


def _paper_marks(ax, members, ps, styles) -> int:
    """The paper's numbers on a curves panel: a target-type value (rounds to a target, R90)
    as a dashed vertical line at that round, an accuracy as a dashed horizontal line; each in
    its series' colour. Returns how many were drawn."""
    drawn = 0
    for c in members:
        p = _paper_number(c)
        if p is None:
            continue
        color = styles[_line_label(c, ps, members)]["color"]
        if ps.x == "round" and c.cell.metric in ("r90", "rounds_to_target"):
            ax.axvline(p, ls="--", lw=1.0, color=color)
        elif c.cell.metric in ("last25_acc", "best_acc", "final_acc"):
            ax.axhline(p / 100.0, ls="--", lw=1.0, color=color)
        else:
            continue
        drawn += 1
    return drawn


def _target(members) -> float | None:
    """The target accuracy the cells' runs stop at or count to (None: none)."""
    for c in members:
        for _, rec in c.records:
            t = rec.meta.get("config", {}).get("target_acc")
            if t is not None:
                return float(t)
    return None


def _curves(panels, ps):
    with_paper = _has_paper(panels) and ps.x != "round"  # seconds: paper's beside, as ratios
    n_lines = max(len(m) for m in panels.values())
    fig, axes = _grid(len(ps.curves), len(panels) + with_paper, n_lines // 4 + 2)
    legend: dict[str, object] = {}
    for j, (key, members) in enumerate(panels.items()):
        n = len(members)
        styles = {_line_label(c, ps, members): _style(i, n) for i, c in enumerate(members)}
        for i, column in enumerate(ps.curves):
            ax = axes[i][j]
            drawn = 0
            for c in members:
                label = _line_label(c, ps, members)
                drawn += _band(ax, seed_curves(c, column, ps.x), label, styles[label])
            if drawn and column == "test_acc":
                _paper_marks(ax, members, ps, styles)
                target = _target(members) if ps.use_metric.endswith("to_target") else None
                if target is not None:
                    ax.axhline(target, ls=":", color="gray", lw=1.0, label="target")
            ax.set_xlabel(X_LABELS.get(ps.x, ps.x))
            ax.set_ylabel(CURVE_LABELS.get(column, column))
            if i == 0:
                ax.set_title(_panel_title(key), fontsize=9)
            if ps.logy and drawn:
                ax.set_yscale("log")
            if ps.x != "round" and drawn:  # seconds from 1 to hundreds: all runs in view
                ax.set_xscale("log")
            ax.grid(alpha=0.3)
            if not drawn:
                ax.text(0.5, 0.5, f"no {column} recorded", ha="center", transform=ax.transAxes)
            for h, label in zip(*ax.get_legend_handles_labels()):
                legend.setdefault(re.sub(r" \(n=\d+\)$", "", label), h)
    note = "dashed: the paper's value of that series" if _has_paper(panels) else ""
    _figure_legend(fig, legend, note if ps.x == "round" else "")
    if with_paper:
        members = [c for cells in panels.values() for c in cells]
        _ratio_bars(axes[0][-1], members, ps)
        for i in range(1, len(ps.curves)):
            axes[i][-1].axis("off")
    return fig


def _ratio_bars(ax, members, ps) -> None:
    """Ours and the paper's value of each row over FedAvg's (or the first row's): seconds on
    two machines compare as ratios."""
    import math

    base = next((c for c in members if c.cell.row == "FedAvg"), members[0])
    names, ours, paper = [], [], []
    for c in members:
        p, pb = _paper_number(c), _paper_number(base)
        ok = isinstance(c.mean, float) and math.isfinite(c.mean) and isinstance(base.mean, float)
        names.append(c.cell.row)
        ours.append(c.mean / base.mean if ok and base.mean else math.nan)
        paper.append(p / pb if p is not None and pb else math.nan)
    xs = range(len(names))
    _wide_log(ax, [v for v in ours + paper if math.isfinite(v)])
    ax.bar([x - 0.2 for x in xs], ours, 0.4, label="ours", color="tab:blue")
    ax.bar(
        [x + 0.2 for x in xs], paper, 0.4, label="paper", color="white", edgecolor="k", hatch="//"
    )
    ax.set_xticks(list(xs), names, rotation=45, ha="right", fontsize=7)
    ax.axhline(1.0, color="gray", lw=0.8)
    ax.set_ylabel(f"{METRIC_LABEL.get(ps.use_metric, ps.use_metric)} / {base.cell.row}'s")
    ax.set_title("ours vs the paper, as ratios", fontsize=9)
    ax.grid(alpha=0.3, axis="y")
    ax.legend(fontsize=7)


def _versus_lines(members) -> dict[str, list]:
    """Cells by line: 'FedLGA tau_max=0.6E' and 'FedLGA tau_max=0.2E' are points of one line."""
    lines: dict[str, list] = {}
    for c in members:
        lines.setdefault(re.sub(r"\s+\S+=\S+$", "", c.cell.row), []).append(c)
    return lines


def _versus_panel(ax, lines, ps, paper: bool) -> int:
    """Our means with their spread (paper=False) or the paper's numbers (hollow, dashed) of
    each line against cell.x; single points at one x are spread apart a little so that none
    hides another. Returns how many series were drawn."""
    import math

    xs_all = sorted({c.cell.x for cells in lines.values() for c in cells if c.cell.x is not None})
    span = (xs_all[-1] - xs_all[0]) if len(xs_all) > 1 else 1.0
    singles = [label for label, cells in lines.items() if len(cells) == 1]
    drawn, seen = 0, []
    for i, (label, cells) in enumerate(lines.items()):
        style = _style(i, len(lines))
        pts = []
        for c in cells:
            y = _paper_number(c) if paper else c.mean
            if c.cell.x is None or not isinstance(y, float) or not math.isfinite(y):
                continue
            lo = hi = 0.0
            if not paper and c.low is not None and c.high is not None:
                # a mean of equal seeds can round one ulp outside its own min-max
                lo, hi = max(0.0, y - c.low), max(0.0, c.high - y)
            pts.append((c.cell.x, y, lo, hi))
        if not pts or (paper and sorted(pts) in seen):  # the paper has one FedLGA for 2 rows
            continue
        pts.sort()
        seen.append(pts)
        shift = 0.0
        if label in singles and not ps.logx:
            shift = (singles.index(label) - (len(singles) - 1) / 2) * 0.012 * span
        kw = dict(marker=style["marker"], color=style["color"], capsize=2, lw=style["lw"])
        kw["ms"] = 4 + 3 * (style["lw"] - 1.3)  # an equal later series shows inside it
        if paper:
            kw.update(ls="--", mfc="white")
        ax.errorbar(
            [p[0] + shift for p in pts],
            [p[1] for p in pts],
            yerr=[[p[2] for p in pts], [p[3] for p in pts]],
            label=label,
            **kw,
        )
        if not paper:  # a mean with seeds that never reached the target is a lower bound
            for c in cells:
                if c.not_reached and c.cell.x is not None and isinstance(c.mean, float):
                    y = c.mean if math.isfinite(c.mean) else float(c.cap or 0)
                    ax.annotate(
                        ">",
                        (c.cell.x + shift, y),
                        xytext=(4, -3),
                        textcoords="offset points",
                        fontsize=8,
                        color=style["color"],
                    )
        drawn += 1
    return drawn


def _wide_log(ax, values) -> None:
    """A log y axis where the values span more than a factor 8 (rounds from 6 to 200): the
    small ones stay apart."""
    vals = [v for v in values if v and v > 0]
    if vals and max(vals) / min(vals) > 8:
        ax.set_yscale("log")


def _versus(panels, ps):
    # one panel per dataset, or per column where a column holds several x (the quadratic
    # groups over the lr grid; a column of its own x, as rho=0.1, is a point); the paper's beside
    members = [c for cells in panels.values() for c in cells]
    xs_of: dict[tuple, set] = {}
    for c in members:
        xs_of.setdefault((c.cell.dataset, c.cell.col), set()).add(c.cell.x)
    by_col = any(len(xs) > 1 for xs in xs_of.values())
    by_key: dict[str, list] = {}
    for c in members:
        key = (c.cell.dataset, c.cell.col) if by_col else (c.cell.dataset,)
        by_key.setdefault(_panel_title(key), []).append(c)
    with_paper = _has_paper(panels)
    n_lines = max(len(_versus_lines(m)) for m in by_key.values())
    fig, axes = _grid(1, len(by_key) * (1 + with_paper), n_lines // 4 + 2)
    legend: dict[str, object] = {}
    for j, (title, members) in enumerate(by_key.items()):
        lines = _versus_lines(members)
        xs = [c.cell.x for c in members if c.cell.x is not None]
        for k, paper in enumerate((False, True) if with_paper else (False,)):
            ax = axes[0][j * (1 + with_paper) + k]
            n = _versus_panel(ax, lines, ps, paper)
            ax.set_title(f"{title} · {'the paper' if paper else 'ours'}", fontsize=9)
            ax.set_xlabel(ps.xlabel)
            ax.set_ylabel(METRIC_LABEL.get(ps.use_metric, ps.use_metric))
            if ps.logy and n:
                ax.set_yscale("log")
            elif n:
                ax.relim()
                _wide_log(ax, [y for line in ax.get_lines() for y in line.get_ydata()])
            if ps.logx:
                ax.set_xscale("log")
            if xs and not ps.logx:  # every x of the table, drawn or not: panels side by side
                pad = 0.06 * ((max(xs) - min(xs)) or 1.0)
                ax.set_xlim(min(xs) - pad, max(xs) + pad)
            ax.grid(alpha=0.3)
            if n == 0:
                ax.text(0.5, 0.5, "no numbers", ha="center", transform=ax.transAxes)
            for h, label in zip(*ax.get_legend_handles_labels()):
                legend.setdefault(label, h)
    _figure_legend(fig, legend, "filled, solid: ours; hollow, dashed: the paper" * with_paper)
    return fig


def _figure_legend(fig, handles: dict, note: str = "") -> None:
    """One legend for every panel, below them (the axes keep their width)."""
    if not handles:
        return
    fig.legend(
        list(handles.values()),
        list(handles),
        loc="upper center",
        bbox_to_anchor=(0.5, 0.0),
        ncol=min(5, len(handles)),
        fontsize=7,
        frameon=False,
        title=note or None,
        title_fontsize=7,
    )


METRIC_LABEL = {
    "rounds_to_target": "rounds to target",
    "best_acc": "best test accuracy (%)",
    "seconds_to_target": "seconds to target",
    "final_dist": "final |x - x*|",
    "r90": "rounds to 90% (R90)",
    "last25_acc": "test accuracy (%), last 25 evaluations",
    "final_train_loss": "final training loss",
}


def _bars(panels, ps):
    import math

    with_paper = _has_paper(panels)
    fig, axes = _grid(1, len(panels))
    for j, (key, members) in enumerate(panels.items()):
        ax = axes[0][j]
        names, ys, lo, hi, paper = [], [], [], [], []
        for c in members:
            ok = isinstance(c.mean, float) and math.isfinite(c.mean)
            names.append(c.cell.row)
            ys.append(c.mean if ok else 0.0)
            lo.append(c.mean - c.low if ok and c.low is not None else 0.0)
            hi.append(c.high - c.mean if ok and c.high is not None else 0.0)
            paper.append(_paper_number(c))
        w = 0.4 if with_paper else 0.8
        xs = [x - (w / 2 if with_paper else 0.0) for x in range(len(names))]
        ax.bar(xs, ys, w, yerr=[lo, hi], capsize=3, color="tab:blue", alpha=0.85, label="ours")
        if with_paper:
            px = [x + w for x, p in zip(xs, paper) if p is not None]
            pv = [p for p in paper if p is not None]
            ax.bar(px, pv, w, color="white", edgecolor="k", hatch="//", label="paper")
            ax.legend(fontsize=7)
        ax.set_xticks(range(len(names)), names, rotation=45, ha="right", fontsize=8)
        ax.set_ylabel(METRIC_LABEL.get(ps.use_metric, ps.use_metric))
        finite = [y for y in ys if y] + [p for p in paper if p is not None]
        if finite and ps.use_metric.endswith("acc"):  # accuracies: zoom to where they differ
            ax.set_ylim(max(0.0, min(finite) - 5), min(100.0, max(finite) + 3))
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
