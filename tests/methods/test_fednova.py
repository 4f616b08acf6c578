"""FedNova against rounds computed by hand in plain floats (weighted quadratic)."""

import pytest

from methods.weighted import ALL_SLOW, COEFFS, TOL, P, local_run, quad_engine, work


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
        **ALL_SLOW,
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
