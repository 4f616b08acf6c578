"""Contracts every registered method keeps, parametrized over the registry (a new method is
checked without editing this file): help for every parameter, one-line errors for bad values,
2 rounds on a tiny run, state that round-trips through state_dict, and FedAvg at the parameter
values it declares (reduces_to_fedavg). Then the registration checks (the method/config
namespace) and the narrow engine interface (ctx.services); the server step is
tests/methods/test_server_opt.py."""

import copy
import dataclasses
import inspect
import math

import pytest
import torch
from conftest import PARTIAL_WORK, tiny_config, tiny_data

from fedbench.assembly import apply_overrides, validate_config
from fedbench.errors import FedbenchError
from fedbench.methods import (
    METHODS,
    LocalResult,
    Method,
    RoundContext,
    Setup,
    build_method,
    describe_methods,
    method_params,
    register,
    weighted_mean,
)
from fedbench.training.engine import Engine

ALL = list(METHODS)
# parameters that switch on state a method's defaults leave idle (the round trip tries both)
STATEFUL = {
    "fedprox": {"mu": 0.1, "adaptive": True, "dissimilarity": True},
    "fednova": {"gmf": 0.5, "mu": 0.01},
    "fedsoftmax": {"fstar": "min_seen", "loss": "start"},
    "fedmax": {"k": 2, "fstar": "min_seen"},
}
ROUND_TRIP = [(m, {}) for m in ALL] + sorted(STATEFUL.items())
REDUCING = [m for m in ALL if METHODS[m].reduces_to_fedavg is not None]


def records_equal(a: dict, b: dict) -> bool:
    """Round records equal, NaN equal to NaN, timings left out."""
    keys = set(a) - {"round_seconds"}
    if keys != set(b) - {"round_seconds"}:
        return False
    for k in keys:
        x, y = a[k], b[k]
        both_nan = isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y)
        if x != y and not both_nan:
            return False
    return True


# ---------------------------------------------------------------- parameters


@pytest.mark.parametrize("method", ALL)
def test_registered_with_help(method):
    cls = METHODS[method]
    assert cls.name == method and issubclass(cls, Method)
    for f in dataclasses.fields(cls.Params):
        assert f.metadata.get("help"), f"{method}.{f.name} has no help"
    (row,) = [r for r in describe_methods() if r["method"] == method]
    assert row["about"], f"{method} has no docstring"
    method_params(method, {})  # the defaults are valid


def test_registry_is_in_listing_order():
    keys = [(cls.listing_order, name) for name, cls in METHODS.items()]
    assert keys == sorted(keys)


def bad_values(default):
    """A wrong-typed value and out-of-range probes for a parameter with this default."""
    if isinstance(default, bool):
        return ["yes"], []
    if isinstance(default, float):
        return ["big"], [-1e9, -1.0, 0.0, 1e9, math.nan]
    if isinstance(default, int):
        return ["big"], [-1, 0, 10**9]
    return [3], ["no-such-choice"]


@pytest.mark.parametrize("method", ALL)
def test_bad_parameters_give_one_line(method):
    def one_line(params, must_fail):
        try:
            method_params(method, params)
        except FedbenchError as e:
            msg = str(e)
            assert "\n" not in msg and method in msg and next(iter(params)) in msg, msg
            return
        assert not must_fail, f"{method} accepted {params}"

    one_line({"no_such_parameter": 1}, must_fail=True)
    for f in dataclasses.fields(METHODS[method].Params):
        wrong, probes = bad_values(f.default)
        for v in wrong:
            one_line({f.name: v}, must_fail=True)
        for v in probes:  # accepted, or a one-line error naming the parameter
            must_fail = isinstance(v, str) or (isinstance(v, float) and math.isnan(v))
            one_line({f.name: v}, must_fail=must_fail)


# ---------------------------------------------------------------- rounds and state


def engine(method, params, **kw):
    cfg = tiny_config(method=method, method_params=params, **PARTIAL_WORK, **kw)
    return Engine(validate_config(cfg), data=tiny_data())


@pytest.mark.parametrize("method", ALL)
def test_two_rounds_run(method):
    eng = engine(method, {}, grad_clip=10.0)
    for r in (1, 2):
        rec = eng.run_round(r)
        assert rec["round"] == r and math.isfinite(rec["local_loss"])
        assert math.isfinite(eng.eval_record()["test_loss"])
    assert torch.isfinite(eng.w).all()


def server_settings(method, params) -> dict:
    """A server optimizer with state (FedAdam at the defaults, else FedAvgM) where the method
    accepts one (its check_config may refuse, e.g. a method with its own server momentum):
    the round trip then covers the server optimizer's state too."""
    if params:
        return {}
    server = {"server_opt": "adam"} if method in ("fedavg", "fedprox") else {"server_momentum": 0.5}
    try:
        validate_config(tiny_config(method=method, **server))
    except FedbenchError:
        return {}
    return server


@pytest.mark.parametrize("method,params", ROUND_TRIP)
def test_state_round_trips(method, params):
    """Save after 2 rounds, load into a fresh method: round 3 is the same, bit for bit. The
    defaults run with a server optimizer that keeps state where the method accepts one, so its
    buffers are part of the method's state."""
    server = server_settings(method, params)
    a, b = (engine(method, params, **server) for _ in range(2))
    a.run_round(1)
    a.run_round(2)
    state = a.method.state_dict()
    declared = {s.name for s in METHODS[method].state}
    server_state = {"server_m", "server_v"} if "server_opt" in server else set()
    server_state |= {"server_m"} if "server_momentum" in server else set()
    assert set(state) == declared | server_state
    saved = copy.deepcopy(state)
    b.w, b.buffers = a.w.clone(), a.buffers.clone()
    b.method.load_state_dict(state)
    ra, rb = a.run_round(3), b.run_round(3)
    assert torch.equal(a.w, b.w) and records_equal(ra, rb)
    for name, v in saved.items():  # what was saved does not move with later rounds
        assert torch.equal(state[name], v) if isinstance(v, torch.Tensor) else state[name] == v


