"""FedSoftMax and FedMax: the aggregation weights by hand on stub rounds and on the quadratic."""

import math

import torch

from fedbench.methods import LocalResult, RoundContext, Setup, build_method
from methods.quadratic import COEFFS, TOL, local_gd, quad_engine


def stub_round(losses, p=None):
    losses = torch.tensor(losses, dtype=torch.float64)
    k = len(losses)
    p = (
        torch.full((k,), 1.0 / k, dtype=torch.float64)
        if p is None
        else torch.tensor(p, dtype=torch.float64)
    )
    w = torch.arange(k, dtype=torch.float64).unsqueeze(1) * torch.tensor([1.0, -2.0])
    ctx = RoundContext(
        1,
        0.1,
        torch.zeros(2, dtype=torch.float64),
        torch.arange(k),
        p,
        None,
        None,
        None,
        p,
        None,
        None,
    )
    res = LocalResult(w=w, global_w=torch.zeros(2, dtype=torch.float64), last_epoch_loss=losses)
    return ctx, res


def setup_method(name, params, n=4):
    m = build_method(name, params)
    m.setup(Setup(n, 2, torch.device("cpu"), torch.float64, None, None))
    return m


def test_fedsoftmax_weights_by_hand():
    losses = [0.3, 1.2, 0.7, 2.0]
    cases = [
        ({"T": 5.0}, None, [math.exp(5 * x) for x in losses]),
        ({"T": 20.0, "temperature": "paper"}, None, [math.exp(x / 20) for x in losses]),
        (
            {"T": 2.0, "use_p": True},
            [0.1, 0.2, 0.3, 0.4],
            [q * math.exp(2 * x) for q, x in zip([0.1, 0.2, 0.3, 0.4], losses)],
        ),
        ({"T": 1000.0}, None, None),  # exp(2000) overflows; the stable softmax does not
    ]
    for params, p, unnorm in cases:
        m = setup_method("fedsoftmax", params)
        ctx, res = stub_round(losses, p)
        new_w, rec = m.aggregate(ctx, res)
        if unnorm is None:
            expected = torch.tensor([0.0, 0.0, 0.0, 1.0], dtype=torch.float64)
        else:
            expected = torch.tensor(unnorm, dtype=torch.float64) / sum(unnorm)
        assert torch.allclose(
            torch.tensor(rec["agg_weights"], dtype=torch.float64), expected, atol=TOL, rtol=0
        )
        assert torch.allclose(new_w, expected @ res.w, atol=TOL, rtol=0)


def test_fedsoftmax_fstar_min_seen():
    m = setup_method("fedsoftmax", {"T": 3.0, "fstar": "min_seen"})
    ctx, res = stub_round([1.0, 2.0, 0.5, 0.8])
    _, rec = m.aggregate(ctx, res)  # first sight: l* = l, every gap 0
    assert torch.allclose(
        torch.tensor(rec["agg_weights"], dtype=torch.float64),
        torch.full((4,), 0.25, dtype=torch.float64),
    )
    ctx, res = stub_round([1.5, 1.0, 0.5, 1.0])  # minima now 1.0, 1.0, 0.5, 0.8
    _, rec = m.aggregate(ctx, res)
    gaps = torch.tensor([0.5, 0.0, 0.0, 0.2], dtype=torch.float64)
    assert torch.allclose(
        torch.tensor(rec["agg_weights"], dtype=torch.float64), torch.softmax(3 * gaps, 0), atol=TOL
    )


def test_fedmax_picks_top_k():
    losses = [0.3, 0.9, 0.1, 0.7]
    for k, expected in [(1, [0, 1, 0, 0]), (2, [0, 0.5, 0, 0.5]), (4, [0.25] * 4)]:
        m = setup_method("fedmax", {"k": k})
        ctx, res = stub_round(losses)
        new_w, rec = m.aggregate(ctx, res)
        exp = torch.tensor(expected, dtype=torch.float64)
        assert rec["agg_weights"] == exp.tolist()
        assert torch.allclose(new_w, exp @ res.w, atol=TOL, rtol=0)


def test_fedsoftmax_on_the_quadratic_by_hand():
    """Last-epoch loss = the loss at the start of the last step (1 sample, batch 1)."""
    lr, steps, t = 0.1, 3, 0.05
    eng = quad_engine("fedsoftmax", {"T": t}, n=3, steps=steps, lr=lr)
    rec = eng.run_round(1)
    finals, losses = {}, {}
    for c, (a, b) in enumerate(COEFFS):
        w_prev = local_gd(10.0, a, b, steps - 1, lr)
        losses[c] = a * w_prev**2 + b * w_prev
        finals[c] = local_gd(10.0, a, b, steps, lr)
    z = sum(math.exp(t * losses[c]) for c in losses)
    alpha = {c: math.exp(t * losses[c]) / z for c in losses}
    got = dict(zip(rec["clients"], rec["agg_weights"]))
    for c in alpha:
        assert abs(got[c] - alpha[c]) < TOL
    assert abs(float(eng.w) - sum(alpha[c] * finals[c] for c in alpha)) < TOL


def test_fedmax_start_loss_on_the_quadratic_by_hand():
    """loss=start: F_i(w_t) = a w_t^2 + b w_t at w_t = 10 picks device 3 (2, 3): 230."""
    eng = quad_engine("fedmax", {"k": 1, "loss": "start"}, n=3)
    rec = eng.run_round(1)
    got = dict(zip(rec["clients"], rec["agg_weights"]))
    assert got == {0: 0.0, 1: 0.0, 2: 1.0}
    assert abs(float(eng.w) - local_gd(10.0, 2.0, 3.0, 3, 0.1)) < TOL
