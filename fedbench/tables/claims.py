"""The papers' qualitative claims: the check language that paper modules write.

(Checking a table's claims over its evaluated cells is fedbench.tables.verdicts.)

A claim is one line of the paper's text and a check over one dataset's cells. Checks read
cells through a view (CellView): v.mean(row, col) is our mean (None when the cell is missing or
n/a, math.inf when the target was not reached), v.paper(row, col) the paper's PaperValue (or
None), v.dataset the dataset. A row may be a callable of the dataset.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Verdict:
    holds: bool | None  # None: n/a (a cell without a number, or nothing to decide)
    ours: str
    paper: str = ""


@dataclass(frozen=True)
class Claim:
    text: str
    check: Callable[[Any], Verdict] = field(repr=False)
    datasets: tuple[str, ...] | None = None  # None: every dataset of the table
    source: str = ""  # where the paper says it, shown when the check has no paper numbers


Ref = tuple[Any, str]  # (row or row(dataset), col)


def _show(v) -> str:
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
    return ", ".join(f"{_label(v, r)} {_show(x)}" for r, x in zip(refs, values))


def lowest(best: Ref, others: list[Ref], lower: bool = True, stated: str = "") -> Callable:
    """`best` beats every one of `others` (lower value, or higher with lower=False)."""

    def check(v) -> Verdict:
        refs = [best, *others]
        paper_vals = [_pv(v, r) for r in refs]
        paper = stated
        if all(p is not None for p in paper_vals):
            paper = listing(v, refs, paper_vals)
        a = v.mean(*best)
        have = [r for r in others if v.mean(*r) is not None]
        # nothing reached the target: nothing to order (n/a below)
        decided = a is not None and not all(math.isinf(v.mean(*r)) for r in [best, *have])
        beaten = [r for r in have if not _beats(a, v.mean(*r), lower)] if decided else []
        if beaten:  # decided by the cells there are, whatever the missing ones hold
            shown = [best, *have]
            return Verdict(False, listing(v, shown, [v.mean(*r) for r in shown]), paper)
        na = not_applicable(v, refs, paper)
        if na:
            return na
        rest = [v.mean(*r) for r in others]
        return Verdict(True, listing(v, refs, [a, *rest]), paper)

    return check


def _beats(a: float, b: float, lower: bool) -> bool:
    if lower:  # a tie in 'not reached' is not a win
        return a < b and not math.isinf(a)
    return a > b


def ordered(refs: list[Ref], increasing: bool = True, stated: str = "") -> Callable:
    """The cells' values are monotone along refs (ties allowed)."""

    def check(v) -> Verdict:
        paper_vals = [_pv(v, r) for r in refs]
        paper = listing(v, refs, paper_vals) if None not in paper_vals else stated
        na = not_applicable(v, refs, paper)
        if na:
            return na
        vals = [v.mean(*r) for r in refs]
        pairs = list(zip(vals, vals[1:]))
        ok = all((a <= b) if increasing else (a >= b) for a, b in pairs)
        return Verdict(ok, listing(v, refs, vals), paper)

    return check


def ratio_near(num: Ref, den: Ref, tol: float = 0.25, paper_ratio: float | None = None):
    """ours num/den within a factor (1 + tol) of the paper's (its cells' ratio, or given)."""

    def check(v) -> Verdict:
        pn, pd_ = _pv(v, num), _pv(v, den)
        want = paper_ratio if paper_ratio is not None else (pn / pd_ if pn and pd_ else None)
        if want is None:
            return Verdict(None, "the paper gives no ratio here")
        paper = f"{want:.2f}x (within {tol:.0%})"
        na = not_applicable(v, [num, den], paper)
        if na:
            return na
        a, b = v.mean(*num), v.mean(*den)
        if math.isinf(a) or math.isinf(b) or b == 0:
            return Verdict(None, f"{_show(a)} / {_show(b)}", paper)
        r = a / b
        return Verdict(want / (1 + tol) <= r <= want * (1 + tol), f"{r:.2f}x", paper)

    return check


def within_ci(refs: list[Ref]) -> Callable:
    """Every cell's mean inside the paper's interval."""

    def check(v) -> Verdict:
        have = [r for r in refs if v.paper(*r) is not None and v.paper(*r).low is not None]
        if not have:
            return Verdict(None, "the paper gives no interval here")
        paper = ", ".join(f"{_label(v, r)} {v.paper(*r).text}" for r in have)
        na = not_applicable(v, have, paper)
        if na:
            return na
        vals = [v.mean(*r) for r in have]
        ok = all(v.paper(*r).low <= x <= v.paper(*r).high for r, x in zip(have, vals))
        return Verdict(ok, listing(v, have, vals), paper)

    return check


def same_as_paper(refs: list[Ref], rel: float = 0.0) -> Callable:
    """Every cell equals the paper's value (strings), or is within rel of it (numbers)."""

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
    """Every cell reached the target (a finite number of rounds)."""

    def check(v) -> Verdict:
        vals = [v.mean(*r) for r in refs]
        if None in vals:
            return not_applicable(v, refs, stated) or Verdict(None, "no number", stated)
        ok = not any(isinstance(x, float) and math.isinf(x) for x in vals)
        return Verdict(ok, listing(v, refs, vals), stated)

    return check


def every(*checks: Callable) -> Callable:
    """All checks hold: false as soon as one part is false (the missing parts cannot change
    that), else n/a if any part is n/a; ours and paper: the failing or first part."""

    def check(v) -> Verdict:
        out = [c(v) for c in checks]
        bad = [x for x in out if x.holds is False]
        if bad:
            return Verdict(False, bad[0].ours, bad[0].paper)
        na = [x for x in out if x.holds is None]
        if na:
            return na[0]
        return Verdict(True, out[0].ours, out[0].paper)

    return check
