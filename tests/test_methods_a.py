"""FedNova, SCAFFOLD, FedDyn, FedCM and MimeLite against rounds computed by hand in plain floats.

The model is the quadratic F_i(w) = a_i w^2 + b_i w (per coordinate). Device i holds n_i copies of
its sample, so every mini-batch gradient is exact (2 a_i w + b_i) while the aggregation weights
p_i = n_i / sum n and FedDyn's alpha_i = alpha n_bar / n_i are not uniform.
"""

import math

import conftest
import pytest
import torch
from conftest import tiny_config, tiny_data

from fedbench.errors import FedbenchError
from fedbench.methods import METHODS, method_params
from fedbench.training.engine import Engine

TOL = 1e-10
# (a_i, b_i) and the number of copies n_i each device holds
COEFFS = [(1.0, -2.0), (0.5, 1.0), (0.25, 0.5)]
COUNTS = [1, 2, 3]
P = [n / sum(COUNTS) for n in COUNTS]  # aggregation weights n_i / sum n


def quad_engine(method, params=None, coeffs=COEFFS, counts=COUNTS, **kw):
    return conftest.quad_engine(method, params, coeffs=coeffs, counts=counts, **kw)


def local_run(w0, a, b, steps, lr, direction=lambda g, w: g, rho=0.0, wd=0.0):
    """Local SGD from w0 on a w^2 + b w: d = direction(g, w) with g = 2 a w + b + wd w,
    heavy-ball buf = rho buf + d, w -= lr buf."""
    w, buf = w0, 0.0
    for _ in range(steps):
        g = 2 * a * w + b + wd * w
        buf = rho * buf + direction(g, w)
        w = w - lr * buf
    return w


def work(eng, r):
    """{device: local steps} of round r, as the engine plans it."""
    plan = eng.plan_round(r)
    return dict(zip(plan.clients.tolist(), plan.steps.tolist()))


def run_fedavg(w0, steps, lr, devices, weights):
    return sum(weights[i] * local_run(w0, *COEFFS[i], steps[i], lr) for i in devices)


# ---------------------------------------------------------------- FedNova


def test_fednova_equal_steps_is_fedavg():
    a, b = quad_engine("fedavg"), quad_engine("fednova", {"mu": 0.0})
    for r in (1, 2):
        a.run_round(r)
        rec = b.run_round(r)
        assert abs(float(a.w) - float(b.w)) < 1e-12
        assert abs(rec["tau_eff"] - 3) < 1e-12 and rec["a_mean"] == 3


def test_fednova_unequal_steps_by_hand():
    """Plain SGD: a_i = S_i, tau_eff = sum p_i S_i, w = w - sum p_i (tau_eff/S_i)(w - w_i)."""
    eng = quad_engine("fednova", steps=5, hetero="fedlga", rho=1.0, tau_max=4)
    s = work(eng, 1)
    assert len(set(s.values())) > 1, "the test needs devices with different work"
    rec = eng.run_round(1)
    tau = sum(P[i] * s[i] for i in range(3))
    expected = 10.0 - sum(
        P[i] * tau / s[i] * (10.0 - local_run(10.0, *COEFFS[i], s[i], 0.1)) for i in range(3)
    )
    assert abs(float(eng.w) - expected) < TOL
    assert abs(rec["tau_eff"] - tau) < TOL
    assert abs(rec["a_mean"] - sum(s.values()) / 3) < TOL
    # FedAvg would differ: the normalisation matters here
    fedavg = sum(P[i] * local_run(10.0, *COEFFS[i], s[i], 0.1) for i in range(3))
    assert abs(expected - fedavg) > 1e-3


