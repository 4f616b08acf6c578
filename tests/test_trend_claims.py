"""FedLGA's trends for every method (issue 34, item 7): Fig. 6 'as E grows, fewer rounds for
each method' and Fig. 7 'as rho grows, more rounds for all', checked at whichever lr the table
was made (lr 0.01, or the calibrated one): the claim holds only where every method's order
holds."""

from __future__ import annotations

from fedbench.papers.fedlga_paper import _COMPARED_FAIR, E_GRID, RHO_GRID
from fedbench.papers.fedlga_sensitivity import EPOCHS_CLAIMS, RHO_CLAIMS
from fedbench.tables import Cell, CellResult, TableResult, TableSpec, evaluate_claims


def _verdict(claims, text_start, param, grid, values_of):
    (claim,) = [c for c in claims if c.text.startswith(text_start)]
    spec = TableSpec("t", "src", "title", ("fmnist",), lambda ds: [], claims=(claim,))
    cells = []
    for label, _ in _COMPARED_FAIR:
        for i, v in enumerate(grid):
            res = CellResult(Cell("fmnist", label, f"{param}={v}", "rounds_to_target"), n=3)
            res.seed_values = dict(enumerate(values_of(label, i)))
            res.mean, res.expected, res.reached = sum(res.seed_values.values()) / 3, 3, 3
            cells.append(res)
    (c,) = evaluate_claims(TableResult(spec, None, "minmax", cells))
    return c.verdict.outcome


def test_fewer_rounds_as_e_grows_for_every_method():
    def falling(label, i):
        return [100.0 - 30 * i, 104.0 - 30 * i, 98.0 - 30 * i]

    assert _verdict(EPOCHS_CLAIMS, "as E grows", "E", E_GRID, falling) == "reproduced"

    def one_flat(label, i):  # lr 0.01: FedLGA at 8.3 rounds whatever E
        return [8.0, 9.0, 8.0] if label == "FedLGA" else falling(label, i)

    assert _verdict(EPOCHS_CLAIMS, "as E grows", "E", E_GRID, one_flat) == "not reproduced"


def test_more_rounds_as_rho_grows_for_every_method():
    def rising(label, i):
        return [20.0 + 10 * i, 22.0 + 10 * i, 19.0 + 10 * i]

    assert _verdict(RHO_CLAIMS, "as rho grows", "rho", RHO_GRID, rising) == "reproduced"
