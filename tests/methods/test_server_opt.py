"""The server optimizer (fedbench.methods.server_opt): FedAvgM, FedAdagrad, FedAdam and FedYogi
as settings of any method (`--set server_opt=...`), against rounds computed by hand on quadratics
(plain floats, Reddi et al. 2021, Alg. 2), reachable on FedAvg and FedProx; their state in the
method's state_dict; the settings' one-line errors; the default keeping every stored run."""

import math

import pytest
import torch
from conftest import TINY_SETS, invoke, quadratic_data, tiny_config, tiny_data

from fedbench import config
from fedbench.assembly import apply_overrides, build_config, validate_config
from fedbench.errors import FedbenchError
from fedbench.identity import config_hash, run_id
from fedbench.methods import LocalResult, RoundContext, build_method
from fedbench.methods.server_opt import SERVER_OPTIMIZERS, Adaptive
from fedbench.training.engine import Engine
from methods.quadratic import local_gd as local_prox_gd

# 2-D devices (coordinates independent): F_i(w) = sum_d a_d w_d^2 + b_d w_d, one sample each
COEFFS_2D = [([1.0, 0.5], [-2.0, 1.0]), ([0.5, 2.0], [1.0, 0.0])]
TOL = 1e-12


def local_gd(w, a, b, steps, lr):
    """Local GD on a w^2 + b w in closed form: x* + (1 - 2 a lr)^S (w - x*), x* = -b / 2a."""
    x_star = -b / (2 * a)
    return x_star + (1 - 2 * a * lr) ** steps * (w - x_star)


@pytest.mark.parametrize("server_lr,beta", [(1.0, 0.9), (0.5, 0.9), (1.5, 0.0)])
def test_fedavgm_by_hand(server_lr, beta):
    """FedAvgM (Hsu et al. 2019) is FedAvg with --set server_momentum=0.9: three rounds on three
    quadratics, all devices every round, p_i = 1/3: m <- beta m + (avg - w), w <- w + eta m."""
    coeffs, steps, lr = [(1.0, -2.0), (0.5, 1.0), (0.25, 0.5)], 3, 0.1
    cfg = tiny_config(
        model="quadratic",
        num_clients=3,
        clients_per_round=3,
        local_steps=steps,
        batch_size=1,
        lr=lr,
    )
    cfg = apply_overrides(cfg, {"server_momentum": str(beta), "server_lr": str(server_lr)})
    eng = Engine(validate_config(cfg), data=quadratic_data(coeffs))
    w, m = 10.0, 0.0
    for r in (1, 2, 3):
        eng.run_round(r)
        avg = sum(local_gd(w, a, b, steps, lr) for a, b in coeffs) / 3
        m = beta * m + (avg - w)
        w = w + server_lr * m
        assert abs(float(eng.w) - w) < 1e-12, (r, float(eng.w), w)


def test_server_lr_is_the_papers_eta_g():
    """PFL's eta_g and FedAvg with server_lr are one step, bit for bit."""
    data = tiny_data()
    a = Engine(tiny_config(method="pfl", method_params={"eta_g": 1.5}), data=data)
    b = Engine(tiny_config(method="fedavg", server_lr=1.5), data=data)
    for r in (1, 2):
        a.run_round(r)
        b.run_round(r)
    assert torch.equal(a.w, b.w)


def test_default_server_step_returns_the_methods_aggregate():
    m = build_method("fedavg", {})
    w = torch.randn(3, 4, dtype=torch.float64)
    p = torch.full((3,), 1 / 3, dtype=torch.float64)
    ctx = RoundContext(1, 0.1, torch.zeros(4), torch.arange(3), p, None, None, None, p, None, None)
    agg, _ = m.combine(ctx, LocalResult(w=w, global_w=ctx.global_w))
    assert torch.equal(m.server_step(ctx, agg), agg)


@pytest.mark.parametrize(
    "method,params,overrides,message",
    [
        ("scaffold", {"eta_g": 0.5}, {"server_lr": 2.0}, "eta_g and server_lr both set"),
        ("mimelite", {"eta_s": 0.5}, {"server_lr": 2.0}, "eta_s and server_lr both set"),
        ("fednova", {"gmf": 0.5}, {"server_momentum": 0.9}, "gmf and server_momentum"),
        ("fedavg", {}, {"server_lr": 0.0}, "server_lr must be > 0"),
        ("fedavg", {}, {"server_momentum": 1.0}, r"server_momentum must be in \[0, 1\)"),
    ],
)
def test_server_step_settings_one_line_errors(method, params, overrides, message):
    cfg = tiny_config(method=method, method_params=params, **overrides)
    with pytest.raises(FedbenchError, match=message) as e:
        validate_config(cfg)
    assert "\n" not in str(e.value)


# ---------------------------------------------------------------- adaptive (Reddi et al., Alg. 2)