@pytest.mark.parametrize("rho,mu", [(0.5, 0.0), (0.0, 0.2), (0.5, 0.2)])
@pytest.mark.parametrize("tau_eff", ["paper", "code"])
def test_fednova_momentum_and_prox_by_hand(rho, mu, tau_eff):
    lr = 0.1
    eng = quad_engine(
        "fednova",
        {"mu": mu, "tau_eff": tau_eff},
        steps=4,
        lr=lr,
        hetero="fedlga",
        rho=1.0,
        tau_max=3,
        momentum=rho,
        weight_decay=0.01,
    )
    s = work(eng, 1)
    assert len(set(s.values())) > 1
    rec = eng.run_round(1)
    x = lr * mu

    def a_of(n):  # the normaliser after n steps
        if mu == 0:  # closed form of c <- rho c + 1, a += c
            return sum((1 - rho**k) / (1 - rho) for k in range(1, n + 1))
        if rho == 0:  # closed form of a <- a (1 - lr mu) + 1
            return sum((1 - x) ** k for k in range(n))
        a, c = 0.0, 0.0  # both, as JYWa/FedNova applies them one after the other
        for _ in range(n):
            c = rho * c + 1
            a = (a + c) * (1 - x) + 1
        return a

    a = [a_of(s[i]) for i in range(3)]
    tau = sum(P[i] * (s[i] if tau_eff == "code" and mu else a[i]) for i in range(3))

    def prox(g, w):
        return g + mu * (w - 10.0)

    locals_ = [local_run(10.0, *COEFFS[i], s[i], lr, prox, rho=rho, wd=0.01) for i in range(3)]
    expected = 10.0 - sum(P[i] * tau / a[i] * (10.0 - locals_[i]) for i in range(3))
    assert abs(float(eng.w) - expected) < TOL
    assert abs(rec["tau_eff"] - tau) < TOL
    assert abs(rec["a_mean"] - sum(a) / 3) < TOL


def test_fednova_momentum_normaliser_two_steps():
    """S = 2, rho = 0.5, mu = 0: c = 1, a = 1; c = 1.5, a = 2.5 (JYWa/FedNova's recurrence)."""
    eng = quad_engine("fednova", steps=2, momentum=0.5)
    assert eng.run_round(1)["a_mean"] == 2.5


def test_fednova_server_momentum_two_rounds():
    lr, gmf = 0.1, 0.5
    eng = quad_engine("fednova", {"gmf": gmf}, steps=3, lr=lr)
    w, buf = 10.0, 0.0
    for r in (1, 2):
        eng.run_round(r)
        d = sum(P[i] * (w - local_run(w, *COEFFS[i], 3, lr)) for i in range(3))
        buf = gmf * buf + d / lr
        w = w - lr * buf
        assert abs(float(eng.w) - w) < TOL


# ---------------------------------------------------------------- SCAFFOLD


def test_scaffold_two_rounds_by_hand_partial_device():
    """N = 3, K = 2, one device does partial work; c += (1/N) sum_S (c_i+ - c_i)."""
    lr, n = 0.1, 3
    eng = quad_engine("scaffold", steps=4, lr=lr, k=2, hetero="fedlga", rho=0.5, tau_max=3)
    w, c, ci = 10.0, 0.0, [0.0, 0.0, 0.0]
    partial = False
    for r in (1, 2):
        s = work(eng, r)
        partial |= len(set(s.values())) > 1
        eng.run_round(r)
        ys, new_ci = {}, list(ci)
        for i in s:
            corr = c - ci[i]  # frozen during the round
            ys[i] = local_run(w, *COEFFS[i], s[i], lr, lambda g, w_, corr=corr: g + corr)
            new_ci[i] = ci[i] - c + (w - ys[i]) / (s[i] * lr)
        tot = sum(COUNTS[i] for i in s)
        w = w + sum(COUNTS[i] / tot * (ys[i] - w) for i in s)
        c = c + sum(new_ci[i] - ci[i] for i in s) / n
        ci = new_ci
        assert abs(float(eng.w) - w) < TOL
        assert abs(float(eng.method.c) - c) < TOL
        assert max(abs(float(eng.method.c_i[i]) - ci[i]) for i in range(n)) < TOL
    assert partial, "the test needs a device with partial work"


def test_scaffold_two_dims_eta_g_uniform():
    """2-d w (coordinates independent), eta_g = 0.5, aggregation=uniform (the paper's mean)."""
    coeffs = [([1.0, 0.5], [-2.0, 1.0]), ([0.5, 2.0], [1.0, 0.0])]
    lr, eta = 0.05, 0.5
    eng = quad_engine(
        "scaffold", {"eta_g": eta}, coeffs=coeffs, counts=[1, 3], lr=lr, aggregation="uniform"
    )
    w, c, ci = [10.0, 10.0], [0.0, 0.0], [[0.0, 0.0], [0.0, 0.0]]
    for r in (1, 2):
        eng.run_round(r)
        for d in range(2):
            ys, new = [], []
            for i in range(2):
                a, b = coeffs[i][0][d], coeffs[i][1][d]
                y = local_run(w[d], a, b, 3, lr, lambda g, w_, i=i, d=d: g - ci[i][d] + c[d])
                ys.append(y)
                new.append(ci[i][d] - c[d] + (w[d] - y) / (3 * lr))
            w[d] = w[d] + eta * sum(0.5 * (y - w[d]) for y in ys)
            c[d] = c[d] + sum(new[i] - ci[i][d] for i in range(2)) / 2
            for i in range(2):
                ci[i][d] = new[i]
        assert torch.allclose(eng.w, torch.tensor(w, dtype=torch.float64), atol=TOL, rtol=0)
        assert torch.allclose(eng.method.c, torch.tensor(c, dtype=torch.float64), atol=TOL, rtol=0)
        got_ci = eng.method.c_i
        assert torch.allclose(got_ci, torch.tensor(ci, dtype=torch.float64), atol=TOL, rtol=0)


