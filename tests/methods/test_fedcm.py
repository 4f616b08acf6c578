"""FedCM against rounds computed by hand in plain floats (weighted quadratic)."""

from methods.weighted import (
    ALL_SLOW,
    COEFFS,
    TOL,
    P,
    assert_fedavg_rounds,
    local_run,
    quad_engine,
    work,
)


def test_fedcm_two_rounds_by_hand():
    lr, alpha, eta = 0.1, 0.3, 0.8
    eng = quad_engine(
        "fedcm",
        {"alpha": alpha, "eta_g": eta},
        steps=4,
        lr=lr,
        **ALL_SLOW,
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
    assert_fedavg_rounds("fedcm", {"alpha": 1.0})
