"""Without heterogeneity the heterogeneity-aware methods reduce to FedAvg (real engine path)."""

import math

import pytest
import torch
from conftest import tiny_config, tiny_data

from fedbench.assembly import build_config
from fedbench.methods import METHODS
from fedbench.training.engine import Engine

REDUCE_TO_FEDAVG = {
    "fedlga": {},  # all tau_i = 1: no correction
    "fedprox": {"mu": 0.0},
    "fednova": {"mu": 0.0},  # equal steps: tau_eff / a_i = 1
    "pfl": {},
    "scaffold": {},  # round 1: all control variates are zero
    "fedcm": {"alpha": 1.0},
    "mimelite": {"beta": 0.0},
    "fedsam": {"r": 0.0},
}


@pytest.mark.parametrize("method", sorted(REDUCE_TO_FEDAVG))
def test_no_heterogeneity_equals_fedavg(method):
    # equal device sizes so FedNova's steps are equal; MLP with explicit backward
    data = tiny_data(sizes=(8, 8, 8, 8))
    ref = Engine(tiny_config(hetero="none"), data=data)
    eng = Engine(
        tiny_config(hetero="none", method=method, method_params=REDUCE_TO_FEDAVG[method]),
        data=data,
    )
    ref.run_round(1)
    eng.run_round(1)
    assert torch.allclose(eng.w, ref.w, atol=1e-12, rtol=0), (eng.w - ref.w).abs().max()


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


@pytest.mark.slow
@pytest.mark.parametrize("method", list(METHODS))
def test_every_method_on_fedlga_fmnist(method, fmnist_available, tmp_path):
    """fedbench train --preset fedlga-fmnist --method M --rounds 20: finite loss and the
    method's own per-round fields in the records."""
    from fedbench.training.runner import train

    cfg = build_config("fedlga-fmnist", None, {"method": method, "rounds": "20"})
    meta, df = train(cfg, tmp_path)
    assert meta["status"] == "complete"
    assert all(math.isfinite(v) for v in df["local_loss"].iloc[1:])
    assert df["test_acc"].iloc[-1] > 0.3
    extra = {
        "fedlga": "norm_ratio",
        "fednova": "tau_eff",
        "mimelite": "extra_grad_samples",
        "fedsoftmax": "agg_weights",
        "fedmax": "agg_weights",
        "sfl": "order",
    }
    if method in extra:
        assert extra[method] in df.columns
