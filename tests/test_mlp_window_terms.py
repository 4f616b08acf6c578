"""The MLP window with a per-row constant (sgd_steps' const): w <- w - lr (g + wd w + const),
FedProx's proximal term and SCAFFOLD's drift, against single steps and the engine's per-step
path."""

from __future__ import annotations

import pytest
import torch
from conftest import PARTIAL_WORK, tiny_config, tiny_data
from test_mlp_window import active_at, make_steps, run_per_step, run_windows

from fedbench.models.batched import BatchedModel
from fedbench.models.mlp import BatchedMLP
from fedbench.training.engine import Engine

F64 = dict(dtype=torch.float64)


def start_and_const(model, k, dtype, scale=0.05):
    gen = torch.Generator().manual_seed(2)
    w0 = model.init(torch.Generator().manual_seed(1), dtype).expand(k, -1).clone()
    w0 += 0.01 * torch.randn(w0.shape, generator=gen, dtype=dtype)
    const = scale * torch.randn(w0.shape, generator=gen, dtype=dtype)
    return w0, const


@pytest.mark.parametrize("window", [2, 5, 16])
@pytest.mark.parametrize("wd", [0.0, 0.3])
@pytest.mark.parametrize("sizes", [[30, 20, 10], [12, 16, 8, 5]])
def test_window_with_const_equals_per_step_float64(sizes, wd, window):
    """float64, to 1e-12: a random per-row constant, rows finishing mid-window (staggered step
    counts), padded samples, weight decay (wd lr = 0.03: sigma_s's decayed sums matter)."""
    model = BatchedMLP(sizes)
    k, steps, lr = 6, 37, 0.1
    w0, const = start_and_const(model, k, torch.float64)
    xs, ys, bws, n_steps = make_steps(sizes, k, steps)
    w_ref, l_ref = run_per_step(model, w0, xs, ys, bws, n_steps, lr, wd, const)
    w_win, l_win = run_windows(model, w0, xs, ys, bws, n_steps, lr, wd, window, const)
    w_noc, _ = run_windows(model, w0, xs, ys, bws, n_steps, lr, wd, window, 0 * const)
    assert (w_ref - w_noc).abs().max() > 1e-2  # the constant moved the weights
    torch.testing.assert_close(w_win, w_ref, rtol=0, atol=1e-12)
    torch.testing.assert_close(l_win, l_ref, rtol=0, atol=1e-12)


def test_fused_step_with_const_is_autograd_step():
    """Hand-checkable: one step of a 1-hidden-layer MLP with a constant, fused (sgd_step) and
    windowed (sgd_steps over 3 steps), equals w - lr (g + wd w + c) with g from autograd
    (BatchedModel.loss_and_grad) at every step."""
    model = BatchedMLP([5, 4, 3])
    f64 = dict(dtype=torch.float64)
    gen = torch.Generator().manual_seed(4)
    w0 = torch.randn(2, model.dim, generator=gen, **f64)
    c = torch.randn(2, model.dim, generator=gen, **f64)
    xs = torch.randn(3, 2, 2, 5, generator=gen, **f64)
    ys = torch.randint(0, 3, (3, 2, 2), generator=gen)
    bws = torch.full((3, 2, 2), 0.5, **f64)
    lr, wd = 0.2, 0.1

    def autograd_step(v, t):
        _, g = BatchedModel.loss_and_grad(model, v, xs[t], ys[t], bws[t])
        return v - lr * (g + wd * v + c)

    w = w0.clone()
    model.sgd_step(w, xs[0], ys[0], bws[0], lr, wd, const=c)
    torch.testing.assert_close(w, autograd_step(w0, 0), rtol=0, atol=1e-14)
    w, ref = w0.clone(), w0.clone()
    model.sgd_steps(w, xs, ys, bws, [2, 2, 2], lr, wd, const=c)
    for t in range(3):
        ref = autograd_step(ref, t)
    torch.testing.assert_close(w, ref, rtol=0, atol=1e-13)


