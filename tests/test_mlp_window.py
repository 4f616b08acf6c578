"""BatchedMLP.sgd_steps (the MLP window) against T calls of BatchedMLP.sgd_step."""

from __future__ import annotations

import pytest
import torch

from fedbench.models.mlp import BatchedMLP


def make_steps(sizes, k, steps, b=10, seed=0, dtype=torch.float64):
    """Inputs [S, k, B, n], labels, batch weights (rows with a short last batch padded with
    weight 0) and each row's step count (non-increasing, rows finishing at different steps)."""
    gen = torch.Generator().manual_seed(seed)
    xs = torch.rand(steps, k, b, sizes[0], generator=gen, dtype=dtype)
    ys = torch.randint(0, sizes[-1], (steps, k, b), generator=gen)
    bws = torch.full((steps, k, b), 1.0 / b, dtype=dtype)
    bws[:, 1::2, 7:] = 0.0  # padded samples
    bws[:, 1::2, :7] = 1.0 / 7
    n_steps = torch.linspace(steps, max(1, steps // 3), k).round().long().tolist()
    return xs, ys, bws, n_steps


def active_at(n_steps, s0, s1):
    return [sum(n > s for n in n_steps) for s in range(s0, s1)]


def run_per_step(model, w, xs, ys, bws, n_steps, lr, wd, const=None):
    """One sgd_step call a step on the rows still active; a constant term const [K, D] (the
    LinearStep's) subtracted after each step."""
    w = w.clone()
    losses = torch.zeros(xs.shape[0], w.shape[0], dtype=w.dtype)
    for s, ka in enumerate(active_at(n_steps, 0, xs.shape[0])):
        losses[s, :ka] = model.sgd_step(w[:ka], xs[s, :ka], ys[s, :ka], bws[s, :ka], lr, wd)
        if const is not None:
            w[:ka].sub_(const[:ka], alpha=lr)
    return w, losses


def run_windows(model, w, xs, ys, bws, n_steps, lr, wd, window, const=None):
    """The round cut into windows of `window` steps, each one sgd_steps call on the rows still
    active at its first step (as the engine does), with the constant term const [K, D] if any."""
    w = w.clone()
    losses = torch.zeros(xs.shape[0], w.shape[0], dtype=w.dtype)
    for s0 in range(0, xs.shape[0], window):
        s1 = min(s0 + window, xs.shape[0])
        active = active_at(n_steps, s0, s1)
        k = active[0]
        if not k:
            break
        sl, c = slice(s0, s1), None if const is None else const[:k]
        losses[sl, :k] = model.sgd_steps(
            w[:k], xs[sl, :k], ys[sl, :k], bws[sl, :k], active, lr, wd, c
        )
    return w, losses


@pytest.mark.parametrize("window", [1, 2, 5, 8, 16])
@pytest.mark.parametrize("wd", [0.0, 0.3])
@pytest.mark.parametrize("sizes", [[30, 20, 10], [12, 16, 8, 5]])
def test_window_equals_per_step_float64(sizes, wd, window):
    """float64, to 1e-12: several T, rows finishing mid-window, padded samples, weight decay
    (exact, not a fallback; wd * lr = 0.03 makes its powers matter), a deeper MLP (only the first
    layer is windowed)."""
    model = BatchedMLP(sizes)
    k, steps, lr = 6, 37, 0.1
    w0 = model.init(torch.Generator().manual_seed(1), torch.float64).expand(k, -1).clone()
    w0 += 0.01 * torch.randn(w0.shape, generator=torch.Generator().manual_seed(2), dtype=w0.dtype)
    xs, ys, bws, n_steps = make_steps(sizes, k, steps)
    w_ref, l_ref = run_per_step(model, w0, xs, ys, bws, n_steps, lr, wd)
    w_win, l_win = run_windows(model, w0, xs, ys, bws, n_steps, lr, wd, window)
    assert (w_ref - w0).abs().max() > 1e-3  # the round moved the weights
    torch.testing.assert_close(w_win, w_ref, rtol=0, atol=1e-12)
    torch.testing.assert_close(l_win, l_ref, rtol=0, atol=1e-12)


def test_window_image_inputs_and_empty_tail():
    """Inputs shaped as images [T, k, B, 1, 5, 6], rows ending inside the window down to none
    active at its last steps (their losses 0), weight decay: equal to sgd_step per step."""
    model = BatchedMLP([30, 20, 10])
    f64 = dict(dtype=torch.float64)
    w = model.init(torch.Generator().manual_seed(0), torch.float64).expand(3, -1).clone()
    w_ref = w.clone()
    gen = torch.Generator().manual_seed(3)
    xs = torch.rand(4, 3, 5, 1, 5, 6, generator=gen, **f64)
    ys = torch.randint(0, 10, (4, 3, 5), generator=gen)
    bws = torch.full((4, 3, 5), 0.2, **f64)
    active = [3, 2, 0, 0]
    losses = model.sgd_steps(w, xs, ys, bws, active, 0.1, 0.01)
    l_ref = torch.zeros(4, 3, **f64)
    for t, ka in enumerate(active):
        l_ref[t, :ka] = model.sgd_step(w_ref[:ka], xs[t, :ka], ys[t, :ka], bws[t, :ka], 0.1, 0.01)
    torch.testing.assert_close(w, w_ref, rtol=0, atol=1e-12)
    torch.testing.assert_close(losses, l_ref, rtol=0, atol=1e-12)


def test_window_hand_computed():
    """784-400-10 in miniature, 1-1-2, two 1-sample steps in one window, worked by hand (float64,
    lr 1, label 0): x0 = 1, x1 = 2, W1 = 1, b1 = 0, W2 = [1, -1], b2 = 0.
    Step 0: z1 = h = 1, logits [1, -1], p = [s, 1-s] with s = e / (e + 1/e), dz2 = [s-1, 1-s],
    D_0 = dz2 . W2 = 2(s-1); then W2 = [2-s, s-2], b2 = [1-s, s-1], b1 = -D_0 (per step) and
    W1 = 1 - D_0 x0 (applied by the window at its end).
    Step 1: z1 = x1 W1_0 + b1 - lr (x1 x0) D_0 = 2 - 3 D_0 > 0, logits = W2 z1 + b2,
    D_1 = (p - [1, 0]) . W2; at the end W1 = 1 - D_0 x0 - D_1 x1, b1 = -D_0 - D_1."""
    model = BatchedMLP([1, 1, 2])
    f64 = dict(dtype=torch.float64)
    w = torch.tensor([[1.0, 0.0, 1.0, -1.0, 0.0, 0.0]], **f64)  # W1, b1, W2, b2
    xs = torch.tensor([1.0, 2.0], **f64).view(2, 1, 1, 1)
    ys = torch.zeros(2, 1, 1, dtype=torch.long)
    bws = torch.ones(2, 1, 1, **f64)
    e = torch.tensor(1.0, **f64).exp()
    s = e / (e + 1 / e)
    d0 = 2 * (s - 1)
    w2, b2 = torch.stack([2 - s, s - 2]), torch.stack([1 - s, s - 1])
    z1 = 2 - 3 * d0
    p = (w2 * z1 + b2).softmax(0)
    d1 = (p[0] - 1) * w2[0] + p[1] * w2[1]
    losses = model.sgd_steps(w, xs, ys, bws, [1, 1], 1.0)
    torch.testing.assert_close(losses[:, 0], torch.stack([-s.log(), -p[0].log()]))
    torch.testing.assert_close(w[0, :2], torch.stack([1 - d0 - 2 * d1, -d0 - d1]))
    torch.testing.assert_close(w[0, 2:4], w2 - (p - torch.tensor([1.0, 0.0], **f64)) * z1)


def test_logreg_and_window_one_are_per_step():
    """No hidden layer: step_window is 1 and sgd_steps is the per-step loop, bit for bit."""
    assert BatchedMLP([60, 10]).step_window == 1
    assert BatchedMLP([784, 400, 10]).step_window == BatchedMLP.HIDDEN_WINDOW > 1
    model = BatchedMLP([20, 5])
    k, steps = 4, 9
    w0 = model.init(torch.Generator().manual_seed(0), torch.float32).expand(k, -1).clone()
    xs, ys, bws, n_steps = make_steps([20, 5], k, steps, dtype=torch.float32)
    w_ref, l_ref = run_per_step(model, w0, xs, ys, bws, n_steps, 0.05, 0.0)
    w_win, l_win = run_windows(model, w0, xs, ys, bws, n_steps, 0.05, 0.0, 4)
    assert torch.equal(w_win, w_ref) and torch.equal(l_win, l_ref)


def test_window_float32_fedlga_round():
    """float32 over a whole FedLGA-FMNIST-shaped round (784-400-10, K=10, B=10, lr 0.01, 600
    steps on the longest device, rows finishing at different steps), window T = step_window.
    The window differs from the per-step engine by rounding, and by what rounding causes: a
    hidden unit whose pre-activation is within rounding of 0 may switch its ReLU the other way,
    and that row's later steps drift apart. Measured on this round (seed 0; seed 1): the
    per-step float32 engine ends 9.1e-4 (7.6e-4) from float64, the window at T=8 1.7e-4
    (8.8e-8), at T=16 3.9e-6 (8.7e-8); window vs per-step 9.1e-4 (7.6e-4), per-step losses
    2.4e-3 (1.3e-3) apart, the round's summed loss 3.2e-7 relative. Bound: max |w_window -
    w_step| <= 3e-3 (the largest weight is 0.06; the round moves weights by up to 0.017),
    per-step losses within 5e-3, the round's summed loss within 5e-6 relative."""
    sizes, k, steps, lr = [784, 400, 10], 10, 600, 0.01
    model = BatchedMLP(sizes)
    w0 = model.init(torch.Generator().manual_seed(0), torch.float32).expand(k, -1).clone()
    xs, ys, bws, n_steps = make_steps(sizes, k, steps, dtype=torch.float32)
    w_ref, l_ref = run_per_step(model, w0, xs, ys, bws, n_steps, lr, 0.0)
    w_win, l_win = run_windows(model, w0, xs, ys, bws, n_steps, lr, 0.0, model.step_window)
    assert (w_ref - w0).abs().max() > 1e-2
    assert (w_win - w_ref).abs().max() <= 3e-3
    assert (l_win - l_ref).abs().max() <= 5e-3
    assert abs(l_win.sum() - l_ref.sum()) <= 5e-6 * l_ref.sum()
