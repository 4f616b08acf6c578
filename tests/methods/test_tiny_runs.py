"""Methods on tiny runs: two rounds on the MLP stay finite, state restores a run, the
heterogeneity-aware methods reduce to FedAvg without heterogeneity, and (slow) every method on
FedLGA's FMNIST."""

import math

import pytest
import torch
from conftest import PARTIAL_WORK, tiny_config, tiny_data

from fedbench.assembly import build_config, validate_config
from fedbench.methods import METHODS
from fedbench.training.engine import Engine
from methods.weighted import quad_engine

NEW = ["fednova", "scaffold", "feddyn", "fedcm", "mimelite"]


@pytest.mark.parametrize("method", NEW)
def test_state_dict_restores_the_run(method):
    """Checkpoint after round 1, restore into a fresh engine: round 2 is identical."""
    a = quad_engine(method, k=2)
    a.run_round(1)
    state = {k: v.clone() for k, v in a.method.state_dict().items()}
    b = quad_engine(method, k=2)
    b.w = a.w.clone()
    b.method.load_state_dict(state)
    a.run_round(2)
    b.run_round(2)
    assert torch.equal(a.w, b.w)


@pytest.mark.parametrize("method", NEW)
def test_smoke_mlp_two_rounds(method):
    cfg = tiny_config(
        method=method,
        model="mlp",
        **PARTIAL_WORK,
        momentum=0.5,
        weight_decay=1e-3,
    )
    eng = Engine(cfg, data=tiny_data())
    for r in (1, 2):
        rec = eng.run_round(r)
        assert math.isfinite(rec["local_loss"])
    ev = eng.eval_record()
    assert math.isfinite(ev["test_loss"]) and torch.isfinite(eng.w).all()


SMOKE = [
    ("fedlga", {}),
    ("fedlga", {"g": "B", "lam": 0.5}),
    ("fedlga", {"g": "eq6"}),
    ("fedlga", {"g": "path"}),
    ("fedsam", {"r": 0.5}),
    ("fedsoftmax", {"T": 10.0, "loss": "start", "fstar": "min_seen", "use_p": True}),
    ("fedmax", {"k": 2}),
    ("sfl", {}),
    ("pfl", {"eta_g": 0.9}),
    ("fedprox", {"mu": 0.0, "adaptive": True, "dissimilarity": True}),
]


@pytest.mark.parametrize("method,params", SMOKE)
def test_smoke_two_rounds_on_the_mlp(method, params):
    cfg = tiny_config(method=method, method_params=params, **PARTIAL_WORK, grad_clip=10.0)
    eng = Engine(validate_config(cfg), data=tiny_data())
    for r in (1, 2):
        rec = eng.run_round(r)
        assert math.isfinite(rec["local_loss"])
        assert math.isfinite(eng.eval_record()["test_loss"])
    assert torch.isfinite(eng.w).all()


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