def test_base_sgd_steps_const_is_step_then_subtract():
    """The generic loop (logreg, any model): each step, then w -= lr const, bit for bit."""
    model = BatchedMLP([6, 3])
    g = torch.Generator().manual_seed(0)
    w0 = torch.randn(4, model.dim, generator=g, dtype=torch.float64)
    c = torch.randn(4, model.dim, generator=g, dtype=torch.float64)
    xs = torch.randn(3, 4, 5, 6, generator=g, dtype=torch.float64)
    ys = torch.randint(0, 3, (3, 4, 5), generator=g)
    bws = torch.full((3, 4, 5), 0.2, dtype=torch.float64)
    active = [4, 3, 1]
    w, v = w0.clone(), w0.clone()
    model.sgd_steps(w, xs, ys, bws, active, 0.1, 0.01, c)
    for t, ka in enumerate(active):
        model.sgd_step(v[:ka], xs[t, :ka], ys[t, :ka], bws[t, :ka], 0.1, 0.01)
        v[:ka].sub_(c[:ka], alpha=0.1)
    assert torch.equal(w, v)


@pytest.mark.parametrize("window", [1, 3, 16])
@pytest.mark.parametrize("wd", [0.0, 0.3])
def test_window_carried_const_settled_once_equals_per_step_float64(wd, window):
    """float64, to 1e-12: the windows carry the constant's first-layer sums in const_due (W1
    is not touched by it until apply_const_due, once at the end), with staggered rows, padding,
    weight decay and single-step windows; the first layer lacks exactly - lr due C1 before."""
    model = BatchedMLP([30, 20, 10])
    k, steps, lr = 6, 37, 0.1
    w0, const = start_and_const(model, k, torch.float64)
    xs, ys, bws, n_steps = make_steps([30, 20, 10], k, steps)
    w_ref, l_ref = run_per_step(model, w0, xs, ys, bws, n_steps, lr, wd, const)
    w, losses, due = w0.clone(), torch.zeros(steps, k, dtype=torch.float64), torch.zeros(k, **F64)
    for s0 in range(0, steps, window):
        active = active_at(n_steps, s0, min(s0 + window, steps))
        ka, sl = active[0], slice(s0, s0 + len(active))
        args = (w[:ka], xs[sl, :ka], ys[sl, :ka], bws[sl, :ka], active, lr, wd, const[:ka])
        losses[sl, :ka] = model.sgd_steps(*args, const_due=due[:ka])
    assert (due > 0).all()
    unsettled = w.clone()
    model.apply_const_due(w, const, due, lr)
    c1 = model.unflatten(const)[0]
    torch.testing.assert_close(model.unflatten(w - unsettled)[0], -lr * due.view(-1, 1, 1) * c1)
    torch.testing.assert_close(w, w_ref, rtol=0, atol=1e-12)
    torch.testing.assert_close(losses, l_ref, rtol=0, atol=1e-12)


ENGINE_CASES = [
    ("fedprox", {"mu": 0.1}),
    ("fednova", {"mu": 0.1}),
    ("scaffold", {}),
    ("fedavg", {}),
    ("fedcm", {"alpha": 0.3}),  # LinearStep scale 0.3: SGD at lr 0.3 lr, the pull / 0.3
    ("mimelite", {"beta": 0.4}),
    ("mimelite", {"beta": 0.4, "damped": False}),
]


