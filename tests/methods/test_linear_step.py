"""Methods.linear_step: a method that declares its local step as d = scale g + mu (w - w^t) +
local[const] computes exactly that in local_step, so the engine may train the round from the
declaration alone (fused SGD, the MLP window, the compiled loop; tests/test_fastpath.py and
tests/test_mlp_window_terms.py check those paths against the per-step one)."""

import pytest
import torch
from conftest import tiny_config, tiny_data

from fedbench.contracts import linear_step_probe
from fedbench.methods import registry
from fedbench.methods.base import LinearStep, Method
from fedbench.training.engine import Engine

# parameters at which each method's local step has its extra terms switched on
PARAMS = {
    "fedprox": {"mu": 0.3},
    "fednova": {"mu": 0.2},
    "fedcm": {"alpha": 0.3},
    "mimelite": {"beta": 0.4},
}


def _engine(name: str) -> Engine:
    cfg = tiny_config(method=name, method_params=PARAMS.get(name, {}), weight_decay=0.01)
    return Engine(cfg, data=tiny_data())


@pytest.mark.parametrize("name", sorted(registry.METHODS))
def test_local_step_is_the_declared_linear_step(name):
    """After two rounds (so server state such as SCAFFOLD's c, FedCM's Delta, MimeLite's m is
    nonzero), local_step at a random w with a fixed gradient g equals the LinearStep formula
    to rounding (float64)."""
    eng = _engine(name)
    if eng.method.sequential:
        pytest.skip("sequential methods train through their own loop")
    step, local, d, want = linear_step_probe(eng)
    if step is None:
        assert type(eng.method).local_step is not Method.local_step
        return
    if step.const:
        assert local[step.const].shape == d.shape == want.shape  # [k, D]
        if name in ("scaffold", "fedcm", "mimelite"):
            assert local[step.const].abs().max() > 0, "the test needs a nonzero constant"
    torch.testing.assert_close(d, want, rtol=0, atol=1e-12)


def test_as_sgd_is_exact_at_scale_one_and_rescales_otherwise():
    assert LinearStep(mu=0.3).as_sgd(0.01) == (0.01, 0.3, 1.0)
    lr, mu, c = LinearStep(scale=0.25, mu=0.5).as_sgd(0.01)
    assert (lr, mu, c) == (0.0025, 2.0, 4.0)  # lr' (g + mu' (w - wg) + c' const) = lr d
    assert LinearStep().plain and LinearStep(const="x").plain
    assert not LinearStep(scale=0.5).plain and not LinearStep(mu=0.1).plain


def test_methods_without_a_linear_step_say_so():
    """FedSAM at r = 0 (its two passes stay, stepwise); FedCM at alpha 0 and damped MimeLite
    at beta 1 have no gradient term. FedDyn declares its per-device alpha_i as a per-row
    decay, FedSAM its radius as an ascent: both open the window only."""
    assert _engine("feddyn").method.linear_step() == LinearStep(
        const="feddyn_lin", decay="feddyn_alpha"
    )
    assert _engine("fedsam").method.linear_step() == LinearStep(ascent=0.1)
    cfg = tiny_config(method="fedsam", method_params={"r": 0.0})
    assert Engine(cfg, data=tiny_data()).method.linear_step() is None
    cfg = tiny_config(method="fedcm", method_params={"alpha": 0.0})
    assert Engine(cfg, data=tiny_data()).method.linear_step() is None
    cfg = tiny_config(method="mimelite", method_params={"beta": 1.0})
    assert Engine(cfg, data=tiny_data()).method.linear_step() is None
