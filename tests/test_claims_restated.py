"""Claims as the papers state them (issue 26): rho = 0.1 'all similar', the quadratic
winners at one lr and at each method's best lr, R90's absolute values n/a at a cut scale, FedSAM
at equal gradient evaluations, the partial-work bound beside (not among) the claims, and the
figures' titles saying what they draw."""

import math

import conftest
import pandas as pd
import pytest

from fedbench.tables import (
    METRICS,
    TABLES,
    CellResult,
    PaperValue,
    Selection,
    TableResult,
    evaluate_claims,
    lookup,
)


def _result(name, values: dict, dataset, selection=None, censored=None):
    """A TableResult of `name` on `dataset` whose runs cells hold values[(row, col)] (a list
    over seeds 0, 1, ...; cells not named have no number), with the paper's values."""
    cells = []
    for c in TABLES[name].cells(dataset):
        res = CellResult(c)
        if c.paper is not None:
            res.paper = lookup(c.paper, c.dataset)
        vals = values.get((c.row, c.col))
        if vals is None:
            res.status = "missing"
        else:
            res.seed_values = dict(enumerate(vals))
            res.censored = set((censored or {}).get((c.row, c.col), ()))
            res.n = len(vals)
            res.not_reached = len(res.censored)
            res.reached = len(vals) - res.not_reached
            res.cap = 200 if res.censored else None
            res.mean = sum(vals) / len(vals) if res.reached else math.inf
        cells.append(res)
    sel = selection or Selection(dataset=dataset)
    result = TableResult(TABLES[name], sel, "minmax", cells)
    result.claims = evaluate_claims(result)
    return {c.claim.text: c for c in result.claims}, result


RHO_BASELINES = ("FedAvg", "FedProx", "FedNova", "Scaffold", "FedDyn", "FedCM", "MimeLite")


def test_rho_at_0_1_is_an_equality_within_25_percent_and_fedlga_first_above_it():
    near = [9.0, 10.0, 11.5]  # ratios to FedLGA's 1, 1, 1.05: [0.94, 1.1] within 1/1.25-1.25
    values = {("FedLGA", "rho=0.1"): [9.0, 10.0, 11.0]}
    values.update({(b, "rho=0.1"): near for b in RHO_BASELINES})
    values[("FedSAM (equal grads)", "rho=0.1")] = [9.0, 10.0, 11.0]
    claims, _ = _result("rho", values, "fmnist")
    similar = next(c for t, c in claims.items() if t.startswith("at rho = 0.1 all methods"))
    assert similar.status == "reproduced", similar.verdict
    values[("MimeLite", "rho=0.1")] = [30.0, 32.0, 31.0]  # 3x FedLGA's: not similar
    claims, _ = _result("rho", values, "fmnist")
    similar = next(c for t, c in claims.items() if t.startswith("at rho = 0.1 all methods"))
    assert similar.status == "not reproduced"
    # on CIFAR-100 the paper claims FedLGA first at 0.1 too: no 'similar' claim there
    claims, _ = _result("rho", values, "cifar100")
    assert not any(t.startswith("at rho = 0.1 all methods") for t in claims)
    assert any(t.startswith("at every rho (0.1 too") for t in claims)


def test_quadratic_claimed_at_one_lr_and_at_each_methods_best_lr():
    from fedbench.papers.sfl_paper import QUAD_K, QUAD_LR_GRID, QUAD_WINNER

    values = {}
    for g, win in QUAD_WINNER.items():
        for k in QUAD_K:
            for lr in QUAD_LR_GRID:
                # the winner is far from x* at every lr but one, where it is closest of all
                best = 1e-6 if lr == 0.1 else 1.0
                values[(f"{win} K={k} lr={lr:g}", f"Group {g}")] = [best * s for s in (1, 1.1, 1.2)]
                lose = "PFL" if win == "SFL" else "SFL"
                values[(f"{lose} K={k} lr={lr:g}", f"Group {g}")] = [1e-3] * 3
    claims, result = _result("quadratic-lr", values, "quadratic")
    (claim,) = claims.values()
    assert claim.status == "reproduced", claim.verdict
    assert "lr=0.1" in claim.verdict.ours  # the best rows are the ones compared
    # at one lr (0.01) the losers are closer: the lr 0.01 claim of table quadratic fails
    one = {
        (f"Group {g}", f"{m} K={k}"): values[(f"{m} K={k} lr=0.01", f"Group {g}")]
        for g in QUAD_WINNER
        for m in ("PFL", "SFL")
        for k in QUAD_K
    }
    claims, _ = _result("quadratic", one, "quadratic")
    at_one = next(c for t, c in claims.items() if t.startswith("at lr 0.01"))
    assert at_one.status == "not reproduced"


