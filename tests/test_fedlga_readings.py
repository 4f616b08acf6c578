"""FedLGA's readings of its heterogeneity model (training/hetero.py): tau_max as the bound of
tau_i (the default), as the most epochs a slow device runs (slow_work=at-most), and E counting
single SGD steps (local_steps = E), each against a hand-computed case."""

import conftest
import pytest
import torch
from conftest import tiny_config, tiny_data

from fedbench.assembly import validate_config
from fedbench.config import RunConfig
from fedbench.errors import FedbenchError
from fedbench.identity import config_hash
from fedbench.training import round_plan as planning
from fedbench.training.hetero import sample_work

TOL = 1e-10
COEFFS = [(1.0, -2.0), (0.5, 1.0)]  # F_i(w) = a w^2 + b w, exact gradients 2aw + b


def local_gd(w0, a, b, steps, lr):
    w = w0
    for _ in range(steps):
        w = w - lr * (2 * a * w + b)
    return w


def test_at_most_draws_the_epochs_the_tau_reading_draws_as_tau():
    """Same generator, same draw d: the tau reading runs E - d + 1 units, at-most runs d."""
    e, k = 5, 10
    for tau_max in (1, 2, 4):
        base = dict(hetero="fedlga", rho=0.5, tau_max=tau_max, local_epochs=e)
        for r in range(50):
            by_tau = sample_work(RunConfig(**base), k, torch.Generator().manual_seed(r))
            at_most = sample_work(
                RunConfig(**base, slow_work="at-most"), k, torch.Generator().manual_seed(r)
            )
            assert torch.equal(by_tau.slow, at_most.slow)
            slow = at_most.slow
            assert torch.equal(at_most.units[slow], by_tau.tau[slow])  # E_i = d
            assert torch.all((at_most.units[slow] >= 1) & (at_most.units[slow] <= tau_max))
            assert torch.all(at_most.units[~slow] == e)
            assert torch.equal(at_most.tau, e - at_most.units + 1)
            assert torch.all(at_most.tau[slow] >= e - tau_max + 1)  # every slow one is partial


def test_tau_max_one_is_no_partial_work_under_tau_and_the_most_under_at_most():
    base = dict(hetero="fedlga", rho=0.5, tau_max=1, local_epochs=5)
    by_tau = sample_work(RunConfig(**base), 10, torch.Generator().manual_seed(3))
    at_most = sample_work(
        RunConfig(**base, slow_work="at-most"), 10, torch.Generator().manual_seed(3)
    )
    assert torch.all(by_tau.units == 5) and torch.all(by_tau.tau == 1)
    assert sorted(at_most.units.tolist()) == [1] * 5 + [5] * 5
    assert sorted(at_most.tau.tolist()) == [1] * 5 + [5] * 5


def test_fedlga_at_most_one_partial_device_by_hand():
    """2 devices, rho = 0.5, E = 4 steps, tau_max = 3, at-most: the slow device runs
    E_1 in {1, 2, 3} steps and tau_1 = E - E_1 + 1; FedLGA (text) corrects it by hand."""
    e, lr = 4, 0.1
    eng = conftest.quad_engine(
        "fedlga",
        {"g": "text"},
        coeffs=COEFFS,
        validate=True,
        steps=e,
        lr=lr,
        hetero="fedlga",
        rho=0.5,
        tau_max=3,
        slow_work="at-most",
        aggregation="uniform",
    )
    r = 1
    plan = eng.plan_round(r)
    units = dict(zip(plan.clients.tolist(), plan.units.tolist()))
    assert int((plan.tau > 1).sum()) == 1  # at-most: the slow device is always partial
    eng.run_round(r)
    w0 = 10.0
    (full,) = [c for c in units if units[c] == e]
    (part,) = [c for c in units if units[c] < e]
    assert 1 <= units[part] <= 3
    d_full = local_gd(w0, *COEFFS[full], e, lr) - w0
    d_part = local_gd(w0, *COEFFS[part], units[part], lr) - w0
    tau = e - units[part] + 1
    v = (w0 + d_full) - (w0 + d_part)
    g = v / (tau - 1)
    expected = w0 + 0.5 * (d_full + d_part + g * g * v)
    assert abs(float(eng.w) - expected) < TOL


def test_steps_reading_counts_e_and_e_i_in_sgd_steps():
    """local_steps = E: a slow device's E_i are mini-batch steps, not passes over its data."""
    data = tiny_data()
    kw = dict(hetero="fedlga", rho=1.0, tau_max=3, batch_size=2)
    steps = validate_config(tiny_config(local_steps=4, **kw))
    epochs = validate_config(tiny_config(local_epochs=4, **kw))
    for r in (1, 2, 3):
        p = planning.plan_round(steps, r, data.sizes, data.client_indices)
        assert torch.equal(p.steps, p.units)  # E_i steps
        assert torch.equal(p.tau, 4 - p.units + 1)
        q = planning.plan_round(epochs, r, data.sizes, data.client_indices)
        nb = (data.sizes[q.clients] + 1) // 2
        assert torch.equal(q.steps, q.units * nb)  # E_i epochs of nb batches each
        assert torch.equal(p.units.sort().values, q.units.sort().values)  # the same draws


def test_default_reading_keeps_the_identity_and_others_change_it():
    cfg = validate_config(tiny_config(hetero="fedlga", rho=0.5, tau_max=2))
    cfg_at_most = validate_config(
        tiny_config(hetero="fedlga", rho=0.5, tau_max=2, slow_work="at-most")
    )
    explicit = validate_config(tiny_config(hetero="fedlga", rho=0.5, tau_max=2, slow_work="tau"))
    assert config_hash(cfg) == config_hash(explicit)  # a default is not hashed
    assert config_hash(cfg) != config_hash(cfg_at_most)


@pytest.mark.parametrize(
    "kw,words",
    [
        (dict(slow_work="at-most"), "hetero=fedlga"),
        (dict(slow_work="most"), "unknown slow_work"),
    ],
)
def test_bad_readings_are_one_line_errors(kw, words):
    with pytest.raises(FedbenchError, match=words):
        validate_config(tiny_config(**kw))
