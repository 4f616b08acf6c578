"""SFL (devices in sequence, in the recorded order) and PFL against hand-computed rounds."""

import torch
from conftest import PARTIAL_WORK, tiny_config, tiny_data

from fedbench.training.engine import Engine
from methods.quadratic import COEFFS, TOL, local_gd, quad_engine, units_of


def test_sfl_follows_the_recorded_order_and_order_matters():
    lr, steps = 0.1, 3
    results = {}
    for seed in range(12):
        eng = quad_engine("sfl", n=2, steps=steps, lr=lr, seed=seed)
        rec = eng.run_round(1)
        w = 10.0
        for c in rec["order"]:
            w = local_gd(w, *COEFFS[c], steps, lr)
        assert abs(float(eng.w) - w) < TOL
        assert sorted(rec["order"]) == [0, 1]
        results[tuple(rec["order"])] = float(eng.w)
    assert set(results) == {(0, 1), (1, 0)}, "both orders should occur over 12 seeds"
    assert abs(results[(0, 1)] - results[(1, 0)]) > 1e-3


def test_sfl_partial_work_and_two_rounds_by_hand():
    lr, e = 0.05, 3
    eng = quad_engine("sfl", n=3, steps=e, lr=lr, hetero="fedlga", rho=0.67, tau_max=2)
    w = 10.0
    short = 0
    for r in (1, 2):
        units, _ = units_of(eng, r)
        short += sum(u < e for u in units.values())
        rec = eng.run_round(r)
        for c in rec["order"]:
            w = local_gd(w, *COEFFS[c], units[c], lr)
        assert abs(float(eng.w) - w) < TOL
        assert rec["grad_evals"] == sum(units.values())
    assert short > 0, "the test needs partial-work devices"


def test_pfl_is_fedavg():
    data = tiny_data()
    kw = PARTIAL_WORK
    a = Engine(tiny_config(method="fedavg", **kw), data=data)
    b = Engine(tiny_config(method="pfl", **kw), data=data)
    for r in (1, 2, 3):
        a.run_round(r)
        b.run_round(r)
    assert torch.equal(a.w, b.w)


def test_pfl_eta_g_by_hand():
    eng = quad_engine("pfl", {"eta_g": 1.5})
    eng.run_round(1)
    d = [local_gd(10.0, *COEFFS[c], 3, 0.1) - 10.0 for c in (0, 1)]
    assert abs(float(eng.w) - (10.0 + 1.5 * 0.5 * (d[0] + d[1]))) < TOL
