"""The papers' qualitative claims: the check language that paper modules write.

(Checking a table's claims over its evaluated cells is fedbench.tables.verdicts; the rule that
decides each claim over seeds is fedbench.tables.decision.)

A claim is one line of the paper's text and a check over one dataset's cells. Checks read
cells through a view (CellView): v.seeds(row, col) is a cell's per-seed values (decision.Seeds,
a seed that never reached the target at +inf; None when the cell has no number), v.mean(row,
col) our mean (None when missing or n/a, math.inf when no seed reached the target, the mean
at the caps when some did not), v.text(row, col) how the mean is shown, v.paper(row, col)
the paper's PaperValue (or None), v.dataset the dataset. A row may be a callable of the dataset.

Every check returns a Verdict: reproduced, not reproduced or inconclusive by the decision rule,
or n/a where a cell it needs has no number.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from fedbench.tables import decision as rule

N_A = "n/a"


@dataclass(frozen=True)
class Verdict:
    holds: bool | None  # True: reproduced, False: not reproduced, None: inconclusive or n/a
    ours: str
    paper: str = ""
    inconclusive: bool = False  # holds is None because the seeds do not decide (not n/a)

    @property
    def outcome(self) -> str:
        if self.holds is not None:
            return rule.REPRODUCED if self.holds else rule.NOT_REPRODUCED
        return rule.INCONCLUSIVE if self.inconclusive else N_A


def decided(outcome: str, ours: str, paper: str = "") -> Verdict:
    """The Verdict of a decision-rule outcome."""
    holds = {rule.REPRODUCED: True, rule.NOT_REPRODUCED: False}.get(outcome)
    return Verdict(holds, ours, paper, inconclusive=outcome == rule.INCONCLUSIVE)


@dataclass(frozen=True)
class Claim:
    text: str
    check: Callable[[Any], Verdict] = field(repr=False)
    datasets: tuple[str, ...] | None = None  # None: every dataset of the table
    source: str = ""  # where the paper says it, shown when the check has no paper numbers
    # False: a measurement beside the claims (e.g. a bound the paper implies), shown with its
    # numbers but not counted among the outcomes
    counted: bool = True


Ref = tuple[Any, str]  # (row or row(dataset), col)


def show_number(v) -> str:
    if v is None:
        return "no number"
    if isinstance(v, float):
        if math.isinf(v):
            return "not reached"
        return f"{int(v)}" if v.is_integer() and abs(v) < 1e9 else f"{v:.3g}"
    return str(v)


def _label(v, ref: Ref) -> str:
    row = v.row(ref[0])
    return row if len(v.cols) == 1 else f"{row} {ref[1]}"


def _pv(v, ref: Ref):
    p = v.paper(*ref)
    return None if p is None or isinstance(p.value, str) else float(p.value)


def not_applicable(v, refs, paper="") -> Verdict | None:
    """n/a when a cell has no number (no runs, n/a, no value), or when every cell is
    'not reached' (nothing to order)."""
    vals = [v.mean(*r) for r in refs]
    missing = [_label(v, r) for r, x in zip(refs, vals) if x is None]
    if missing:
        return Verdict(None, f"no number for {', '.join(missing[:3])}", paper)
    if all(isinstance(x, float) and math.isinf(x) for x in vals):
        return Verdict(None, "none reached the target", paper)
    return None


def listing(v, refs, values) -> str:
    return ", ".join(f"{_label(v, r)} {show_number(x)}" for r, x in zip(refs, values))


def ours_listing(v, refs) -> str:
    """Our cells as shown: '> R' for one that never reached the target, '> m' for a mean with
    censored seeds in it."""
    return ", ".join(f"{_label(v, r)} {v.text(*r)}" for r in refs)


def _interval(d: rule.Decision, what: str) -> str:
    """'what: mean [low, high] (n seeds)' of a decision, or why it has no interval."""
    if d.signs is not None:  # a never seed: the seeds counted each way
        up, down, tied = d.signs
        return f"{what}: a seed never reached, by count: {up} for, {down} against, {tied} tied"
    if d.interval is None:
        return f"{what}: {d.n} seed{'s' if d.n != 1 else ''}, no interval"
    if d.tie:
        at = " at 0, where it cannot separate them" if d.outcome == rule.INCONCLUSIVE else ""
        return f"{what}: equal on every seed{at} ({d.n} seeds)"
    if d.scale == "log":  # log ratios shown as the ratio (geometric mean) and its interval
        m, lo, hi = (math.exp(x) for x in d.interval)
        return f"{what} (log scale): x{m:.3g} [x{lo:.3g}, x{hi:.3g}] ({d.n} seeds)"
    m, lo, hi = d.interval
    return f"{what}: {m:+.3g} [{lo:+.3g}, {hi:+.3g}] ({d.n} seeds)"


def _on_scale(v, refs: list[Ref]) -> tuple[list[rule.Seeds], str]:
    """The cells' seeds on their declared scale (metrics.Metric.scale): log ratios where every
    cell is of a positive, skewed quantity and every seed is above 0; else raw (a seed at 0,
    e.g. a distance at the floor, has no log)."""
    seeds = [v.seeds(*r) for r in refs]
    scale = getattr(v, "scale", lambda row, col: "raw")  # a view without scales: raw
    if all(scale(*r) == "log" for r in refs) and all(
        x > 0 for s in seeds for x in s.values.values()
    ):
        return [rule.logs(s) for s in seeds], "log"
    return seeds, "raw"


def _pair(v, a: Ref, b: Ref, lower: bool, drift: float = 0.0) -> rule.Decision:
    """'a beats b': a < b (lower) or a > b, paired over the seeds on their scale; by more than
    drift x a's mean where the measurement drifts (decision.less's margin)."""
    (sa, sb), scale = _on_scale(v, [a, b])
    mean = v.mean(*a)
    margin = drift * abs(mean) if drift and math.isfinite(mean) else 0.0
    margin = math.log1p(drift) if scale == "log" and drift else margin
    d = rule.less(sa, sb, margin) if lower else rule.less(sb, sa, margin)
    return replace(d, scale=scale)


def _diff_name(v, a: Ref, b: Ref, lower: bool, scale: str = "raw") -> str:
    """The difference a pair's interval is of: the one the claim says is positive (a ratio
    on the log scale)."""
    big, small = (b, a) if lower else (a, b)
    return f"{_label(v, big)} {'/' if scale == 'log' else '-'} {_label(v, small)}"


def _deciding(decisions: list[rule.Decision], outcome: str) -> int:
    """Which part's interval to show: the first that fails or does not decide; else the one
    nearest zero."""
    for i, d in enumerate(decisions):
        if d.outcome == outcome:
            return i
    return min(
        range(len(decisions)),
        key=lambda i: abs(decisions[i].interval[1]) if decisions[i].interval else 0.0,
    )


def lowest(
    best: Ref, others: list[Ref], lower: bool = True, stated: str = "", drift: float = 0.0
) -> Callable:
    """`best` beats every one of `others` (lower value, or higher with lower=False): each pair a
    difference over the seeds (decision.less), by more than drift x best's mean where the
    measurement itself drifts (seconds on a shared machine)."""

    def check(v) -> Verdict:
        refs = [best, *others]
        paper_vals = [_pv(v, r) for r in refs]
        paper = listing(v, refs, paper_vals) if None not in paper_vals else stated
        if v.mean(*best) is None:
            return not_applicable(v, refs, paper)
        have = [r for r in others if v.mean(*r) is not None]
        pairs = [_pair(v, best, r, lower, drift) for r in have]
        outcome = rule.combine_all([d.outcome for d in pairs]) if pairs else rule.INCONCLUSIVE
        if outcome != rule.NOT_REPRODUCED:  # a failing pair decides, whatever the missing say
            na = not_applicable(v, refs, paper)
            if na:
                return na
        i = _deciding(pairs, outcome)
        why = _interval(pairs[i], _diff_name(v, best, have[i], lower, pairs[i].scale))
        shown = [best, *have] if outcome == rule.NOT_REPRODUCED else refs
        return decided(outcome, f"{ours_listing(v, shown)}; {why}", paper)

    return check


def ordered(refs: list[Ref], increasing: bool = True, stated: str = "") -> Callable:
    """The cells' values are monotone along refs (ties allowed): the ends differ in that
    direction and no step is reversed, over the seeds (decision.ordered)."""

    def check(v) -> Verdict:
        paper_vals = [_pv(v, r) for r in refs]
        paper = listing(v, refs, paper_vals) if None not in paper_vals else stated
        na = not_applicable(v, refs, paper)
        if na:
            return na
        chain = refs if increasing else list(reversed(refs))
        seeds, scale = _on_scale(v, chain)
        outcome, parts = rule.ordered(seeds)
        parts = [replace(d, scale=scale) for d in parts]
        op = "/" if scale == "log" else "-"
        names = [f"{_label(v, chain[-1])} {op} {_label(v, chain[0])}"] + [
            f"{_label(v, a)} {op} {_label(v, b)}" for a, b in zip(chain, chain[1:])
        ]
        # the ends when they decide; else the step that is reversed
        i = (
            0
            if outcome != rule.NOT_REPRODUCED or parts[0].holds is False
            else next(j for j in range(1, len(parts)) if parts[j].holds)
        )
        return decided(outcome, f"{ours_listing(v, refs)}; {_interval(parts[i], names[i])}", paper)

    return check


def ratio_near(
    num: Ref,
    den: Ref,
    tol: float = 0.25,
    paper_ratio: float | None = None,
    paper_from: tuple[Ref, Ref] | None = None,
):
    """ours num/den within a factor (1 + tol) of the paper's (its cells' ratio, the ratio of
    the paper values of the cells paper_from names, or given): the interval of the per-seed
    ratios inside that band (decision.within)."""

    def check(v) -> Verdict:
        pn, pd_ = (_pv(v, r) for r in (paper_from or (num, den)))
        want = paper_ratio if paper_ratio is not None else (pn / pd_ if pn and pd_ else None)
        if want is None:
            return Verdict(None, "the paper gives no ratio here")
        paper = f"{want:.2f}x (within {tol:.0%})"
        na = not_applicable(v, [num, den], paper)
        if na:
            return na
        r = rule.ratios(v.seeds(*num), v.seeds(*den))
        d = rule.within(r, want / (1 + tol), want * (1 + tol))
        shown = f"{ours_listing(v, [num, den])}; " + _interval(d, "ratio").replace("+", "")
        return decided(d.outcome, shown, paper)

    return check


def within_ci(refs: list[Ref]) -> Callable:
    """Every cell inside the paper's interval: our interval within theirs (decision.within).
    An absolute value: n/a unless the runs are at the paper's own setting (v.cut empty)."""

    def check(v) -> Verdict:
        have = [r for r in refs if v.paper(*r) is not None and v.paper(*r).low is not None]
        if not have:
            return Verdict(None, "the paper gives no interval here")
        paper = ", ".join(f"{_label(v, r)} {v.paper(*r).text}" for r in have)
        if getattr(v, "cut", ""):
            return Verdict(None, f"an absolute value at a cut scale ({v.cut})", paper)
        na = not_applicable(v, have, paper)
        if na:
            return na
        parts = [rule.within(v.seeds(*r), v.paper(*r).low, v.paper(*r).high) for r in have]
        outcome = rule.combine_all([d.outcome for d in parts])
        i = _deciding(parts, outcome) if outcome != rule.REPRODUCED else 0
        why = _interval(parts[i], _label(v, have[i])).replace("+", "")
        return decided(outcome, f"{ours_listing(v, have)}; {why}", paper)

    return check


