"""Figures from results (matplotlib, headless)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from fedbench.errors import FedbenchError  # noqa: E402
from fedbench.results import read_run, run_dirs  # noqa: E402

METRICS = ("test_acc", "test_loss", "train_loss", "local_loss")


def run_label(meta: dict) -> str:
    cfg = meta.get("config", {})
    params = ",".join(f"{k}={v}" for k, v in sorted(cfg.get("method_params", {}).items()))
    label = cfg.get("method", "?") + (f"({params})" if params else "")
    return f"{label} s{cfg.get('seed')}"


def plot_curves(results: Path, out: Path, metric: str = "test_acc") -> list[Path]:
    """One line per run of `metric` against round; writes PNG and PDF."""
    if metric not in METRICS:
        raise FedbenchError(f"unknown metric {metric!r}; choose one of: {', '.join(METRICS)}")
    dirs = run_dirs(results)
    if not dirs:
        raise FedbenchError(f"no runs in {results}; run fedbench train first")
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for d in dirs:
        meta, rounds = read_run(d)
        if metric not in rounds:
            continue
        series = rounds[["round", metric]].dropna()
        ax.plot(series["round"], series[metric], label=run_label(meta), lw=1.4)
    ax.set_xlabel("round")
    ax.set_ylabel(metric.replace("_", " "))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    paths = [out.with_suffix(".png"), out.with_suffix(".pdf")]
    for p in paths:
        fig.savefig(p, dpi=150)
    plt.close(fig)
    return paths