def test_scaffold_reduces_to_fedavg():
    # round 1: all control variates are zero
    a, b = quad_engine("fedavg"), quad_engine("scaffold")
    a.run_round(1)
    b.run_round(1)
    assert abs(float(a.w) - float(b.w)) < 1e-12
    # identical devices, all sampled: c_i = c after every round, so no correction ever
    same = [(1.0, -2.0)] * 3
    a, b = quad_engine("fedavg", coeffs=same), quad_engine("scaffold", coeffs=same)
    for r in (1, 2, 3):
        a.run_round(r)
        b.run_round(r)
        assert abs(float(a.w) - float(b.w)) < 1e-12


# ---------------------------------------------------------------- FedDyn


def test_feddyn_two_rounds_by_hand():
    """N = 3, K = 2: alpha_i = alpha n_bar / n_i; server adds the mean of L over all N."""
    lr, alpha, n = 0.1, 0.1, 3
    n_bar = sum(COUNTS) / n
    eng = quad_engine("feddyn", {"alpha": alpha}, steps=3, lr=lr, k=2)
    w, L = 10.0, [0.0, 0.0, 0.0]
    for r in (1, 2):
        s = work(eng, r)
        eng.run_round(r)
        thetas = {}
        for i in s:
            ai = alpha * n_bar / COUNTS[i]
            lin = ai * (L[i] - w)  # alpha_i (L_i - theta^t), fixed during the round
            thetas[i] = local_run(
                w, *COEFFS[i], s[i], lr, lambda g, th, ai=ai, lin=lin: g + lin + ai * th
            )
        L = [L[i] + (thetas[i] - w if i in s else 0.0) for i in range(n)]
        w = sum(thetas.values()) / len(s) + sum(L) / n
        assert abs(float(eng.w) - w) < TOL
        assert max(abs(float(eng.method.L[i]) - L[i]) for i in range(n)) < TOL
    assert len(s) == 2 and any(v != 0 for v in L)


def test_feddyn_with_weight_decay_and_partial_work():
    lr, alpha, wd = 0.1, 0.01, 0.05
    eng = quad_engine(
        "feddyn", {"alpha": alpha}, steps=4, hetero="fedlga", rho=1.0, tau_max=3, weight_decay=wd
    )
    s = work(eng, 1)
    assert len(set(s.values())) > 1
    eng.run_round(1)
    n_bar = sum(COUNTS) / 3
    # round 1: L_i = 0, so the FedDyn term is alpha_i (theta - theta^0)
    alphas = [alpha * n_bar / n_i for n_i in COUNTS]
    thetas = [
        local_run(10.0, *COEFFS[i], s[i], lr, lambda g, th, i=i: g + alphas[i] * (th - 10.0), wd=wd)
        for i in range(3)
    ]
    L = [t - 10.0 for t in thetas]
    expected = sum(thetas) / 3 + sum(L) / 3
    assert abs(float(eng.w) - expected) < TOL


# ---------------------------------------------------------------- FedCM


def test_fedcm_two_rounds_by_hand():
    lr, alpha, eta = 0.1, 0.3, 0.8
    eng = quad_engine(
        "fedcm",
        {"alpha": alpha, "eta_g": eta},
        steps=4,
        lr=lr,
        hetero="fedlga",
        rho=1.0,
        tau_max=3,
    )
    w, delta = 10.0, 0.0
    partial = False
    for r in (1, 2):
        s = work(eng, r)
        partial |= len(set(s.values())) > 1
        eng.run_round(r)
        xs = [
            local_run(w, *COEFFS[i], s[i], lr, lambda g, x, d=delta: alpha * g + (1 - alpha) * d)
            for i in range(3)
        ]
        delta = sum(P[i] * (w - xs[i]) / (lr * s[i]) for i in range(3))
        w = w - eta * sum(P[i] * (w - xs[i]) for i in range(3))
        assert abs(float(eng.w) - w) < TOL
        assert abs(float(eng.method.delta) - delta) < TOL
    assert partial