def test_load_state_dict_rejects_another_runs_state_in_one_line():
    eng = engine("scaffold", {})
    state = eng.method.state_dict()
    with pytest.raises(FedbenchError, match="expected c, c_i") as e:
        eng.method.load_state_dict({"c": state["c"]})
    assert "\n" not in str(e.value)
    state["c_i"] = state["c_i"][:2]
    with pytest.raises(FedbenchError, match=r"state c_i has shape \(2, \d+\), this run's") as e:
        eng.method.load_state_dict(state)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("method", REDUCING)
def test_reducing_parameters_give_fedavg(method):
    """Without heterogeneity, with equal device sizes, at its declared values: FedAvg."""
    data = tiny_data(sizes=(8, 8, 8, 8))
    params = METHODS[method].reduces_to_fedavg
    ref = Engine(tiny_config(hetero="none"), data=data)
    eng = Engine(tiny_config(hetero="none", method=method, method_params=params), data=data)
    for r in (1, 2):
        ref.run_round(r)
        eng.run_round(r)
        assert torch.allclose(eng.w, ref.w, atol=1e-12, rtol=0), (eng.w - ref.w).abs().max()


# ---------------------------------------------------------------- registration and namespace


def make_class(name="toy", server_lr_param=None, **fields):
    """A Method subclass with Params fields name -> (default, help)."""
    spec = [
        (k, type(d), dataclasses.field(default=d, metadata={"help": h} if h else {}))
        for k, (d, h) in fields.items()
    ]
    params = dataclasses.make_dataclass("ToyParams", spec, frozen=True)
    attrs = {"name": name, "Params": params, "server_lr_param": server_lr_param}
    return type("Toy", (Method,), attrs)


@pytest.mark.parametrize(
    "cls,message",
    [
        (make_class(rho=(0.5, "a")), "parameter 'rho' is also a config field or alias"),
        (make_class(s=(0.5, "a")), "parameter 's' is also a config field or alias"),
        (make_class(server_lr=(1.0, "a")), "'server_lr' is also a config field"),
        (make_class(name="fedavg"), "method name 'fedavg' is already registered"),
        (make_class(mu=(0.5, "")), "parameter 'mu' needs metadata help"),
        (make_class(server_lr_param="eta"), "'eta' is not one of its parameters"),
        (make_class(name=""), "must subclass Method and set a name"),
    ],
)
def test_registration_rejects_in_one_line(cls, message):
    before = dict(METHODS)
    with pytest.raises(FedbenchError, match=message) as e:
        register(cls)
    assert "\n" not in str(e.value)
    assert METHODS == before  # nothing registered


def test_set_keys_reach_config_or_method():
    """Config fields and aliases go to the config, other keys (bare or method.-prefixed) to the
    method; registration guarantees no method parameter is named like a config field."""
    cfg = apply_overrides(
        tiny_config(method="fedprox"),
        {"mu": "0.3", "method.adaptive": "true", "s": "0.2", "server_momentum": "0.9"},
    )
    assert cfg.method_params == {"mu": 0.3, "adaptive": True}
    assert cfg.stragglers == 0.2 and cfg.server_momentum == 0.9
    validate_config(cfg)


# ---------------------------------------------------------------- engine services


def test_methods_reach_the_engine_only_through_services():
    for cls in METHODS.values():
        src = inspect.getsource(inspect.getmodule(cls))
        assert "ctx.engine" not in src and "fedbench.training.engine" not in src, cls.name


class StubServices:
    """Full-batch gradients from a table: a method runs without any engine."""

    def __init__(self, grads):
        self.grads = grads

    def full_batch_grads(self, w, clients):
        return torch.zeros(len(clients), dtype=w.dtype), self.grads[clients]


def test_mimelite_with_stub_services_by_hand():
    """m <- (1 - beta) g_bar + beta m, g_bar = sum_i (n_i / sum n) g_i from ctx.services."""
    grads = torch.tensor([[1.0, 2.0], [3.0, -1.0], [0.0, 4.0]], dtype=torch.float64)
    n = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)
    p = n / n.sum()
    m = build_method("mimelite", {"beta": 0.5})
    m.setup(Setup(3, 2, torch.device("cpu"), torch.float64, None, n))
    x = torch.zeros(2, dtype=torch.float64)
    ctx = RoundContext(
        1, 0.1, x, torch.arange(3), n, None, None, None, p, tiny_config(), StubServices(grads)
    )
    w = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], dtype=torch.float64)
    new_w, rec = m.aggregate(ctx, LocalResult(w=w, global_w=x))
    assert torch.allclose(new_w, weighted_mean(w, p), atol=1e-15)
    g_bar = [sum(float(p[i] * grads[i, d]) for i in range(3)) for d in range(2)]
    assert torch.allclose(m.m, 0.5 * torch.tensor(g_bar, dtype=torch.float64), atol=1e-15)
    assert rec == {"extra_grad_samples": 6, "extra_grad_passes": 3}
