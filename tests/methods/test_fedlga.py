"""FedLGA's correction against hand-computed cases: one partial device on the quadratic in each
reading of g, the batched rule against its matrix form, eq6's extra pass, no correction without
a full device, and FedAvg without heterogeneity."""

import math

import pytest
import torch
from conftest import tiny_config, tiny_data

from fedbench.identity import config_hash
from fedbench.methods import LocalResult, RoundContext, build_method, method_params
from fedbench.training.engine import Engine
from methods.quadratic import COEFFS, TOL, find_round, local_gd, quad_engine, units_of


@pytest.mark.parametrize(
    "g,lam,eta_g",
    [
        ("path", 1.0, 1.0),
        ("text", 1.0, 1.0),
        ("eq6", 1.0, 1.0),
        ("A", 0.5, 1.5),
        ("B", 0.3, 0.7),
        ("eq6", 0.4, 1.2),
    ],
)
def test_fedlga_one_partial_device_by_hand(g, lam, eta_g):
    """2 devices, 1 slow (rho=0.5): the slow one's Delta is corrected towards the full one's."""
    e, lr = 4, 0.1
    params = {"g": g, "lam": lam, "eta_g": eta_g}
    eng = quad_engine(
        "fedlga", params, steps=e, lr=lr, hetero="fedlga", rho=0.5, tau_max=3, aggregation="uniform"
    )
    r = find_round(eng, lambda p: int((p.tau > 1).sum()) == 1)
    units, _ = units_of(eng, r)
    rec = eng.run_round(r)
    w0 = 10.0
    (full,) = [c for c in units if units[c] == e]
    (part,) = [c for c in units if units[c] < e]
    d_full = local_gd(w0, *COEFFS[full], e, lr) - w0
    s_part = units[part]  # local_steps mode: E_i steps
    d_part = local_gd(w0, *COEFFS[part], s_part, lr) - w0
    tau = e - s_part + 1
    w_hat = w0 + d_full
    v = w_hat - (w0 + d_part)
    a, b = COEFFS[part]
    gi = {
        "path": -d_part / (lr * s_part),  # alias A
        "text": v / (tau - 1),  # alias B
        "eq6": 2 * a * (w0 + d_part) + b,  # F_i'(w_{i,E_i}) in closed form
    }[{"A": "path", "B": "text"}.get(g, g)]
    corr = lam * gi * gi * v  # G v with G = g g^T (scalar model)
    d_hat = d_part + corr
    expected = w0 + eta_g * 0.5 * (d_full + d_hat)
    assert abs(float(eng.w) - expected) < TOL
    assert rec["n_corrected"] == 1 and rec["correction_skipped"] is False
    assert abs(rec["norm_ratio"] - abs(corr) / abs(d_part)) < TOL
    assert abs(corr) > 1e-3  # the correction is not negligible in this case
    if g == "eq6":  # the oracle gradient's cost: one pass over the slow device's one sample
        assert rec["extra_grad_samples"] == 1 and rec["extra_grad_passes"] == 1
    else:
        assert "extra_grad_samples" not in rec


def test_fedlga_batched_equals_matrix_form():
    """Several partial devices in a D=5 model: O(d) rule = Delta + lam (g g^T) v per device."""
    gen = torch.Generator().manual_seed(3)
    k, d, lr, lam, eta_g = 5, 5, 0.05, 0.7, 1.3
    w0 = torch.randn(d, generator=gen, dtype=torch.float64)
    w = w0 + torch.randn(k, d, generator=gen, dtype=torch.float64)
    tau = torch.tensor([1, 3, 1, 2, 4])
    steps = torch.tensor([8, 4, 8, 6, 2])
    p = torch.tensor([0.1, 0.2, 0.3, 0.15, 0.25], dtype=torch.float64)
    grads = torch.randn(k, d, generator=gen, dtype=torch.float64)  # "true" gradients at w_i
    engine = StubGrads(w, grads)
    cfg = tiny_config(weight_decay=0.0)
    for g in ("path", "text", "eq6"):
        method = build_method("fedlga", {"g": g, "lam": lam, "eta_g": eta_g})
        ctx = RoundContext(1, lr, w0, torch.arange(k), p, steps, 9 - tau, tau, p, cfg, engine)
        new_w, rec = method.aggregate(ctx, LocalResult(w=w, global_w=w0))
        delta = w - w0
        w_hat = w0 + delta[tau == 1].mean(0)
        total, ratios = torch.zeros(d, dtype=torch.float64), []
        for i in range(k):
            di = delta[i]
            if tau[i] > 1:
                v = w_hat - (w0 + di)
                gi = {
                    "path": -di / (lr * int(steps[i])),
                    "text": v / (int(tau[i]) - 1),
                    "eq6": grads[i],
                }[g]
                corr = lam * torch.outer(gi, gi) @ v
                ratios.append(float(corr.norm() / di.norm()))
                di = di + corr
            total += p[i] * di
        assert torch.allclose(new_w, w0 + eta_g * total, atol=TOL, rtol=0)
        assert rec["n_corrected"] == 3 and not rec["correction_skipped"]
        assert abs(rec["norm_ratio"] - sum(ratios) / 3) < TOL


