"""How one run reduces to a number (a Metric), by name; a table cell names its metric."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

# Columns of rounds.parquet that other parts of fedbench write and these metrics read
QUAD_DISTANCE = "dist_to_opt"  # per-round |x - x*| (SFL quadratic)
DISSIMILARITY = "dissimilarity"  # per-round FedProx gradient dissimilarity
LOCAL_ACC_COLUMNS = ("local_acc", "train_acc", "test_acc")  # smoothness curve, first present


@dataclass(frozen=True)
class Metric:
    """How one run reduces to a number: fn(summary, rounds) where rounds(columns) loads
    rounds.parquet lazily (None when unreadable). math.inf means "target not reached"."""

    label: str
    fn: Callable[[dict, Callable[[list[str]], pd.DataFrame | None]], float | None]
    digits: int = 2
    higher_is_better: bool = True
    # "rounds/seconds to a target": a run that diverged before reaching it did not reach it
    # (math.inf), one that reached it first keeps its value; other metrics skip diverged runs
    diverged_counts: bool = False
    # a run that never reached the target is censored at "> per_round x summary[cap_key]"
    # (its rounds run; for seconds, the seconds it ran)
    per_round: float = 1.0
    cap_key: str = "rounds_run"
    # the scale claims compare two cells' seeds on, declared per quantity before any result:
    # "log" (log ratios) for positive, skewed ones (losses, distances, dissimilarities, the
    # smoothness ratio: a gap is relative), "raw" (differences) for rounds, accuracy, seconds
    scale: str = "raw"


def _summary_or(key: str, curve_fn):
    def fn(summary, rounds):
        v = summary.get(key)
        if v is not None and not (isinstance(v, float) and math.isnan(v)):
            return float(v)
        return curve_fn(rounds) if curve_fn else None

    return fn


def _to_target(key: str):
    def fn(summary, rounds):
        if summary.get("target_acc") is None:
            return None
        v = summary.get(key)
        return math.inf if v is None else float(v)

    return fn


def _scaled_to_target(key: str, factor: float):
    """A to-target value counted in another unit: FedSAM's rounds at equal gradient
    evaluations are factor = 2 times its rounds (two gradients a local step, methods/fedsam.py;
    the same plan as every other method's, so twice FedAvg's grad_evals each round)."""
    base = _to_target(key)

    def fn(summary, rounds):
        v = base(summary, rounds)
        return v if v is None else factor * v

    return fn


def _best_acc_first(fraction: float):
    """Best test accuracy % over rounds 0 .. floor(fraction x rounds run): the rounds a method
    with 1 / fraction times the gradient evaluations a step has had by then (FedSAM: 1/2)."""

    def fn(summary, rounds):
        df = rounds(["round", "test_acc"])
        last = summary.get("rounds_run")
        if df is None or "test_acc" not in df or last is None:
            return None
        acc = df[df["round"] <= int(fraction * int(last))]["test_acc"].dropna()
        return 100.0 * float(acc.max()) if len(acc) else None

    return fn


def _final_loss(summary, rounds):
    for key in ("final_train_loss", "final_local_loss"):
        v = summary.get(key)
        if v is not None and not math.isnan(v):
            return float(v)
    df = rounds(["train_loss", "local_loss"])
    if df is None:
        return None
    for col in ("train_loss", "local_loss"):
        if col in df and df[col].notna().any():
            return float(df[col].dropna().iloc[-1])
    return None


def _rounds_to(acc: float):
    """First round (0 = the initial model) whose test accuracy reaches acc (FedSoftMax R90)."""

    def fn(summary, rounds):
        df = rounds(["round", "test_acc"])
        if df is None or "test_acc" not in df:
            return None
        hit = df[df["test_acc"] >= acc]
        return float(hit["round"].iloc[0]) if len(hit) else math.inf

    return fn


def _smoothness(summary, rounds):
    """std(diff(c)) / |mean(diff(c))| of the per-round accuracy curve c (spec §6.6), per run."""
    df = rounds(["round", *LOCAL_ACC_COLUMNS])
    if df is None:
        return None
    for col in LOCAL_ACC_COLUMNS:
        if col in df and df[col].notna().sum() > 2:
            d = df[df["round"] > 0][col].dropna().diff().dropna()
            m = float(d.mean())
            return float(d.std(ddof=0)) / abs(m) if m else math.inf
    return None


def _column_stat(col: str, how: str, scale: float = 1.0, last: int = 0):
    def fn(summary, rounds):
        df = rounds([col])
        if df is None or col not in df or df[col].notna().sum() == 0:
            return None
        s = df[col].dropna()
        if last:
            s = s.iloc[-last:]
        return scale * float(s.iloc[-1] if how == "last" else s.mean())

    return fn


def _pct(key):
    def fn(summary, rounds):
        v = summary.get(key)
        return None if v is None else 100.0 * float(v)

    return fn


METRICS: dict[str, Metric] = {
    "best_acc": Metric("best test acc %", _pct("best_acc")),
    "best_acc_half_rounds": Metric(
        "best test acc % in the first half of the rounds", _best_acc_first(0.5)
    ),
    "final_acc": Metric("final test acc %", _pct("final_acc")),
    "rounds_to_target": Metric(
        "rounds to target", _to_target("rounds_to_target"), 1, False, diverged_counts=True
    ),
    "rounds_to_target_2grads": Metric(
        "rounds to target at equal gradient evaluations (2 a step)",
        _scaled_to_target("rounds_to_target", 2.0),
        1,
        False,
        diverged_counts=True,
        per_round=2.0,
    ),
    "seconds_to_target": Metric(
        "s to target",
        _to_target("seconds_to_target"),
        1,
        False,
        diverged_counts=True,
        cap_key="total_seconds",
    ),
    "mean_round_seconds": Metric("s / round", _summary_or("mean_round_seconds", None), 3, False),
    "final_train_loss": Metric("final train loss", _final_loss, 4, False, scale="log"),
    "r90": Metric("R90", _rounds_to(0.9), 2, False),
    "smoothness": Metric("smoothness", _smoothness, 3, False, scale="log"),
    "mean_dissimilarity": Metric(
        "mean dissimilarity", _column_stat(DISSIMILARITY, "mean"), 4, False, scale="log"
    ),
    "last25_acc": Metric(
        "test acc % (last 25 evals)", _column_stat("test_acc", "mean", 100.0, 25), 2
    ),
    "final_dist": Metric(
        "final |x - x*|", _column_stat(QUAD_DISTANCE, "last"), 4, False, scale="log"
    ),
}