def adaptive_by_hand(opt, rounds, eta, b1=0.9, b2=0.99, tau=1e-3, steps=3, lr=0.05, mu=0.0):
    """w after each round, per coordinate in plain floats: Delta = mean_i (w_i - w) over the two
    devices (equal weights), m = b1 m + (1 - b1) Delta, v from v_{-1} = tau^2 by `opt`,
    w += eta m / (sqrt(v) + tau)."""
    w, m, v, out = [10.0, 10.0], [0.0, 0.0], [tau**2, tau**2], []
    for _ in range(rounds):
        for d in range(2):
            finals = [local_prox_gd(w[d], a[d], b[d], steps, lr, mu) for a, b in COEFFS_2D]
            delta = sum(finals) / 2 - w[d]
            m[d] = b1 * m[d] + (1 - b1) * delta
            sq = delta * delta
            if opt == "adam":
                v[d] = b2 * v[d] + (1 - b2) * sq
            elif opt == "yogi":
                v[d] = v[d] - (1 - b2) * sq * ((v[d] > sq) - (v[d] < sq))
            else:  # adagrad
                v[d] = v[d] + sq
            w[d] = w[d] + eta * m[d] / (math.sqrt(v[d]) + tau)
        out.append(list(w))
    return out


@pytest.mark.parametrize("opt", ["adam", "yogi", "adagrad"])
def test_adaptive_server_opt_two_rounds_by_hand(opt):
    """FedAdam, FedYogi, FedAdagrad: FedAvg with --set server_opt=... on a 2-D quadratic."""
    cfg = tiny_config(
        model="quadratic", num_clients=2, clients_per_round=2, local_steps=3, batch_size=1,
        lr=0.05,
    )  # fmt: skip
    cfg = validate_config(apply_overrides(cfg, {"server_opt": opt, "server_lr": "0.5"}))
    eng = Engine(cfg, data=quadratic_data(COEFFS_2D))
    expected = adaptive_by_hand(opt, 2, eta=0.5)
    for r in (1, 2):
        eng.run_round(r)
        assert max(abs(float(eng.w[d]) - expected[r - 1][d]) for d in range(2)) < TOL, r
    m, v = eng.method.state_dict()["server_m"], eng.method.state_dict()["server_v"]
    assert m.shape == v.shape == (2,) and bool((v > 0).all())


def test_fedadam_first_step_in_numbers():
    """1-D, w^0 = 10, one local step at lr 0.1 on F_1 = w^2 - 2w (to 8.2) and F_2 = 0.5 w^2 + w
    (to 8.9): Delta = -1.45, m = -0.145, v = 0.99e-6 + 0.01 * 2.1025 = 0.02102599,
    w^1 = 10 + 0.1 * -0.145 / (0.1450034 + 0.001) = 9.9006873 (Adam's first step: ~eta sign)."""
    cfg = tiny_config(
        model="quadratic", num_clients=2, clients_per_round=2, local_steps=1, batch_size=1,
        lr=0.1, server_opt="adam", server_lr=0.1,
    )  # fmt: skip
    eng = Engine(validate_config(cfg), data=quadratic_data([(1.0, -2.0), (0.5, 1.0)]))
    eng.run_round(1)
    assert abs(float(eng.w) - 9.900687253624506) < TOL


def test_the_yogi_case_tells_yogi_from_adam():
    """The hand-computed FedYogi case is not FedAdam's: round 1 they agree up to v_{-1} (adam
    decays tau^2 by b2, yogi keeps it); from round 2 on yogi's additive change of v,
    +-(1 - b2) Delta^2, and adam's b2 v + (1 - b2) Delta^2 part (by ~2e-3 at round 2)."""
    adam, yogi = adaptive_by_hand("adam", 3, 0.5), adaptive_by_hand("yogi", 3, 0.5)
    assert abs(adam[0][0] - yogi[0][0]) < 1e-6 and abs(adam[2][0] - yogi[2][0]) > 1e-4


def test_fedadam_on_fedprox_by_set():
    """`fedbench train --method fedprox --set mu=0.1 --set server_opt=adam --set server_lr=0.01`:
    FedProx's local steps (prox term mu (w - w^t)), then FedAdam on their mean, two rounds."""
    base = tiny_config(
        model="quadratic", num_clients=2, clients_per_round=2, local_steps=3, batch_size=1,
        lr=0.05, method="fedprox",
    )  # fmt: skip
    sets = {"mu": "0.1", "server_opt": "adam", "server_lr": "0.01"}
    cfg = validate_config(apply_overrides(base, sets))
    assert cfg.method_params == {"mu": 0.1} and cfg.server_opt == "adam"
    eng = Engine(cfg, data=quadratic_data(COEFFS_2D))
    expected = adaptive_by_hand("adam", 2, eta=0.01, mu=0.1)
    for r in (1, 2):
        eng.run_round(r)
        assert max(abs(float(eng.w[d]) - expected[r - 1][d]) for d in range(2)) < TOL, r