@pytest.mark.parametrize("window", [3, 16])
@pytest.mark.parametrize("method,params", ENGINE_CASES)
def test_engine_windows_equal_per_step_path(method, params, window, monkeypatch):
    """float64, to 1e-12 over 3 rounds with weight decay and FedLGA partial work: the engine
    with windows (FedProx / FedNova mu, SCAFFOLD's drift as sgd_steps' const) equals the engine
    with step_window 1 (FedProx and FedNova through method.local_step per step, SCAFFOLD
    through sgd_step and the drift). SCAFFOLD's corrections c - c_i are nonzero after round 1."""
    cfg = tiny_config(
        method=method,
        method_params=params,
        **PARTIAL_WORK,
        weight_decay=0.01,
        hidden=7,
    )
    data = tiny_data(sizes=(7, 12, 5, 9))
    windowed, ref = Engine(cfg, data=data), Engine(cfg, data=data)
    windowed.model.step_window, ref.model.step_window = window, 1
    calls = []
    real = windowed.model.sgd_steps
    monkeypatch.setattr(
        windowed.model, "sgd_steps", lambda *a, **kw: calls.append(a[-1]) or real(*a, **kw)
    )
    partial = 0
    for r in range(1, 4):
        partial += int((windowed.plan_round(r).tau > 1).sum())
        rec_w, rec_r = windowed.run_round(r), ref.run_round(r)
        torch.testing.assert_close(windowed.w, ref.w, rtol=0, atol=1e-12)
        assert rec_w["local_loss"] == pytest.approx(rec_r["local_loss"], abs=1e-12)
        assert rec_w["grad_evals"] == rec_r["grad_evals"]
    assert partial > 0, "the test needs partial-work devices"
    assert calls, "the window path was not taken"
    if method == "fedavg":
        assert all(c is None for c in calls)  # plain SGD: no constant, as before
    else:
        assert any(c is not None and c.abs().max() > 0 for c in calls)
    if method == "scaffold":
        assert windowed.method.c_i.abs().max() > 0
    if method in ("fedcm", "mimelite"):  # the pull (Delta_t, m) is nonzero after round 1
        assert any(c is not None and c.abs().max() > 0 for c in calls)


def test_window_with_const_float32_round():
    """float32, a FedLGA-FMNIST-shaped round with FedProx's term (784-400-10, K=10, B=10,
    lr 0.01, mu 0.1: wd 0.1 and const -mu wg), 160 steps on the longest device, rows finishing
    at different steps, T = step_window, against the float32 per-step reference. As in the
    plain-SGD round (test_mlp_window), a hidden unit within rounding of 0 may switch its ReLU
    and that row drifts apart. Measured (seed 0; seed 1): the per-step float32 path ends
    2.2e-4 (1.8e-4) from float64, the window the same; window vs per-step weights 5.5e-5
    (1.3e-4), per-step losses 1.4e-4 (6.7e-4), summed loss 0 (4.0e-7) relative. Bound: weights
    within 1e-3 (the round moves them by up to 0.015), losses 5e-3, summed loss 5e-6 relative."""
    sizes, k, steps, lr, mu = [784, 400, 10], 10, 160, 0.01, 0.1
    model = BatchedMLP(sizes)
    w0 = model.init(torch.Generator().manual_seed(0), torch.float32).expand(k, -1).clone()
    const = (-mu * w0[0]).expand(k, -1).contiguous()
    xs, ys, bws, n_steps = make_steps(sizes, k, steps, dtype=torch.float32)
    w_ref, l_ref = run_per_step(model, w0, xs, ys, bws, n_steps, lr, mu, const)
    w_win, l_win = run_windows(model, w0, xs, ys, bws, n_steps, lr, mu, model.step_window, const)
    assert (w_ref - w0).abs().max() > 1e-3
    assert (w_win - w_ref).abs().max() <= 1e-3
    assert (l_win - l_ref).abs().max() <= 5e-3
    assert abs(l_win.sum() - l_ref.sum()) <= 5e-6 * l_ref.sum()


def test_engine_settles_the_carried_const_once_a_round(monkeypatch):
    """The engine's window path hands the windows a const_due and settles it once a round
    (one pass over the first layer, not one a window), for a method with a constant."""
    cfg = tiny_config(method="fedprox", method_params={"mu": 0.1}, **PARTIAL_WORK, hidden=7)
    eng = Engine(cfg, data=tiny_data(sizes=(7, 12, 5, 9)))
    eng.model.step_window = 3
    settled, real = [], eng.model.apply_const_due
    monkeypatch.setattr(
        eng.model,
        "apply_const_due",
        lambda w, c, due, lr: settled.append(due.clone()) or real(w, c, due, lr),
    )
    for r in range(1, 3):
        eng.run_round(r)
    assert len(settled) == 2 and all((d > 0).all() for d in settled)
