"""SCAFFOLD against rounds computed by hand in plain floats (weighted quadratic), and its
fused step against its plain one."""

import torch
from conftest import tiny_config, tiny_data

from fedbench.training.engine import Engine
from methods.weighted import COEFFS, COUNTS, TOL, local_run, quad_engine, work


def test_scaffold_two_rounds_by_hand_partial_device():
    """N = 3, K = 2, one device does partial work; c += (1/N) sum_S (c_i+ - c_i)."""
    lr, n = 0.1, 3
    eng = quad_engine("scaffold", steps=4, lr=lr, k=2, hetero="fedlga", rho=0.5, tau_max=3)
    w, c, ci = 10.0, 0.0, [0.0, 0.0, 0.0]
    partial = False
    for r in (1, 2):
        s = work(eng, r)
        partial |= len(set(s.values())) > 1
        eng.run_round(r)
        ys, new_ci = {}, list(ci)
        for i in s:
            corr = c - ci[i]  # frozen during the round
            ys[i] = local_run(w, *COEFFS[i], s[i], lr, lambda g, w_, corr=corr: g + corr)
            new_ci[i] = ci[i] - c + (w - ys[i]) / (s[i] * lr)
        tot = sum(COUNTS[i] for i in s)
        w = w + sum(COUNTS[i] / tot * (ys[i] - w) for i in s)
        c = c + sum(new_ci[i] - ci[i] for i in s) / n
        ci = new_ci
        assert abs(float(eng.w) - w) < TOL
        assert abs(float(eng.method.c) - c) < TOL
        assert max(abs(float(eng.method.c_i[i]) - ci[i]) for i in range(n)) < TOL
    assert partial, "the test needs a device with partial work"


def test_scaffold_two_dims_eta_g_uniform():
    """2-d w (coordinates independent), eta_g = 0.5, aggregation=uniform (the paper's mean)."""
    coeffs = [([1.0, 0.5], [-2.0, 1.0]), ([0.5, 2.0], [1.0, 0.0])]
    lr, eta = 0.05, 0.5
    eng = quad_engine(
        "scaffold", {"eta_g": eta}, coeffs=coeffs, counts=[1, 3], lr=lr, aggregation="uniform"
    )
    w, c, ci = [10.0, 10.0], [0.0, 0.0], [[0.0, 0.0], [0.0, 0.0]]
    for r in (1, 2):
        eng.run_round(r)
        for d in range(2):
            ys, new = [], []
            for i in range(2):
                a, b = coeffs[i][0][d], coeffs[i][1][d]
                y = local_run(w[d], a, b, 3, lr, lambda g, w_, i=i, d=d: g - ci[i][d] + c[d])
                ys.append(y)
                new.append(ci[i][d] - c[d] + (w[d] - y) / (3 * lr))
            w[d] = w[d] + eta * sum(0.5 * (y - w[d]) for y in ys)
            c[d] = c[d] + sum(new[i] - ci[i][d] for i in range(2)) / 2
            for i in range(2):
                ci[i][d] = new[i]
        assert torch.allclose(eng.w, torch.tensor(w, dtype=torch.float64), atol=TOL, rtol=0)
        assert torch.allclose(eng.method.c, torch.tensor(c, dtype=torch.float64), atol=TOL, rtol=0)
        got_ci = eng.method.c_i
        assert torch.allclose(got_ci, torch.tensor(ci, dtype=torch.float64), atol=TOL, rtol=0)


def test_scaffold_reduces_to_fedavg():
    # round 1: all control variates are zero
    a, b = quad_engine("fedavg"), quad_engine("scaffold")
    a.run_round(1)
    b.run_round(1)
    assert abs(float(a.w) - float(b.w)) < 1e-12
    # identical devices, all sampled: c_i = c after every round, so no correction ever
    same = [(1.0, -2.0)] * 3
    a, b = quad_engine("fedavg", coeffs=same), quad_engine("scaffold", coeffs=same)
    for r in (1, 2, 3):
        a.run_round(r)
        b.run_round(r)
        assert abs(float(a.w) - float(b.w)) < 1e-12


def test_scaffold_fused_step_equals_its_plain_step():
    """SCAFFOLD's fused path (SGD step, then lr (c - c_i)) against the unfused one (a grad_clip
    too large to bite turns fusing off), over 3 rounds so the control variates are nonzero,
    with partial work."""
    data = tiny_data(sizes=(8, 12, 6, 10))
    kw = dict(method="scaffold", hetero="fedlga", rho=0.5, tau_max=2)
    fused = Engine(tiny_config(**kw), data=data)
    plain = Engine(tiny_config(**kw, grad_clip=1e30), data=data)
    for r in (1, 2, 3):
        fused.run_round(r)
        plain.run_round(r)
    assert fused.method.c.abs().max() > 0
    assert torch.allclose(fused.w, plain.w, atol=1e-12, rtol=0), (fused.w - plain.w).abs().max()
    assert torch.allclose(fused.method.c_i, plain.method.c_i, atol=1e-10, rtol=0)
