"""Checking a table's claims over its evaluated cells: each claim's check reads one dataset's
cells through a CellView and gives a Verdict (the language is fedbench.tables.claims)."""

from __future__ import annotations

from fedbench.tables.paper_values import PaperValue
from fedbench.tables.result import CellResult, ClaimResult, TableResult


class CellView:
    """One dataset's cells of a table result, as claim checks read them."""

    def __init__(self, result: TableResult, dataset: str):
        self.dataset = dataset
        self._by = {(c.cell.row, c.cell.col): c for c in result.cells if c.cell.dataset == dataset}
        self.cols = {col for _, col in self._by}

    def row(self, row) -> str:
        return row(self.dataset) if callable(row) else row

    def _get(self, row, col) -> CellResult | None:
        return self._by.get((self.row(row), col))

    def mean(self, row, col):
        c = self._get(row, col)
        if c is None or c.status in ("missing", "unavailable") or c.mean is None:
            return None
        return c.mean

    def paper(self, row, col) -> PaperValue | None:
        c = self._get(row, col)
        return None if c is None else c.paper


def evaluate_claims(result: TableResult) -> list[ClaimResult]:
    datasets = list(dict.fromkeys(c.cell.dataset for c in result.cells))
    out = []
    for ds in datasets:
        view = CellView(result, ds)
        for claim in result.spec.claims:
            if claim.datasets is None or ds in claim.datasets:
                out.append(ClaimResult(claim, ds, claim.check(view)))
    return out


def claims_summary(result: TableResult) -> str:
    decided = [c for c in result.claims if c.verdict.holds is not None]
    held = sum(bool(c.verdict.holds) for c in decided)
    na = len(result.claims) - len(decided)
    return f"claims: {held} of {len(decided)} reproduced" + (
        f" ({na} n/a: cells without a number)" if na else ""
    )


def claim_lines(result: TableResult) -> list[str]:
    """'claims: k of n reproduced', then one line per claim: verdict, text, ours vs paper."""
    if not result.claims:
        return []
    many = len({c.dataset for c in result.claims}) > 1
    lines = [claims_summary(result)]
    for c in result.claims:
        where = f"[{c.dataset}] " if many else ""
        said = c.verdict.paper or c.claim.source
        paper = f"; paper: {said}" if said else ""
        lines.append(f"  {c.status}: {where}{c.claim.text} (ours: {c.verdict.ours}{paper})")
    return lines
