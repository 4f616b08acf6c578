"""The figure of a paper table (`fedbench plot --table`): its title and its four kinds (curves,
versus, bars, heatmap) drawn from the table's evaluated cells (matplotlib, headless; the shared
drawing parts are in fedbench/plots.py)."""

from __future__ import annotations

import re
from pathlib import Path

from fedbench.errors import FedbenchError
from fedbench.plots import (
    CURVE_LABELS,
    _band,
    _has_paper,
    _line_label,
    _panels,
    _paper_number,
    _read,
    _save,
    _style,
    plt,
    seed_curves,
)

# a table's runs may come from several devices (its header lists them): each run's own clock
X_LABELS = {"round": "round", "cum_seconds": "seconds (cumulative, each run's own device)"}
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
    fig, axes = _curve_axes(len(ps.curves), len(panels), with_paper, n_lines // 4 + 2)
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
            if drawn and (ps.logy or _spans_decades(ax, column)):
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


def _spans_decades(ax, column: str) -> bool:
    """A loss whose curves span over two decades (a diverged run beside converging ones): a
    linear axis would flatten every other curve to its floor."""
    low, high = ax.dataLim.intervaly
    return column.endswith("loss") and low > 0 and high / low > 100


def _curve_axes(n_curves: int, n_panels: int, with_paper: bool, legend_rows: int):
    """(fig, axes[curve][panel]): one row per curve column; one curve over many panels (SFL's
    C x K) wraps into rows of 3, as a page holds them."""
    if n_curves > 1 or with_paper or n_panels <= 4:
        return _grid(n_curves, n_panels + with_paper, legend_rows)
    fig, grid = _grid(-(-n_panels // 3), 3, legend_rows)
    flat = [ax for row in grid for ax in row]
    for ax in flat[n_panels:]:
        ax.set_visible(False)
    return fig, [flat[:n_panels]]


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
    n_panels = len(by_key) * (1 + with_paper)
    # rows a page can hold: 3 panels, or 2 pairs (ours, the paper's) that stay side by side
    n_cols = min(n_panels, 4 if with_paper else 3)
    fig, axes = _grid(-(-n_panels // n_cols), n_cols, n_lines // 4 + 2)
    axes = [ax for row in axes for ax in row]
    for ax in axes[n_panels:]:
        ax.set_visible(False)
    legend: dict[str, object] = {}
    for j, (title, members) in enumerate(by_key.items()):
        lines = _versus_lines(members)
        xs = [c.cell.x for c in members if c.cell.x is not None]
        for k, paper in enumerate((False, True) if with_paper else (False,)):
            ax = axes[j * (1 + with_paper) + k]
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
        names, ys, lo, hi, paper, missing = [], [], [], [], [], []
        for c in members:
            ok = isinstance(c.mean, float) and math.isfinite(c.mean)
            missing.append(not ok)
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
        for x, c, gap in zip(xs, members, missing):  # a cell without a number says why
            if gap:
                why = "diverged" if c.diverged else "no run" if not c.n else "no number"
                ax.text(x, 0.02, why, transform=ax.get_xaxis_transform(), rotation=90,
                        ha="center", va="bottom", fontsize=7, color="0.35")  # fmt: skip
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