@pytest.mark.parametrize("method,sets", [("fedavg", []), ("fedprox", ["--set", "mu=0.1"])])
def test_fedadam_from_the_command_line(method, sets, tmp_path):
    """The issue's command, on a tiny run: no new method, the optimizer recorded in run.json."""
    import json

    r = invoke(
        "train", "--method", method, *sets, "--set", "server_opt=adam", "--set",
        "server_lr=0.01", *TINY_SETS, "--results", tmp_path, "--threads", "1",
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    (run,) = [p for p in tmp_path.iterdir() if (p / "run.json").exists()]
    meta = json.loads((run / "run.json").read_text())
    assert meta["config"]["server_opt"] == "adam" and meta["config"]["method"] == method
    assert meta["status"] == "complete"


def test_adaptive_state_restores_the_run():
    """server_m and server_v are the method's state: saved after round 1 and loaded into a
    fresh engine, round 2 is the same, bit for bit."""
    cfg = tiny_config(method="fedprox", method_params={"mu": 0.1}, server_opt="yogi")
    a, b = Engine(cfg, data=tiny_data()), Engine(cfg, data=tiny_data())
    a.run_round(1)
    state = a.method.state_dict()
    assert {"server_m", "server_v"} <= set(state)
    b.w = a.w.clone()
    b.method.load_state_dict(state)
    a.run_round(2)
    b.run_round(2)
    assert torch.equal(a.w, b.w)


# ---------------------------------------------------------------- settings and identity


def test_optimizer_names_match_the_config():
    assert set(SERVER_OPTIMIZERS) == set(config.SERVER_OPTS)
    adaptive = {n for n, c in SERVER_OPTIMIZERS.items() if issubclass(c, Adaptive)}
    assert adaptive == set(SERVER_OPTIMIZERS) - {"sgd"}


@pytest.mark.parametrize(
    "sets,message",
    [
        ({"server_opt": "rmsprop"}, "unknown server_opt .rmsprop.; choose one of: sgd, adagrad"),
        ({"server_beta1": "0.5"}, "server_beta1 applies to server_opt=adagrad | adam | yogi"),
        ({"server_eps": "0.1"}, "server_eps applies to server_opt=adagrad | adam"),
        ({"server_opt": "adam", "server_momentum": "0.9"}, "server_momentum applies to server"),
        ({"server_opt": "adagrad", "server_beta2": "0.9"}, "server_beta2 applies to server_opt"),
        ({"server_opt": "adam", "server_beta1": "1"}, r"server_beta1 must be in \[0, 1\)"),
        ({"server_opt": "yogi", "server_eps": "0"}, "server_eps must be > 0"),
    ],
)
def test_server_opt_settings_one_line_errors(sets, message):
    with pytest.raises(FedbenchError, match=message) as e:
        validate_config(apply_overrides(tiny_config(), sets))
    assert "\n" not in str(e.value)


def test_fednova_gmf_refuses_an_adaptive_server_opt():
    cfg = tiny_config(method="fednova", method_params={"gmf": 0.5}, server_opt="adam")
    with pytest.raises(FedbenchError, match="gmf and server_momentum / server_opt=adam"):
        validate_config(cfg)


def test_the_default_server_step_keeps_every_stored_run():
    """New fields at their defaults are not hashed: the default run's identity is unchanged
    (tests/test_identity_pinned.py pins it), and naming the default changes nothing."""
    cfg = build_config("default", None, {})
    explicit = apply_overrides(cfg, {"server_opt": "sgd", "server_beta1": "0.9"})
    assert config_hash(explicit) == config_hash(cfg) and run_id(explicit) == run_id(cfg)
    assert config_hash(apply_overrides(cfg, {"server_opt": "adam"})) != config_hash(cfg)


def test_a_server_optimizer_registers_like_a_method():
    """A plugin of one class adds a server_opt name (validated like the built-in ones); a
    class without a name or a taken name is one line (examples/fedexp/ is a whole one)."""
    from dataclasses import dataclass
    from typing import ClassVar

    from fedbench.methods.server_opt import ServerOpt, register_server_optimizer
    from fedbench.testing import registries_restored

    with registries_restored():

        @register_server_optimizer
        @dataclass(frozen=True)
        class Half(ServerOpt):
            name: ClassVar[str] = "half"

            def step(self, holder, w, new_w, clients=None):
                return w + 0.5 * (new_w - w)

        cfg = validate_config(apply_overrides(tiny_config(), {"server_opt": "half"}))
        assert cfg.server_opt == "half" and "half" in config.SERVER_OPTS
        with pytest.raises(FedbenchError, match="'sgd' is already registered"):
            register_server_optimizer(type("Other", (ServerOpt,), {"name": "sgd"}))
        with pytest.raises(FedbenchError, match="must subclass ServerOpt and set a name"):
            register_server_optimizer(type("Nameless", (ServerOpt,), {}))
    assert "half" not in config.SERVER_OPTS  # the sandbox put the names back
