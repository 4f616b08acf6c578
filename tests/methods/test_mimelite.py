"""MimeLite against rounds computed by hand in plain floats (weighted quadratic)."""

import pytest

from methods.weighted import (
    COEFFS,
    COUNTS,
    TOL,
    assert_fedavg_rounds,
    local_run,
    quad_engine,
    work,
)


@pytest.mark.parametrize("damped", [True, False])
def test_mimelite_two_rounds_by_hand(damped):
    """N = 3, K = 2; m from the n_i-weighted full-batch gradient at x^t of the sampled devices."""
    lr, beta, eta = 0.1, 0.3, 0.9
    eng = quad_engine(
        "mimelite", {"beta": beta, "eta_s": eta, "damped": damped}, lr=lr, k=2, weight_decay=0.02
    )
    scale = 1 - beta if damped else 1.0
    w, m = 10.0, 0.0
    for r in (1, 2):
        s = work(eng, r)
        rec = eng.run_round(r)
        ys = {
            i: local_run(w, *COEFFS[i], 3, lr, lambda g, y, m=m: scale * g + beta * m, wd=0.02)
            for i in s
        }
        tot = sum(COUNTS[i] for i in s)
        g_bar = sum(COUNTS[i] / tot * (2 * COEFFS[i][0] * w + COEFFS[i][1]) for i in s) + 0.02 * w
        w = w - eta * sum(COUNTS[i] / tot * (w - ys[i]) for i in s)
        m = scale * g_bar + beta * m
        assert abs(float(eng.w) - w) < TOL
        assert abs(float(eng.method.m) - m) < TOL
        assert rec["extra_grad_samples"] == tot and rec["extra_grad_passes"] == 2


def test_mimelite_beta_zero_is_fedavg():
    assert_fedavg_rounds("mimelite", {"beta": 0.0})
