"""The example plugin's update rule against rounds computed by hand (part of the repository's
test suite; also `python -m pytest examples/fedavg_l1`).

Quadratic devices F_i(w) = a_i w^2 + b_i w, one sample each, batch 1: the gradient 2 a_i w + b_i
is exact and every local step can be done on paper."""

from pathlib import Path

import pytest
import torch

from fedbench import plugins
from fedbench.assembly import validate_config
from fedbench.config import RunConfig
from fedbench.data import FederatedData
from fedbench.testing import registries_restored

PLUGIN = Path(__file__).with_name("fedavg_l1.py")


@pytest.fixture(autouse=True)
def plugin_loaded():
    with registries_restored():
        plugins.load([PLUGIN])
        yield


def quadratic_engine(coeffs, method="fedavg_l1", lam=0.5, steps=2, lr=0.1):
    from fedbench.training.engine import Engine

    x = torch.tensor([[[a], [b]] for a, b in coeffs], dtype=torch.float64)  # [N, 2, 1]
    y = torch.zeros(len(coeffs), dtype=torch.long)
    idx = [torch.tensor([i]) for i in range(len(coeffs))]
    data = FederatedData(x, y, x, y, idx, 1, {"description": "quadratic"})
    n = len(coeffs)
    cfg = RunConfig(
        model="quadratic",
        num_clients=n,
        clients_per_round=n,
        local_steps=steps,
        batch_size=1,
        lr=lr,
        rounds=2,
        dtype="float64",
        device="cpu",
        method=method,
        method_params={"lam": lam} if method == "fedavg_l1" else {},
    )
    return Engine(validate_config(cfg), data=data)


def test_one_round_by_hand():
    """w^t = 10 (the quadratic model's start), lr 0.1, lam 0.5, 2 local steps, p_i = 1/3.

    device (a, b)  step 1: d = g (sign 0)       step 2: d = g + lam sign(w - 10)
    (1, -2)        g = 18,  w = 10 - 1.8 = 8.2   g = 14.4, d = 13.9,  w = 8.2 - 1.39 = 6.81
    (0.5, 1)       g = 11,  w = 10 - 1.1 = 8.9   g = 9.9,  d = 9.4,   w = 8.9 - 0.94 = 7.96
    (1, -30)       g = -10, w = 10 + 1.0 = 11    g = -8,   d = -7.5,  w = 11 + 0.75 = 11.75
    w^1 = (6.81 + 7.96 + 11.75) / 3 = 8.84 (FedAvg: (6.76 + 7.91 + 11.8) / 3 = 8.8233...)."""
    coeffs = [(1.0, -2.0), (0.5, 1.0), (1.0, -30.0)]
    eng = quadratic_engine(coeffs)
    eng.run_round(1)
    assert abs(float(eng.w) - 8.84) < 1e-12
    fedavg = quadratic_engine(coeffs, method="fedavg")
    fedavg.run_round(1)
    assert abs(float(fedavg.w) - (6.76 + 7.91 + 11.8) / 3) < 1e-12


def test_two_rounds_against_the_rule_in_plain_python():
    coeffs, lam, lr, steps = [(1.0, -2.0), (0.25, 3.0)], 0.2, 0.05, 4
    eng = quadratic_engine(coeffs, lam=lam, steps=steps, lr=lr)
    w_global = 10.0
    for r in (1, 2):
        eng.run_round(r)
        finals = []
        for a, b in coeffs:
            w = w_global
            for _ in range(steps):
                diff = w - w_global
                sign = (diff > 0) - (diff < 0)
                w -= lr * (2 * a * w + b + lam * sign)
            finals.append(w)
        w_global = sum(finals) / len(finals)
        assert abs(float(eng.w) - w_global) < 1e-12, (r, float(eng.w), w_global)


def test_lam_zero_is_fedavg_and_declares_the_linear_step():
    from fedbench.methods import build_method
    from fedbench.methods.base import LinearStep

    assert build_method("fedavg_l1", {"lam": 0.0}).linear_step() == LinearStep()
    # the term of each step at its w: the fused batched path, not the per-step one
    assert build_method("fedavg_l1", {"lam": 0.1}).linear_step() == LinearStep(term=True)
    coeffs = [(1.0, -2.0), (0.5, 1.0)]
    a, b = quadratic_engine(coeffs, lam=0.0), quadratic_engine(coeffs, method="fedavg")
    for r in (1, 2):
        a.run_round(r)
        b.run_round(r)
    assert torch.equal(a.w, b.w)


def test_contracts_hold():
    """What `fedbench check --contracts --plugin examples/fedavg_l1/fedavg_l1.py` runs."""
    from fedbench.contracts import method_checks

    failed = [c for c in method_checks("fedavg_l1") if not c.ok]
    assert not failed, failed
