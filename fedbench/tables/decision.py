"""The decision rule every claim is checked by (RULE states it; each table's footer repeats it).

A claim is reproduced, not reproduced, or inconclusive, decided over seeds:

- a difference ("x needs fewer rounds than y", "x is more accurate than y") is the paired
  difference over the seeds both cells ran: its Student-t 95 % interval (t_{0.975, n-1} s/sqrt(n))
  must exclude zero on the claimed side (reproduced) or on the other side (not reproduced; so
  is a difference that is zero on every seed); an interval that holds zero is inconclusive, and
  so is a single seed (no interval);
- an order (x <= y <= z) is reproduced where its first and last cells differ in the claimed
  direction and no adjacent step is reversed, not reproduced where a step or the ends are
  reversed, each judged as a difference; inconclusive otherwise;
- an equality within a tolerance (a ratio near the paper's, a value inside the paper's interval)
  holds where our interval lies within the tolerance, fails where it lies wholly outside it;
- rounds (or seconds) to a target: a seed that never reached it (it diverged, or ran all its
  rounds without reaching it) is "never" (+inf), never dropped. A paired difference with a never
  seed has no finite mean, so no interval: the rule then counts seeds in each direction (both
  never: a tie) and decides where at least two seeds differ and every one that differs points
  the same way; else inconclusive. The count replaces the interval, so a never seed against the
  direction the finite seeds' interval would decide makes the claim inconclusive (never the
  other way), and one with it leaves it decided. With 3 seeds the count is weaker than the
  interval (3 of 3 by chance: 1 in 8);
- a tie (every seed exactly equal) refutes a claimed difference (not reproduced), except at
  the floor 0 (both converged exactly, e.g. a loss or distance of 0 on every seed), where the
  measure cannot separate them: "tie at 0", counted inconclusive.

Pure arithmetic: no torch, pandas or other fedbench module.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

LEVEL = 0.95
RULE = (
    "decision rule: a claim is reproduced, not reproduced or inconclusive over seeds; a "
    "difference or order counts only where the Student-t 95% interval of its paired seed "
    "differences excludes zero (one seed: inconclusive; equal on every seed: not reproduced, "
    "but a tie at 0, where the measure cannot separate them, inconclusive); an equality holds "
    "where the interval lies within its tolerance, fails where it lies outside; a seed that "
    "never reached the target (diverged, or not within its "
    "rounds) is 'never' (+inf): where a pair has one, seeds are counted in each direction "
    "(both never: a tie) and the claim is decided only where at least two differ and all that "
    "differ agree, else inconclusive (with 3 seeds a weaker test than the interval: 1 in 8 by "
    "chance); each quantity's scale is declared before any result: losses, distances, "
    "dissimilarities and smoothness (positive, skewed) are compared as log ratios, rounds, "
    "accuracy and seconds as raw differences"
)


# ---------------------------------------------------------------- Student's t


def _betacf(a: float, b: float, x: float) -> float:
    """The continued fraction of the regularized incomplete beta function (Lentz)."""
    tiny, qab, qap, qam = 1e-300, a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        for aa in (
            m * (b - m) * x / ((qam + m2) * (a + m2)),
            -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2)),
        ):
            d = 1.0 + aa * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + aa / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h


def _betainc(a: float, b: float, x: float) -> float:
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    ln = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(ln) * _betacf(a, b, x) / a
    return 1.0 - math.exp(ln) * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: int) -> float:
    """P(T <= t) for Student's t with df degrees of freedom."""
    x = df / (df + t * t)
    tail = 0.5 * _betainc(df / 2.0, 0.5, x)
    return 1.0 - tail if t >= 0 else tail


def t_quantile(p: float, df: int) -> float:
    """The p-quantile of Student's t (bisection on the cdf; t_{0.975, 2} = 4.303)."""
    lo, hi = -1e3, 1e3
    for _ in range(200):
        mid = (lo + hi) / 2.0
        if t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2.0


def t_interval(values: Sequence[float], level: float = LEVEL) -> tuple[float, float, float] | None:
    """(mean, low, high) of the Student-t interval of the mean; None under two values."""
    n = len(values)
    if n < 2:
        return None
    mean = sum(values) / n
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    h = t_quantile(0.5 + level / 2.0, n - 1) * sd / math.sqrt(n)
    return mean, mean - h, mean + h


# ---------------------------------------------------------------- outcomes

REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE = "reproduced", "not reproduced", "inconclusive"


@dataclass(frozen=True)
class Seeds:
    """One cell's per-seed values: values[seed], censored ones at their bound. `larger`: seeds
    whose true value may be larger than shown ('> R': never reached the target, at R); `smaller`:
    seeds whose true value may be smaller (a ratio over a censored denominator)."""

    values: Mapping[int, float]
    larger: frozenset[int] = frozenset()
    smaller: frozenset[int] = frozenset()

    @property
    def censored(self) -> bool:
        return bool(self.larger or self.smaller)


@dataclass(frozen=True)
class Decision:
    outcome: str  # reproduced | not reproduced | inconclusive
    interval: tuple[float, float, float] | None  # (mean, low, high) of what was tested
    n: int  # seeds it was decided over
    # where a seed was never (+inf): seeds (for, against, tied) the claim, counted instead
    signs: tuple[int, int, int] | None = None
    tie: bool = False  # every seed exactly equal: nothing to decide
    scale: str = "raw"  # log: the values were log-transformed (the interval is of log ratios)

    @property
    def holds(self) -> bool | None:
        return {REPRODUCED: True, NOT_REPRODUCED: False}.get(self.outcome)