def test_fedcm_alpha_one_is_fedavg():
    a, b = quad_engine("fedavg"), quad_engine("fedcm", {"alpha": 1.0})
    for r in (1, 2, 3):
        a.run_round(r)
        b.run_round(r)
        assert abs(float(a.w) - float(b.w)) < 1e-12


# ---------------------------------------------------------------- MimeLite


@pytest.mark.parametrize("damped", [True, False])
def test_mimelite_two_rounds_by_hand(damped):
    """N = 3, K = 2; m from the n_i-weighted full-batch gradient at x^t of the sampled devices."""
    lr, beta, eta = 0.1, 0.3, 0.9
    eng = quad_engine(
        "mimelite", {"beta": beta, "eta_s": eta, "damped": damped}, lr=lr, k=2, weight_decay=0.02
    )
    scale = 1 - beta if damped else 1.0
    w, m = 10.0, 0.0
    for r in (1, 2):
        s = work(eng, r)
        rec = eng.run_round(r)
        ys = {
            i: local_run(w, *COEFFS[i], 3, lr, lambda g, y, m=m: scale * g + beta * m, wd=0.02)
            for i in s
        }
        tot = sum(COUNTS[i] for i in s)
        g_bar = sum(COUNTS[i] / tot * (2 * COEFFS[i][0] * w + COEFFS[i][1]) for i in s) + 0.02 * w
        w = w - eta * sum(COUNTS[i] / tot * (w - ys[i]) for i in s)
        m = scale * g_bar + beta * m
        assert abs(float(eng.w) - w) < TOL
        assert abs(float(eng.method.m) - m) < TOL
        assert rec["extra_grad_samples"] == tot and rec["extra_grad_passes"] == 2


def test_mimelite_beta_zero_is_fedavg():
    a, b = quad_engine("fedavg"), quad_engine("mimelite", {"beta": 0.0})
    for r in (1, 2, 3):
        a.run_round(r)
        b.run_round(r)
        assert abs(float(a.w) - float(b.w)) < 1e-12


# ---------------------------------------------------------------- all five


NEW = ["fednova", "scaffold", "feddyn", "fedcm", "mimelite"]


@pytest.mark.parametrize("method", NEW)
def test_registered_with_help(method):
    import dataclasses

    cls = METHODS[method]
    assert cls.name == method
    for f in dataclasses.fields(cls.Params):
        assert f.metadata.get("help"), f"{method}.{f.name} has no help"


@pytest.mark.parametrize(
    "method,params,message",
    [
        ("fednova", {"mu": -0.1}, "fednova: mu must be >= 0"),
        ("fednova", {"tau_eff": "steps"}, "fednova: tau_eff must be one of: paper, code"),
        ("fednova", {"gmf": 1.0}, "fednova: gmf must be in"),
        ("scaffold", {"eta_g": 0.0}, "scaffold: eta_g must be > 0"),
        ("feddyn", {"alpha": -0.01}, "feddyn: alpha must be > 0"),
        ("feddyn", {"alpha": 0.0}, "feddyn: alpha must be > 0"),
        ("fedcm", {"alpha": 1.5}, r"fedcm: alpha must be in \[0, 1\]"),
        ("fedcm", {"alpha": -0.1}, r"fedcm: alpha must be in \[0, 1\]"),
        ("fedcm", {"eta_g": -1.0}, "fedcm: eta_g must be > 0"),
        ("mimelite", {"beta": 1.2}, r"mimelite: beta must be in \[0, 1\]"),
        ("mimelite", {"eta_s": 0}, "mimelite: eta_s must be > 0"),
        ("mimelite", {"damped": "yes"}, "mimelite: parameter damped expects bool"),
        ("scaffold", {"c": 5}, "unknown parameter 'c' for method scaffold"),
    ],
)
def test_bad_params_one_line(method, params, message):
    with pytest.raises(FedbenchError, match=message) as e:
        method_params(method, params)
    assert "\n" not in str(e.value)


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
        hetero="fedlga",
        rho=0.7,
        tau_max=2,
        momentum=0.5,
        weight_decay=1e-3,
    )
    eng = Engine(cfg, data=tiny_data())
    for r in (1, 2):
        rec = eng.run_round(r)
        assert math.isfinite(rec["local_loss"])
    ev = eng.eval_record()
    assert math.isfinite(ev["test_loss"]) and torch.isfinite(eng.w).all()
