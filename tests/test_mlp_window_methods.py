"""FedSAM and FedDyn on the MLP's window against the engine's stepwise path (local_step at
every step): FedSAM's LinearStep.ascent (both gradient passes of a step batched, the first
layer's weight never formed), FedDyn's LinearStep.decay (alpha_i w, a decay per row)."""

from __future__ import annotations

import pytest
import torch
from conftest import PARTIAL_WORK, tiny_config, tiny_data

from fedbench.methods.base import LinearStep, step_paths
from fedbench.training.engine import Engine


def test_an_ascent_or_a_row_decay_opens_only_the_window():
    assert step_paths(LinearStep(ascent=0.1)) == ("window", "stepwise")
    assert step_paths(LinearStep(decay="a")) == ("window", "stepwise")
    assert not LinearStep(decay="a").plain and not LinearStep(ascent=0.1).plain


def _windowed_and_stepwise(method, params, window, wd):
    cfg = tiny_config(
        method=method, method_params=params, **PARTIAL_WORK, weight_decay=wd, hidden=7
    )
    data = tiny_data(sizes=(7, 12, 5, 9))
    windowed, ref = Engine(cfg, data=data), Engine(cfg, data=data)
    windowed.model.step_window = window
    step = windowed.method.linear_step()
    assert windowed.round_path(step, windowed.w.expand(2, -1), None) == "window"
    ref.method.linear_step = lambda: None  # the stepwise path: local_step at every step
    return windowed, ref, data


def _same_rounds(windowed, ref, rounds=3):
    for r in range(1, rounds + 1):
        rec_w, rec_r = windowed.run_round(r), ref.run_round(r)
        torch.testing.assert_close(windowed.w, ref.w, rtol=0, atol=1e-12)
        assert rec_w["local_loss"] == pytest.approx(rec_r["local_loss"], abs=1e-12)
        assert rec_w["grad_evals"] == rec_r["grad_evals"] > 0


@pytest.mark.parametrize("window", [2, 3, 16])
@pytest.mark.parametrize("wd", [0.0, 0.01])
def test_fedsam_window_equals_its_stepwise_rounds_float64(window, wd):
    """float64, to 1e-12 over 3 rounds with FedLGA partial work (rows finishing mid-window),
    padded batches and weight decay (the ascent uses the loss gradient, the step decays w):
    same models, losses and grad_evals (two a step) as FedSAM.local_step per step."""
    windowed, ref, data = _windowed_and_stepwise("fedsam", {"r": 0.5}, window, wd)
    _same_rounds(windowed, ref)
    plain = Engine(tiny_config(method="fedavg", **PARTIAL_WORK, weight_decay=wd, hidden=7), data)
    for r in range(1, 4):
        plain.run_round(r)
    assert (plain.w - ref.w).abs().max() > 1e-4  # the ascent changed the models


@pytest.mark.parametrize("window", [2, 3, 16])
@pytest.mark.parametrize("wd", [0.0, 0.01])
def test_feddyn_window_equals_its_stepwise_rounds_float64(window, wd):
    """float64, to 1e-12 over 4 rounds with partial work and unequal device sizes (alpha_i
    differs by row), with and without weight decay: same models, losses, grad_evals and state
    L as FedDyn.local_step per step (L is nonzero from round 2: the constant term is on)."""
    windowed, ref, _ = _windowed_and_stepwise("feddyn", {"alpha": 0.3}, window, wd)
    alpha = windowed.method.alpha_i
    assert alpha.max() > alpha.min()
    _same_rounds(windowed, ref, rounds=4)
    torch.testing.assert_close(windowed.method.L, ref.method.L, rtol=0, atol=1e-12)
    assert windowed.method.L.abs().max() > 0


@pytest.mark.parametrize("method,params", [("scaffold", {}), ("fedprox", {"mu": 0.3})])
def test_const_products_once_a_round_equal_the_windows_own_float64(method, params, monkeypatch):
    """window_const: X C1^T computed once a round over each row's device and gathered by the
    windows equals the window computing it itself (to 1e-12, float64, 3 epochs, partial work)."""
    from fedbench.training import window_const

    cfg = tiny_config(method=method, method_params=params, **PARTIAL_WORK, local_epochs=3, hidden=7)
    data = tiny_data(sizes=(7, 12, 5, 9))
    cached, own = Engine(cfg, data=data), Engine(cfg, data=data)
    cached.model.step_window = own.model.step_window = 4
    built = []
    real_pays, real_class = window_const.pays, window_const.ConstProducts

    class Counted(real_class):
        def __init__(self, *args):
            super().__init__(*args)
            built.append(self)

    def pays(engine, const):  # `own` computes X C1^T in each window itself
        return engine is not own and real_pays(engine, const)

    monkeypatch.setattr(window_const, "pays", pays)
    monkeypatch.setattr(window_const, "ConstProducts", Counted)
    for r in range(1, 4):
        cached.run_round(r), own.run_round(r)
        torch.testing.assert_close(cached.w, own.w, rtol=0, atol=1e-12)
    assert len(built) == 3  # one a round, the cached engine's