def test_r90_absolute_values_are_n_a_at_a_cut_scale():
    fw = ("TNIID", "NIID", "IID")
    values = {(m, f): [9.0, 9.0, 10.0] for m in ("FedAvg", "FedSoftMax") for f in fw}
    cut = Selection(dataset="mnist", seeds=(0,), sets={"K": "10", "rounds": "25"})
    claims, _ = _result("r90", values, "mnist", selection=cut)
    ci = next(c for t, c in claims.items() if t.startswith("every R90"))
    assert ci.status == "n/a" and "cut scale" in ci.verdict.ours and "K=10" in ci.verdict.ours
    claims, _ = _result("r90", values, "mnist")  # the paper's own setting: judged
    ci = next(c for t, c in claims.items() if t.startswith("every R90"))
    assert ci.status == "not reproduced"  # 9.3 against the paper's 12.7-24.6


def test_fedsam_at_equal_gradient_evaluations():
    # FedSAM evaluates two gradients a local step: twice FedAvg's grad_evals on the same plan
    coeffs = [(1.0, -2.0), (0.5, 1.0)]
    sam = conftest.quad_engine("fedsam", coeffs=coeffs, steps=3, validate=True).run_round(1)
    avg = conftest.quad_engine("fedavg", coeffs=coeffs, steps=3, validate=True).run_round(1)
    assert (sam["grad_evals"], avg["grad_evals"]) == (12, 6)
    # so its rounds to target count twice, and a run that never reached it is '> 2R'
    m = METRICS["rounds_to_target_2grads"]
    assert m.fn({"target_acc": 0.65, "rounds_to_target": 37}, None) == 74
    assert math.isinf(m.fn({"target_acc": 0.65, "rounds_to_target": None}, None))
    assert m.per_round == 2.0
    # and its best accuracy is over the first half of the rounds (FedAvg's gradients by then)
    frame = pd.DataFrame({"round": range(5), "test_acc": [0.1, 0.5, 0.6, 0.9, 0.95]})
    best = METRICS["best_acc_half_rounds"].fn({"rounds_run": 4}, lambda cols: frame)
    assert best == pytest.approx(60.0)  # rounds 0-2
    # the claims compare FedLGA with FedSAM's equal-gradient row, not its per-round one
    rows = [f"FedLGA tau_max={f}E" for f in (0.8, 0.6, 0.4, 0.2)]
    values = {(r, "rounds to target"): [50.0, 51.0, 52.0] for r in rows}
    for b in ("FedAvg", "FedProx", "FedNova", "Scaffold", "FedDyn", "FedCM", "MimeLite"):
        values[(b, "rounds to target")] = [90.0, 91.0, 93.0]
    values[("FedSAM", "rounds to target")] = [30.0, 31.0, 32.0]  # fewer rounds ...
    values[("FedSAM (equal grads)", "rounds to target")] = [60.0, 62.0, 64.0]  # ... not grads
    claims, _ = _result("tau", values, "fmnist")
    first = next(c for t, c in claims.items() if t.startswith("at every tau_max"))
    assert first.status == "reproduced", first.verdict


def test_the_partial_work_bound_is_measured_beside_the_claims():
    values = {
        ("FedAvg", "rounds to target"): [111.0, 112.0, 110.0],
        ("FedAvg, no partial work", "rounds to target"): [90.0, 92.0, 91.0],
    }
    claims, result = _result("tau", values, "fmnist")
    bound = next(c for t, c in claims.items() if t.startswith("partial work costs FedAvg"))
    assert bound.status == "measured" and bound.verdict.ours.endswith("(3 seeds)")
    assert "ratio: 1.22" in bound.verdict.ours and bound.verdict.paper == "4.00x (within 25%)"
    from fedbench.tables.verdicts import outcome_counts

    assert sum(outcome_counts(result).values()) == len(claims) - 1  # not counted


def test_figure_titles_say_what_is_drawn():
    from fedbench.table_plots import figure_title

    spec = TABLES["runtime"]
    res = TableResult(spec, Selection(dataset="fmnist"), "minmax", [])
    assert figure_title(res).startswith("FedLGA (TCYB 2023) Table V\n")
    assert "against seconds" in figure_title(res)
    sub = TableResult(TABLES["devices"], Selection(dataset="fmnist"), "minmax", [])
    assert "SUBSTITUTE data: fmnist" in figure_title(sub)
    fit = Selection(dataset="fmnist", sets={"lr": 6.49e-6}, calibrated_from=Selection())
    assert "at the calibrated lr" in figure_title(TableResult(TABLES["tau"], fit, "ci95", []))
    assert "Student-t 95% interval" in figure_title(TableResult(TABLES["tau"], fit, "ci95", []))


def test_paper_values_name_relative_gains():
    from fedbench.tables import paper_values

    df = paper_values()
    gains = df[df["metric"].str.startswith("fedlga_improvement")]
    assert set(gains["metric"]) == {"fedlga_improvement_pct_relative"}
    fedavg = lookup(
        __import__("fedbench.tables", fromlist=["PaperRef"]).PaperRef(
            "fedlga", "text_best_acc", "FedAvg", "fedlga_improvement_pct_relative", "default"
        ),
        "cifar10",
    )
    assert isinstance(fedavg, PaperValue) and fedavg.value == 5.7
    # 64.44 vs 60.91: 5.8 % relative (the text rounds down), 3.53 points
    assert 100 * (64.44 - 60.91) / 60.91 == pytest.approx(5.8, abs=0.05)