class StubGrads:
    """An engine whose full_batch_grads returns known gradients for known models (device i
    has the model w[i]), checking that FedLGA asks only for the slow devices' final models."""

    def __init__(self, w, grads):
        self.w, self.grads = w, grads

    def full_batch_grads(self, w, clients):
        assert torch.equal(w, self.w[clients])
        return torch.zeros(len(clients), dtype=w.dtype), self.grads[clients]


def test_fedlga_eq6_adds_weight_decay_and_records_the_pass():
    """eq6's g is the gradient of the regularised objective the device trains on: grad + wd w."""
    gen = torch.Generator().manual_seed(5)
    k, d, wd = 3, 4, 0.1
    w0 = torch.randn(d, generator=gen, dtype=torch.float64)
    w = w0 + torch.randn(k, d, generator=gen, dtype=torch.float64)
    grads = torch.randn(k, d, generator=gen, dtype=torch.float64)
    tau, n = torch.tensor([1, 2, 3]), torch.tensor([7.0, 5.0, 4.0], dtype=torch.float64)
    p = torch.full((k,), 1 / 3, dtype=torch.float64)
    ctx = RoundContext(
        1, 0.1, w0, torch.arange(k), n, tau * 0 + 5, 6 - tau, tau, p,
        tiny_config(weight_decay=wd), StubGrads(w, grads),
    )  # fmt: skip
    new_w, rec = build_method("fedlga", {"g": "eq6"}).aggregate(ctx, LocalResult(w=w, global_w=w0))
    expected = w.clone()
    for i in (1, 2):
        gi = grads[i] + wd * w[i]
        expected[i] += gi * (gi @ (w[0] - w[i]))  # v_i = w_hat - w_i, w_hat = w_0 (K2 = {0})
    assert torch.allclose(new_w, expected.mean(0), atol=TOL, rtol=0)
    assert rec["extra_grad_samples"] == 9 and rec["extra_grad_passes"] == 2


def test_fedlga_reading_names_and_behaviour_version():
    """A and B are the old names of path and text: the same parameters, so the same run."""
    assert method_params("fedlga", {}).g == "text"  # the TCYB §IV-A reading is the default
    assert method_params("fedlga", {"g": "A"}) == method_params("fedlga", {"g": "path"})
    assert method_params("fedlga", {"g": "B"}) == method_params("fedlga", {})
    a = tiny_config(method="fedlga", method_params={"g": "B"})
    assert config_hash(a) == config_hash(tiny_config(method="fedlga"))
    assert build_method("fedlga", {}).version == 2


def test_fedlga_no_full_device_skips_correction():
    e, lr = 4, 0.1
    eng = quad_engine("fedlga", {}, steps=e, lr=lr, hetero="fedlga", rho=1.0, tau_max=3)
    r = find_round(eng, lambda p: bool((p.tau > 1).all()))
    units, _ = units_of(eng, r)
    rec = eng.run_round(r)
    expected = sum(0.5 * local_gd(10.0, *COEFFS[c], units[c], lr) for c in units)
    assert abs(float(eng.w) - expected) < TOL
    assert rec["correction_skipped"] is True and rec["n_corrected"] == 0
    assert math.isnan(rec["norm_ratio"])


@pytest.mark.parametrize("g", ["text", "eq6", "path"])
@pytest.mark.parametrize("aggregation", ["samples", "uniform"])
def test_fedlga_without_heterogeneity_is_fedavg(aggregation, g):
    """No slow device: every reading is FedAvg bit for bit (eq6 makes no extra pass)."""
    data = tiny_data()
    a = Engine(tiny_config(method="fedavg", aggregation=aggregation), data=data)
    b = Engine(
        tiny_config(method="fedlga", method_params={"g": g}, aggregation=aggregation), data=data
    )
    for r in (1, 2, 3):
        a.run_round(r)
        rec = b.run_round(r)
        assert rec["n_corrected"] == 0 and not rec["correction_skipped"]
        assert rec.get("extra_grad_passes", 0) == 0
    assert torch.equal(a.w, b.w)
