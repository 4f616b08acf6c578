"""Which engine round path a method's rounds take (methods.base.step_paths, from its
linear_step), what `fedbench methods` says about it, and that a method whose local step is not
declared linear still trains correctly, stepwise."""

import pytest
import torch
from click.testing import CliRunner
from conftest import tiny_config, tiny_data

from fedbench.cli import cli
from fedbench.methods import METHODS, describe_methods
from fedbench.methods.base import ROUND_PATHS, LinearStep, step_paths
from fedbench.methods.fedavg import FedAvg
from fedbench.methods.registry import STEPWISE_COST, default_paths, path_text
from fedbench.training.engine import Engine


def test_step_paths_by_declaration():
    assert step_paths(None) == ("stepwise",)
    assert step_paths(LinearStep()) == ROUND_PATHS
    assert step_paths(LinearStep(const="c")) == ROUND_PATHS  # plain SGD plus a fixed drift
    assert step_paths(LinearStep(mu=0.1)) == ("compiled", "window", "stepwise")
    assert step_paths(LinearStep(scale=0.5)) == ("compiled", "window", "stepwise")
    assert step_paths(LinearStep(scale=0.0)) == ("stepwise",)


def test_the_listing_says_each_methods_paths():
    rows = {r["method"]: r["round paths"] for r in describe_methods()}
    assert set(rows) == set(METHODS)
    for name, cls in METHODS.items():
        assert rows[name] == path_text(default_paths(cls))
    assert rows["feddyn"] == rows["fedsam"] == path_text(("window", "stepwise"))
    assert rows["feddyn"].startswith("window (MLPs")
    assert rows["fedavg"] == "compiled, window, fused"
    assert path_text(("stepwise",)).startswith(f"stepwise ({STEPWISE_COST}")
    r = CliRunner().invoke(cli, ["methods", "--format", "md"], obj={})
    assert r.exit_code == 0 and "round paths" in r.output and "window (MLPs" in r.output


@pytest.mark.parametrize("model", ["mlp", "logreg"])
@pytest.mark.parametrize("name", sorted(METHODS))
def test_the_engine_takes_a_path_the_declaration_opens(name, model):
    eng = Engine(tiny_config(method=name, model=model), data=tiny_data())
    w = eng.w.expand(3, -1).clone()
    path = eng.round_path(eng.method.linear_step(), w, None)
    assert path in default_paths(METHODS[name])
    momentum = Engine(tiny_config(method=name, model=model, momentum=0.5), data=tiny_data())
    assert momentum.round_path(momentum.method.linear_step(), w, None) == "stepwise"


class Undeclared(FedAvg):
    """FedAvg's local step written out, but not declared linear: only the stepwise path."""

    def local_step(self, ctx, w, grad_fn, local):
        _, g = grad_fn(w)
        return g


@pytest.mark.parametrize("model", ["mlp", "logreg"])
def test_an_undeclared_local_step_trains_stepwise_to_the_same_numbers(model, monkeypatch):
    monkeypatch.setitem(METHODS, "undeclared", type("U", (Undeclared,), {"name": "undeclared"}))
    data = tiny_data()
    ref = Engine(tiny_config(model=model), data=data)
    eng = Engine(tiny_config(model=model, method="undeclared"), data=data)
    assert eng.method.linear_step() is None and ref.method.linear_step() == LinearStep()
    taken = []
    path_of = eng.round_path
    eng.round_path = lambda *a: taken.append(path_of(*a)) or taken[-1]
    for r in (1, 2):
        ref.run_round(r)
        eng.run_round(r)
    assert taken == ["stepwise", "stepwise"]
    assert torch.allclose(eng.w, ref.w, atol=1e-12, rtol=0), (eng.w - ref.w).abs().max()


class L1Term(FedAvg):
    """A plugin-style method that only adds a term to the local gradient (grad_term, no
    local_step): the default linear_step declares LinearStep(term=True)."""

    name = "l1_term_test"

    def grad_term(self, ctx, w, local):
        return (w - ctx.global_w).sign_().mul_(0.05)


@pytest.mark.parametrize("model", ["mlp", "logreg"])
def test_a_gradient_term_takes_the_fused_path_to_the_stepwise_numbers(model, monkeypatch):
    """float64, 3 rounds with partial work: the fused path (sgd_step, then w -= lr term at the
    step's starting w) equals local_step at every step (g + term) to 1e-12; the term moved the
    models away from FedAvg's."""
    from fedbench.testing import PARTIAL_WORK

    cfg = tiny_config(model=model, weight_decay=0.01, **PARTIAL_WORK)
    fused, ref, plain = (Engine(cfg, data=tiny_data()) for _ in range(3))
    for eng in (fused, ref):
        eng.method = L1Term(eng.method.p)
        eng.method.setup(plain_setup(eng))
    assert fused.method.linear_step() == LinearStep(term=True)
    assert step_paths(LinearStep(term=True)) == ("fused", "stepwise")
    assert fused.round_path(LinearStep(term=True), fused.w.expand(2, -1), None) == "fused"
    ref.method.linear_step = lambda: None
    for r in (1, 2, 3):
        fused.run_round(r), ref.run_round(r), plain.run_round(r)
        torch.testing.assert_close(fused.w, ref.w, rtol=0, atol=1e-12)
    assert (fused.w - plain.w).abs().max() > 1e-6


def plain_setup(eng):
    from fedbench.methods.base import Setup

    return Setup(
        eng.data.num_clients, eng.model.dim, eng.device, eng.dtype, eng.cfg, eng.sizes.double()
    )
