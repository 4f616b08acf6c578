"""The method author's hooks around a round: ``init(w0, services)`` (state that starts from the
initial model, called once by the engine after setup) and ``client_final(ctx, res)`` (after local
training, before aggregation, on the devices' rows), on a toy method computed by hand."""

from dataclasses import dataclass

import pytest
import torch
from conftest import quad_engine

from fedbench.methods import METHODS, Method, State, weighted_mean
from fedbench.methods.params import param
from methods.quadratic import COEFFS, local_gd


@dataclass(frozen=True)
class AnchoredParams:
    clip: float = param(1.0, "largest |Delta_i| a device sends", "> 0")


class Anchored(Method):
    """A toy: devices send their deltas clipped to norm `clip` (client_final); the server takes
    their mean and pulls it halfway back to the initial model w^0 (init)."""

    name = "anchored"
    Params = AnchoredParams
    state = (State("anchor", "dim"), State("inits", "value", init=0))

    def init(self, w0, services):
        self.anchor.copy_(w0)
        self.inits += 1

    def client_final(self, ctx, res):
        d = res.delta
        res.w = res.global_w + d * (self.p.clip / d.norm(dim=1, keepdim=True)).clamp(max=1.0)
        return res

    def combine(self, ctx, res):
        return 0.5 * (weighted_mean(res.w, ctx.weights) + self.anchor), {}


@pytest.fixture
def anchored(monkeypatch):
    """The toy registered for one test only (the registry is left as it was)."""
    monkeypatch.setitem(METHODS, "anchored", Anchored)


def clipped(d, clip=1.0):
    return max(-clip, min(clip, d))


def test_init_and_client_final_two_rounds_by_hand(anchored):
    """1-D, w^0 = 10, 3 local steps at lr 0.1: F_1 = w^2 - 2w goes to 5.608 (Delta -4.392),
    F_2 = 0.5 w^2 + w to 7.019 (Delta -2.981); both clipped to -1, mean 9, pulled halfway to
    w^0 = 10: 9.5. Round 2 from 9.5: both clipped to -1 again, 8.5, halfway to 10: 9.25."""
    eng = quad_engine("anchored", coeffs=COEFFS[:2])
    assert eng.method.inits == 1 and float(eng.method.anchor) == 10.0  # init(w^0), once
    w = 10.0
    for r, literal in ((1, 9.5), (2, 9.25)):
        eng.run_round(r)
        sent = [w + clipped(local_gd(w, a, b, 3, 0.1) - w) for a, b in COEFFS[:2]]
        w = 0.5 * (sum(sent) / 2 + 10.0)
        assert abs(float(eng.w) - w) < 1e-12 and abs(w - literal) < 1e-12
    assert eng.method.inits == 1


def test_client_final_sees_the_rows_before_aggregation(anchored):
    """With a clip no delta reaches, client_final changes nothing: the toy is then the mean
    pulled halfway to w^0, by hand."""
    eng = quad_engine("anchored", {"clip": 100.0}, coeffs=COEFFS[:2])
    eng.run_round(1)
    avg = sum(local_gd(10.0, a, b, 3, 0.1) for a, b in COEFFS[:2]) / 2
    assert abs(float(eng.w) - 0.5 * (avg + 10.0)) < 1e-12


def test_a_checkpoint_replaces_what_init_set(anchored):
    a, b = quad_engine("anchored", coeffs=COEFFS[:2]), quad_engine("anchored", coeffs=COEFFS[:2])
    a.method.anchor.fill_(3.0)  # a state the run reached
    b.method.load_state_dict(a.method.state_dict())
    assert float(b.method.anchor) == 3.0 and torch.equal(b.method.anchor, a.method.anchor)


def test_the_default_hooks_change_nothing():
    eng = quad_engine("fedavg", coeffs=COEFFS[:2])
    res = object()
    assert eng.method.client_final(None, res) is res
    assert eng.method.init(eng.w, None) is None


@pytest.mark.parametrize("method", ["scaffold", "feddyn"])
def test_per_device_state_is_updated_in_client_final_not_in_combine(method):
    """SCAFFOLD's c_i (and c) and FedDyn's L_i change in client_final, from each device's final
    model; combine only reads them (issue 32, item 4)."""
    eng = quad_engine(method, coeffs=COEFFS, k=2)
    eng.run_round(1)  # state nonzero from here on
    m, seen = eng.method, {}

    def snapshot():
        return {k: v.clone() for k, v in m.state_dict().items()}

    def watch(hook):
        real = getattr(m, hook)

        def wrapped(ctx, res):
            before = snapshot()
            out = real(ctx, res)
            after = snapshot()
            seen[hook] = [k for k in before if not torch.equal(before[k], after[k])]
            return out

        setattr(m, hook, wrapped)

    watch("client_final")
    watch("combine")
    eng.run_round(2)
    assert seen["combine"] == []
    assert seen["client_final"] == {"scaffold": ["c", "c_i"], "feddyn": ["L"]}[method]
