"""One sample per device, exact gradients 2aw + b, float64: F_1(w) = w^2 - 2w,
F_2(w) = 0.5 w^2 + w, F_3(w) = 2 w^2 + 3 w; the first n devices train, all of them each round."""

import conftest

TOL = 1e-10


COEFFS = [(1.0, -2.0), (0.5, 1.0), (2.0, 3.0)]


def quad_engine(method, params=None, n=2, coeffs=COEFFS, **kw):
    return conftest.quad_engine(method, params, coeffs=coeffs[:n], validate=True, **kw)


def local_gd(w0, a, b, steps, lr, mu=0.0):
    w = w0
    for _ in range(steps):
        w = w - lr * (2 * a * w + b + mu * (w - w0))
    return w


def find_round(eng, cond, max_r=200):
    for r in range(1, max_r):
        if cond(eng.plan_round(r)):
            return r
    raise AssertionError("no round satisfies the condition")


def units_of(eng, r):
    plan = eng.plan_round(r)
    return dict(zip(plan.clients.tolist(), plan.units.tolist())), plan
