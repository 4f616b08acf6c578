"""FedDyn against rounds computed by hand in plain floats (weighted quadratic)."""

from methods.weighted import ALL_SLOW, COEFFS, COUNTS, TOL, local_run, quad_engine, work


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
    eng = quad_engine("feddyn", {"alpha": alpha}, steps=4, **ALL_SLOW, weight_decay=wd)
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
