"""Checking a table's claims over its evaluated cells: each claim's check reads one dataset's
cells through a CellView and gives a Verdict (the language is fedbench.tables.claims)."""

from __future__ import annotations

import math

from fedbench.tables.claims import show_number
from fedbench.tables.decision import RULE, Seeds
from fedbench.tables.paper_values import PaperValue
from fedbench.tables.result import CellResult, ClaimResult, TableResult


class CellView:
    """One dataset's cells of a table result, as claim checks read them."""

    def __init__(self, result: TableResult, dataset: str):
        self.dataset = dataset
        self._by = {(c.cell.row, c.cell.col): c for c in result.cells if c.cell.dataset == dataset}
        self.cols = {col for _, col in self._by}
        self.cut = _cut(result)

    def row(self, row) -> str:
        return row(self.dataset) if callable(row) else row

    def _get(self, row, col) -> CellResult | None:
        return self._by.get((self.row(row), col))

    def mean(self, row, col):
        c = self._get(row, col)
        if c is None or c.status in ("missing", "unavailable") or c.mean is None:
            return None
        return c.mean

    def seeds(self, row, col) -> Seeds | None:
        """The cell's per-seed values, a seed that never reached the target (it diverged, or
        ran its rounds without reaching it) at +inf ('never'; the tables show it at its cap);
        an exact cell (a constant, a derived number) is one value."""
        c, m = self._get(row, col), self.mean(row, col)
        if m is None or isinstance(m, str):
            return None
        if c.seed_values:
            vals = {s: math.inf if s in c.censored else v for s, v in c.seed_values.items()}
            return Seeds(vals)
        return Seeds({0: float(m)})

    def scale(self, row, col) -> str:
        """The scale claims compare this cell on (its metric's, declared: raw or log)."""
        from fedbench.tables.metrics import METRICS

        c = self._get(row, col)
        metric = METRICS.get(c.cell.metric) if c is not None and c.cell.metric else None
        return metric.scale if metric else "raw"

    def text(self, row, col) -> str:
        """The mean as a claim line shows it: '> R' when no seed reached the target, '> m' when
        some did not (m: the mean with those at R)."""
        c, m = self._get(row, col), self.mean(row, col)
        if isinstance(m, float) and math.isinf(m):
            return f"> {c.cap}" if c.cap else "not reached"
        shown = show_number(m)
        return f"> {shown}" if c is not None and c.not_reached and m is not None else shown

    def paper(self, row, col) -> PaperValue | None:
        c = self._get(row, col)
        return None if c is None else c.paper


def _cut(result: TableResult) -> str:
    """How the selection departs from the paper's setting ('' at the paper's own): an
    absolute-value claim needs the paper's setting."""
    sel = result.selection
    if sel is None:
        return ""
    same_seeds = sel.seeds is None or set(result.spec.seeds) <= set(sel.seeds)
    paper_own = not sel.preset and not sel.sets and same_seeds and sel.calibrated_from is None
    return "" if paper_own else sel.options()


def evaluate_claims(result: TableResult) -> list[ClaimResult]:
    datasets = list(dict.fromkeys(c.cell.dataset for c in result.cells))
    out = []
    for ds in datasets:
        view = CellView(result, ds)
        for claim in result.spec.claims:
            if claim.datasets is None or ds in claim.datasets:
                out.append(ClaimResult(claim, ds, claim.check(view)))
    return out


OUTCOMES = ("reproduced", "not reproduced", "inconclusive")


def outcome_counts(result: TableResult) -> dict[str, int]:
    """How many of the table's counted claims came out each way (and n/a)."""
    counts = dict.fromkeys((*OUTCOMES, "n/a"), 0)
    for c in result.claims:
        if c.claim.counted:
            counts[c.verdict.outcome] += 1
    return counts


def claims_summary(result: TableResult) -> str:
    """'claims: k of n reproduced, m not reproduced, j inconclusive (x n/a: ...)'; n: the
    claims with a number (the three outcomes)."""
    k = outcome_counts(result)
    n = sum(k[o] for o in OUTCOMES)
    text = (
        f"claims: {k['reproduced']} of {n} reproduced, {k['not reproduced']} not reproduced, "
        f"{k['inconclusive']} inconclusive"
    )
    return text + (f" ({k['n/a']} n/a: cells without a number)" if k["n/a"] else "")


def claim_lines(result: TableResult, rule: bool = True) -> list[str]:
    """The summary, one line per claim (outcome, text, ours vs paper), then the rule (unless
    rule=False: the report states it once)."""
    if not result.claims:
        return []
    many = len({c.dataset for c in result.claims}) > 1
    lines = [claims_summary(result)]
    for c in result.claims:
        where = f"[{c.dataset}] " if many else ""
        said = c.verdict.paper or c.claim.source
        paper = f"; paper: {said}" if said else ""
        lines.append(f"  {c.status}: {where}{c.claim.text} (ours: {c.verdict.ours}{paper})")
    return [*lines, f"  ({RULE})"] if rule else lines
