"""Each method's round against a hand-computed case on a quadratic (exact gradients)."""

import conftest
import pytest
import torch

from fedbench.errors import FedbenchError
from fedbench.methods import method_params

# F_1(w) = w^2 - 2w, F_2(w) = 0.5 w^2 + w; one sample each, exact gradients 2aw + b.
COEFFS = [(1.0, -2.0), (0.5, 1.0)]


def quad_engine(method, params=None, **kw):
    return conftest.quad_engine(method, params, coeffs=COEFFS, **kw)


def local_gd(w0, a, b, steps, lr, mu=0.0):
    w = w0
    for _ in range(steps):
        w = w - lr * (2 * a * w + b + mu * (w - w0))
    return w


def test_fedavg_quadratic_by_hand():
    eng = quad_engine("fedavg")
    eng.run_round(1)
    expected = 0.5 * local_gd(10.0, 1.0, -2.0, 3, 0.1) + 0.5 * local_gd(10.0, 0.5, 1.0, 3, 0.1)
    assert abs(float(eng.w) - expected) < 1e-12


def test_fedprox_quadratic_by_hand():
    eng = quad_engine("fedprox", {"mu": 0.5})
    eng.run_round(1)
    w1 = local_gd(10.0, 1.0, -2.0, 3, 0.1, mu=0.5)
    w2 = local_gd(10.0, 0.5, 1.0, 3, 0.1, mu=0.5)
    assert abs(float(eng.w) - 0.5 * (w1 + w2)) < 1e-12
    # two rounds: the proximal centre moves to the new global model
    eng.run_round(2)
    g = 0.5 * (w1 + w2)
    w1b, w2b = local_gd(g, 1.0, -2.0, 3, 0.1, 0.5), local_gd(g, 0.5, 1.0, 3, 0.1, 0.5)
    assert abs(float(eng.w) - 0.5 * (w1b + w2b)) < 1e-12


def test_fedprox_mu_zero_is_fedavg():
    a, b = quad_engine("fedavg"), quad_engine("fedprox", {"mu": 0.0})
    for r in (1, 2):
        a.run_round(r)
        b.run_round(r)
    assert torch.equal(a.w, b.w)


def test_fedprox_partial_device_by_hand():
    """A straggler runs fewer steps; its (shorter) local path is aggregated."""
    eng = quad_engine("fedprox", {"mu": 1.0}, steps=4, hetero="fedlga", rho=0.5, tau_max=3)
    plan = eng.plan_round(1)
    units = dict(zip(plan.clients.tolist(), plan.units.tolist()))
    eng.run_round(1)
    w1 = local_gd(10.0, 1.0, -2.0, units[0], 0.1, mu=1.0)
    w2 = local_gd(10.0, 0.5, 1.0, units[1], 0.1, mu=1.0)
    assert min(units.values()) < 4
    assert abs(float(eng.w) - 0.5 * (w1 + w2)) < 1e-12


def test_bad_method_params():
    with pytest.raises(FedbenchError, match="mu must be >= 0"):
        method_params("fedprox", {"mu": -1.0})
    with pytest.raises(FedbenchError, match="unknown parameter 'alpha' for method fedprox"):
        method_params("fedprox", {"alpha": 0.1})
    with pytest.raises(FedbenchError, match="unknown method"):
        method_params("nosuch", {})
