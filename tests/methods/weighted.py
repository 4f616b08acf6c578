"""The quadratic F_i(w) = a_i w^2 + b_i w (per coordinate) where device i holds n_i copies of
its sample, so every mini-batch gradient is exact (2 a_i w + b_i) while the aggregation weights
p_i = n_i / sum n and FedDyn's alpha_i = alpha n_bar / n_i are not uniform."""

import conftest

TOL = 1e-10
# (a_i, b_i) and the number of copies n_i each device holds
COEFFS = [(1.0, -2.0), (0.5, 1.0), (0.25, 0.5)]
COUNTS = [1, 2, 3]
P = [n / sum(COUNTS) for n in COUNTS]  # aggregation weights n_i / sum n
# every device slow, with steps=4: tau_i ~ U{1..3}, so each runs 4 - tau_i + 1 of the 4 steps
ALL_SLOW = {"hetero": "fedlga", "rho": 1.0, "tau_max": 3}


def quad_engine(method, params=None, coeffs=COEFFS, counts=COUNTS, **kw):
    return conftest.quad_engine(method, params, coeffs=coeffs, counts=counts, **kw)


def assert_fedavg_rounds(method, params, rounds=3):
    """The method at these parameters trains FedAvg's global models, round after round."""
    a, b = quad_engine("fedavg"), quad_engine(method, params)
    for r in range(1, rounds + 1):
        a.run_round(r)
        b.run_round(r)
        assert abs(float(a.w) - float(b.w)) < 1e-12, f"round {r}"


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
