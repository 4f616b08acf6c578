"""FedSAM's perturbed steps against a hand-computed 2-D quadratic."""

import pytest
import torch

from methods.quadratic import TOL, quad_engine


@pytest.mark.parametrize("wd", [0.0, 0.01])
def test_fedsam_steps_by_hand(wd):
    """2-D quadratic: eps = r g/(|g|+1e-7) with the norm over the whole vector, step with g'."""
    coeffs = [([1.0, 0.5], [-2.0, 1.0]), ([0.5, 2.0], [1.0, -1.0])]
    r_, lr, steps = 0.3, 0.1, 2
    eng = quad_engine("fedsam", {"r": r_}, steps=steps, lr=lr, coeffs=coeffs, weight_decay=wd)
    rec = eng.run_round(1)
    finals = []
    for a, b in coeffs:
        a, b = torch.tensor(a, dtype=torch.float64), torch.tensor(b, dtype=torch.float64)
        w = torch.full((2,), 10.0, dtype=torch.float64)
        for _ in range(steps):
            g = 2 * a * w + b
            eps = r_ * g / (g.norm() + 1e-7)
            g2 = 2 * a * (w + eps) + b
            w = w - lr * (g2 + wd * w)
        finals.append(w)
    expected = 0.5 * (finals[0] + finals[1])
    assert torch.allclose(eng.w, expected, atol=TOL, rtol=0)
    assert rec["grad_evals"] == 2 * 2 * steps  # two evaluations per step, per device


def test_fedsam_r_zero_is_fedavg_path():
    a, b = quad_engine("fedavg"), quad_engine("fedsam", {"r": 0.0})
    a.run_round(1)
    b.run_round(1)
    assert torch.allclose(a.w, b.w, atol=TOL, rtol=0)
