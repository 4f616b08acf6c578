"""FedProx against hand-computed rounds on the quadratic: the proximal term, partial work,
mu = 0 as FedAvg, the adaptive-mu rule and the gradient dissimilarity."""

import torch
from conftest import tiny_config

from fedbench.assembly import validate_config
from fedbench.data import FederatedData
from fedbench.methods.fedprox import AdaptiveMu
from fedbench.training import evaluation
from fedbench.training.engine import Engine
from fedbench.training.evaluation import gradient_dissimilarity
from methods.quadratic import COEFFS, TOL, local_gd, quad_engine


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


def test_adaptive_mu_rule_on_a_scripted_loss_sequence():
    rule = AdaptiveMu(1.0)
    losses = [10, 11, 10.5, 10.4, 10.3, 10.2, 10.1, 10.1, 10.0, 9.9, 9.8, 9.7, 9.8, 9.9]
    mus = [rule.update(x) for x in losses]
    assert mus == [1.0, 1.1, 1.1, 1.1, 1.1, 1.1, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.1, 1.2]
    floor = AdaptiveMu(0.0)
    assert [floor.update(x) for x in (6, 5, 4, 3, 2, 1)] == [0.0] * 6  # never below 0
    ten = AdaptiveMu(0.3)
    assert [ten.update(-x) for x in range(11)][-1] == 0.1  # two runs of 5 decreases


def test_adaptive_mu_in_rounds_by_hand(monkeypatch):
    """Scripted global training losses drive mu; each round's local steps use that round's mu."""
    script = iter([5.0, 6.0, 7.0, 6.5])  # w^0, after r1 (up), after r2 (up), after r3 (down)
    # the global training loss comes from the engine's services (fedbench.training.evaluation)
    monkeypatch.setattr(evaluation, "evaluate", lambda *args, **kw: (next(script), 0.0))
    eng = quad_engine("fedprox", {"mu": 0.5, "adaptive": True})
    # the loss at w^0 is taken once, in init (before round 1), not lazily in round 1
    assert eng.method.state_dict() == {"mu": 0.5, "prev_loss": 5.0, "n_down": 0}
    w, mus = 10.0, []
    for r, mu in zip((1, 2, 3), (0.5, 0.6, 0.7)):
        rec = eng.run_round(r)
        mus.append(rec["mu"])
        w = 0.5 * sum(local_gd(w, *COEFFS[c], 3, 0.1, mu=mu) for c in (0, 1))
        assert abs(float(eng.w) - w) < TOL
    assert mus == [0.5, 0.6, 0.7]
    assert eng.method.state_dict() == {"mu": 0.7, "prev_loss": 6.5, "n_down": 1}


def uneven_quadratic():
    """Devices with 2, 1 and 3 samples (a, b): full-batch gradient = mean of 2 a w + b."""
    rows = [[(1.0, -2.0), (3.0, 0.0)], [(0.5, 1.0)], [(2.0, 1.0), (1.0, 1.0), (0.0, 3.0)]]
    flat = [ab for dev in rows for ab in dev]
    x = torch.tensor(flat, dtype=torch.float64).unsqueeze(-1)
    y = torch.zeros(len(flat), dtype=torch.long)
    idx = [torch.tensor([0, 1]), torch.tensor([2]), torch.tensor([3, 4, 5])]
    return FederatedData(x, y, x, y, idx, 1, {"description": "uneven quadratic"}), rows


def test_dissimilarity_on_the_quadratic_by_hand():
    data, rows = uneven_quadratic()
    cfg = tiny_config(
        model="quadratic",
        method="fedprox",
        method_params={"mu": 0.1, "dissimilarity": True},
        num_clients=3,
        clients_per_round=2,
        local_steps=2,
        batch_size=1,
    )
    eng = Engine(validate_config(cfg), data=data)
    w = 10.0
    gk = [sum(2 * a * w + b for a, b in dev) / len(dev) for dev in rows]
    n = [len(dev) for dev in rows]
    g = sum(nk * x for nk, x in zip(n, gk)) / sum(n)
    expected = sum((g - x) ** 2 for x in gk) / 3
    for chunk in (1, 2, None):
        got = gradient_dissimilarity(eng.model, eng.data, eng.w, chunk=chunk)
        assert abs(got - expected) < 1e-8
    rec = eng.run_round(1)  # measured at the round's starting model w^0 = 10
    assert abs(rec["dissimilarity"] - expected) < 1e-8