def same_as_paper(refs: list[Ref], rel: float = 0.0) -> Callable:
    """Every cell equals the paper's value (strings), or is within rel of it (numbers): for
    exact cells (constants, data statistics, derived labels), no seeds involved."""

    def check(v) -> Verdict:
        have = [r for r in refs if v.paper(*r) is not None]
        if not have:
            return Verdict(None, "the paper gives no value here")
        pvals = [v.paper(*r).value for r in have]
        paper = listing(v, have, pvals)
        na = not_applicable(v, have, paper)
        if na:
            return na
        vals = [v.mean(*r) for r in have]
        same = [
            x == p if isinstance(p, str) or isinstance(x, str) else abs(x - p) <= rel * abs(p)
            for x, p in zip(vals, pvals)
        ]
        if all(same):
            return Verdict(True, f"{len(same)} of {len(same)} equal")  # paper: the claim's source
        off = [i for i, ok in enumerate(same) if not ok]  # show only the cells that differ
        pick = [have[i] for i in off]
        return Verdict(
            False,
            f"{len(off)} of {len(same)} differ: " + listing(v, pick, [vals[i] for i in off]),
            listing(v, pick, [pvals[i] for i in off]),
        )

    return check


def reached(refs: list[Ref], stated: str = "") -> Callable:
    """Every cell reached the target: reproduced where every seed did, not reproduced where a
    cell has no seed that did, inconclusive where some seeds did not."""

    def check(v) -> Verdict:
        if any(v.mean(*r) is None for r in refs):
            return not_applicable(v, refs, stated) or Verdict(None, "no number", stated)
        seeds = [v.seeds(*r) for r in refs]
        if any(math.isinf(v.mean(*r)) for r in refs):
            outcome = rule.NOT_REPRODUCED
        elif any(s.larger or not all(map(math.isfinite, s.values.values())) for s in seeds):
            outcome = rule.INCONCLUSIVE
        else:
            outcome = rule.REPRODUCED
        return decided(outcome, ours_listing(v, refs), stated)

    return check


def every(*checks: Callable) -> Callable:
    """All checks hold: not reproduced as soon as one part is (the missing parts cannot change
    that), else n/a if any part is n/a, else inconclusive if any part is; ours and paper: the
    deciding part (the first that fails, is n/a or does not decide), or the first."""

    def check(v) -> Verdict:
        out = [c(v) for c in checks]
        for outcome in (rule.NOT_REPRODUCED, N_A, rule.INCONCLUSIVE):
            part = next((x for x in out if x.outcome == outcome), None)
            if part is not None:
                return part
        return Verdict(True, out[0].ours, out[0].paper)

    return check


def untestable(why: str, stated: str = "") -> Callable:
    """A claim this machine cannot decide (n/a, never counted), saying why: e.g. seconds of
    runs made minutes apart on a shared machine, whose load moves them more than the gap."""

    def check(v) -> Verdict:
        return Verdict(None, f"not testable on a shared machine: {why}", stated)

    return check