def _by_signs(diffs: Sequence[float], margin: float) -> Decision:
    """A pair with a never seed: count the seeds each way (nan, never against never: a tie);
    decided where at least two differ and every one that differs agrees."""
    up = sum(d > margin for d in diffs)
    down = sum(d < -margin for d in diffs)
    tied = len(diffs) - up - down
    outcome = INCONCLUSIVE
    if up >= 2 and not down:
        outcome = REPRODUCED
    elif down >= 2 and not up:
        outcome = NOT_REPRODUCED
    return Decision(outcome, None, len(diffs), signs=(up, down, tied))


def less(x: Seeds, y: Seeds, margin: float = 0.0) -> Decision:
    """The claim x < y, decided on the paired differences y_s - x_s over the seeds both hold;
    with a margin (a measurement's drift, e.g. seconds under a changing load), the interval
    must clear it: above +margin (reproduced), below -margin (not), else inconclusive. A
    never seed (+inf) makes the pair a count of seeds each way (_by_signs); every seed equal is
    a tie (not reproduced; at 0 on every seed, inconclusive).

    Censoring at a bound moves a difference one way only: a seed of x that may be larger (or of
    y that may be smaller) can only shrink y - x, so the claim cannot be confirmed through it;
    one of y that may be larger (or of x smaller) can only grow it, so the claim cannot be
    refuted through it."""
    common = sorted(set(x.values) & set(y.values))
    diffs = [y.values[s] - x.values[s] for s in common]
    if not all(math.isfinite(d) for d in diffs):
        return _by_signs(diffs, margin)
    iv = t_interval(diffs)
    if iv is None:
        return Decision(INCONCLUSIVE, None, len(common))
    _, lo, hi = iv
    shrinks = any(s in x.larger or s in y.smaller for s in common)
    grows = any(s in y.larger or s in x.smaller for s in common)
    if not any(diffs):  # the claimed difference is not there; at the floor 0 it cannot be
        floor = not any(x.values[s] for s in common)
        out = INCONCLUSIVE if floor or grows else NOT_REPRODUCED
        return Decision(out, iv, len(common), tie=True)
    if lo > margin and not shrinks:
        return Decision(REPRODUCED, iv, len(common))
    if hi < -margin and not grows:
        return Decision(NOT_REPRODUCED, iv, len(common))
    return Decision(INCONCLUSIVE, iv, len(common))


def combine_all(outcomes: Sequence[str]) -> str:
    """Every part must hold: not reproduced if one fails, else inconclusive if one is."""
    if NOT_REPRODUCED in outcomes:
        return NOT_REPRODUCED
    return INCONCLUSIVE if INCONCLUSIVE in outcomes else REPRODUCED


def ordered(cells: Sequence[Seeds]) -> tuple[str, list[Decision]]:
    """cells[0] <= cells[1] <= ...: reproduced where the ends differ in that direction and no
    adjacent step is reversed; not reproduced where a step or the ends are reversed (the
    decisions: the ends first, then each step)."""
    ends = less(cells[0], cells[-1])
    steps = [less(b, a) for a, b in zip(cells, cells[1:])]  # a step reversed: b < a
    parts = [ends, *steps]
    if ends.outcome == NOT_REPRODUCED or any(d.outcome == REPRODUCED for d in steps):
        return NOT_REPRODUCED, parts
    return ends.outcome, parts


def within(values: Seeds, low: float, high: float) -> Decision:
    """Our mean's interval inside [low, high] (reproduced) or wholly outside it (not
    reproduced); censored seeds can only confirm a miss on their own side."""
    vals = list(values.values.values())
    if not all(math.isfinite(v) for v in vals):  # a never seed: count the seeds each side
        above, below = sum(v > high for v in vals), sum(v < low for v in vals)
        one_side = len(vals) >= 2 and len(vals) in (above, below)
        signs = (len(vals) - above - below, above + below, 0)  # (inside, outside, -)
        return Decision(NOT_REPRODUCED if one_side else INCONCLUSIVE, None, len(vals), signs)
    iv = t_interval(vals)
    if iv is None:
        return Decision(INCONCLUSIVE, None, len(vals))
    _, lo, hi = iv
    if low <= lo and hi <= high and not values.censored:
        return Decision(REPRODUCED, iv, len(vals))
    if (lo > high and not values.smaller) or (hi < low and not values.larger):
        return Decision(NOT_REPRODUCED, iv, len(vals))
    return Decision(INCONCLUSIVE, iv, len(vals))


def logs(x: Seeds) -> Seeds:
    """The seeds on the log scale (a positive quantity: differences become log ratios); never
    (+inf) stays never."""
    return Seeds({s: math.log(v) for s, v in x.values.items()}, x.larger, x.smaller)


def ratios(num: Seeds, den: Seeds) -> Seeds:
    """Per-seed ratios num_s / den_s over the common seeds (den_s > 0); a numerator that may be
    larger makes its ratio one that may be larger, a denominator that may be larger one that
    may be smaller."""
    common = [s for s in sorted(set(num.values) & set(den.values)) if den.values[s] > 0]
    # never over never has no ratio; never over a number is +inf, a number over never 0
    common = [s for s in common if math.isfinite(num.values[s]) or math.isfinite(den.values[s])]
    return Seeds(
        {s: num.values[s] / den.values[s] for s in common},
        frozenset(s for s in common if s in num.larger or s in den.smaller),
        frozenset(s for s in common if s in den.larger or s in num.smaller),
    )
