"""Fully connected networks: multinomial logistic regression (784->10, 60->10) and the FedLGA
MLP 784->400->ReLU->10, each layer one torch.baddbmm over the K stacked models. With a hidden
layer, sgd_steps trains a window of steps with one first-layer update GEMM (exact).

The window (BatchedMLP.sgd_steps), why it is exact: the first layer's weight after s steps of
the window is W1_s = d^s W1_0 - lr sum_{t<s} d^(s-1-t) D_t^T X_t (D_t [B, out] its output
gradients, batch weights included; d = 1 - lr wd), so its pre-activation at step s is X_s W1_s^T
= d^s X_s W1_0^T - lr sum_{t<s} d^(s-1-t) (X_s X_t^T) D_t. The window computes X W1_0^T and the
Gram X X^T of all T*B samples at once, corrects each step's forward by the small Gram product,
runs the rest of the network (first bias, upper layers) per step exactly as sgd_step, and
applies the T first-layer updates at the end as ONE GEMM with inner dimension T*B. A row that
finishes at step f (active[f] <= row) gets D_t = 0 for t >= f and decay d^f, not d^T. A constant
C1 (const's first-layer block) adds - lr sigma_s C1 to W1_s, sigma_s = sum_{t<s} d^(s-1-t): the
window computes X C1^T once as well and subtracts lr sigma_s of its step-s slice from the
pre-activation. The engine carries C1's sums from window to window instead of adding them to W1
(const_due: one row coefficient; the next window subtracts lr due X C1^T from X W1_0^T) and
settles them once a round (apply_const_due): a pass over all of W1 a round, not a window.

Cost model (FedLGA MLP, per row, B=10, n=784 inputs, h=400 hidden): per step the two
B x n x h GEMMs (forward, rank-B update) run at a third to a half of the GEMM rate with
only B rows; the window does the same FLOPs as two (T*B) x n x h GEMMs at full rate, plus
the Gram ((T*B)^2 n: T*B/h of one forward GEMM) and the corrections (~B^2 T^2 h / 2), so
the gain saturates and then falls as T grows. step_window is the T measured best:
benchmarks/mlp_window.py (1 thread, paired, 96 steps, 2-core machine at load 4-8),
median per-step/window ratio over three runs T=4 1.96-2.08x, T=8 2.34-2.61x,
T=16 2.47-2.82x, T=32 1.93-2.32x; with rows finishing inside windows (--stagger,
240 steps) T=8 2.56x, T=16 2.66x. Since the compiled steps (FedLGA-FMNIST, 1 thread, 12
rounds alternated, Intel Xeon, load ~1.2), T=8, 10, 12 against 16: AVX2 0.95x, 0.96x, 0.97x;
AVX-512 1.02x, 1.01x, 0.99x. What each method's terms cost: docs/engine.md.
"""

from __future__ import annotations

import math
from math import prod

import torch
from torch import nn

from fedbench.models.batched import BatchedModel
from fedbench.models.registry import register_model


class BatchedMLP(BatchedModel):
    # sgd_steps' window T for MLPs with a hidden layer (measured: module docstring); 1 = no window
    HIDDEN_WINDOW = 16
    # ... on an AVX2 CPU: X W1^T of 100 rows ran at 95 GFLOP/s, of 160 at 86 (AVX-512: not)
    AVX2_WINDOW = 10
    step_window: int = 1
    # a window step above the first layer's weight as one numba call (models/_mlp_steps.py)
    # where configure() found it can (a CPU model with one hidden layer); else torch operations
    _compilable: bool = False
    # sgd_steps takes the window's Gram from the engine (more["gram"], training/window_gram.py)
    window_gram: bool = False

    def __init__(self, sizes: list[int], init: str = "default"):
        self.sizes = list(sizes)
        self.init_mode = init
        if len(self.sizes) >= 3:  # logreg has no hidden layer: speed's compiled path
            self.step_window, self.window_gram = self.HIDDEN_WINDOW, True
        shapes = []
        for i, (fan_in, fan_out) in enumerate(zip(sizes[:-1], sizes[1:])):
            idx = 1 + 2 * i  # nn.Sequential(Flatten, Linear, ReLU, Linear, ...)
            shapes += [(f"{idx}.weight", (fan_out, fan_in)), (f"{idx}.bias", (fan_out,))]
        super().__init__(shapes)

    def forward(self, params: list[torch.Tensor], x: torch.Tensor) -> torch.Tensor:
        h = x.flatten(2)  # [k, B, in]
        n_layers = len(params) // 2
        for i in range(n_layers):
            weight, bias = params[2 * i], params[2 * i + 1]  # [k, out, in], [k, out]
            h = torch.baddbmm(bias.unsqueeze(1), h, weight.transpose(1, 2))
            if i < n_layers - 1:
                h = torch.relu(h)
        return h

    def _forward_backward(self, w, x, y, weight, visit, z0=None, params=None):
        """Forward, then backward layer by layer from the top; visit(i, dz, act) receives each
        layer's output gradient dz [k, B, out] and input act [k, B, in] after the gradient
        flowing further down has been computed (so visit may update layer i in place).
        z0, when given, is the first layer's pre-activation [k, B, out] (sgd_steps' window);
        params, when given, are the layers to run instead of w's (SAM's ascent point)."""
        params = self.unflatten(w) if params is None else params
        n_layers = len(params) // 2
        acts = [x.flatten(2)]  # inputs of each layer
        pre = []  # pre-activations
        h = acts[0]
        for i in range(n_layers):
            if i == 0 and z0 is not None:
                z = z0
            else:
                z = torch.baddbmm(params[2 * i + 1].unsqueeze(1), h, params[2 * i].transpose(1, 2))
            pre.append(z)
            if i < n_layers - 1:
                h = torch.relu(z)
                acts.append(h)
        logp = torch.log_softmax(pre[-1], dim=2)
        nll = -logp.gather(2, y.unsqueeze(2)).squeeze(2)  # [k, B]
        losses = (nll * weight).sum(1)
        # d loss_i / d logits = weight * (softmax - onehot)
        dz = logp.exp_()
        dz.scatter_add_(2, y.unsqueeze(2), -torch.ones_like(nll).unsqueeze(2))
        dz.mul_(weight.unsqueeze(2))
        for i in reversed(range(n_layers)):
            below = torch.bmm(dz, params[2 * i]).mul_(pre[i - 1] > 0) if i else None
            visit(i, dz, acts[i])
            dz = below
        return losses

    def loss_and_grad(self, w: torch.Tensor, x, y, weight):
        """Explicit batched backward: each weight gradient is one bmm written straight into its
        view of the flat gradient (autograd would add a copy of all D numbers per step).
        Equal to BatchedModel.loss_and_grad (autograd) to float precision, tested."""
        g = torch.empty_like(w)
        gviews = self.unflatten(g)

        def write(i, dz, act):
            torch.bmm(dz.transpose(1, 2), act, out=gviews[2 * i])
            torch.sum(dz, dim=1, out=gviews[2 * i + 1])

        losses = self._forward_backward(w, x, y, weight, write)
        return losses, g

    def sgd_step(self, w, x, y, weight, lr: float, weight_decay: float = 0.0, const=None):
        """w <- w - lr (grad + wd w + const), in place, without materialising the gradient: each
        layer's update is one baddbmm into w (const [k, D] or None: a per-row constant, e.g.
        SCAFFOLD's drift). Per step this touches w once instead of w and a [k, D]
        gradient; for the FedLGA MLP (K=10: 12.5 MB of weights) that keeps a step inside a 16 MB
        L3 cache. Same result as loss_and_grad + update (tested)."""
        params = self.unflatten(w)
        cs = self._const_blocks(const)

        def update(i, dz, act):
            w_i, b_i = params[2 * i], params[2 * i + 1]
            self._update_layer(w_i, b_i, dz, act, lr, weight_decay, cs[2 * i], cs[2 * i + 1])

        return self._forward_backward(w, x, y, weight, update)

    def _const_blocks(self, const, ka=None) -> list:
        """const's per-slot views (rows :ka), or Nones for no constant."""
        if const is None:
            return [None] * len(self.slots)
        return self.unflatten(const if ka is None else const[:ka])

    def sgd_steps(self, w, xs, ys, bws, active, lr: float, weight_decay=0.0, const=None, **more):
        """T = len(active) SGD steps w <- w - lr (g + wd w + const) in place; losses [T, k] (0 for
        inactive rows). Same as `losses[t, :ka] = sgd_step(w[:ka], xs[t, :ka], ..., const[:ka])`
        with ka = active[t] for each t (float64: to 1e-12; float32: rounding only, bounded over a
        round in the tests). const [k, D] (or None) is a per-row constant: FedProx's mu (w - wg)
        is wd + mu and const -mu wg, SCAFFOLD's drift is const (the engine's train_local).
        more: ascent = r > 0 takes g at SAM's ascent point (methods.base.LinearStep;
        _ascent_pass); const_x, const's first-layer products X C1^T of the window's samples
        [k, T*B, h], when the caller has them (training.window_const), else computed here;
        gram, the window's X X^T [k, T*B, T*B] (training.window_gram), else computed here;
        const_due [k], the constant carried over windows (_defer_const), else applied to W1 at
        the window's end. How and why it is exact, and what it gains: the module docstring."""
        T, k = len(active), active[0]
        ascent, const_x, due = more.get("ascent", 0.0), more.get("const_x"), more.get("const_due")
        if not k:
            return torch.zeros(T, 0, dtype=w.dtype, device=w.device)
        rows = torch.is_tensor(weight_decay)  # per-row decay [k] (FedDyn): the window only
        one = T == 1 and not ascent and not rows and due is None  # one step: no gain
        if len(self.sizes) < 3 or one:  # logreg: no gain either
            return super().sgd_steps(w, xs, ys, bws, active, lr, weight_decay, const)
        losses = torch.zeros(T, k, dtype=w.dtype, device=w.device)
        params = self.unflatten(w)
        w1, b1 = params[0], params[1]  # [k, h, n], [k, h]
        b = xs.shape[2]
        x_all = xs[:, :k].flatten(3).transpose(0, 1).reshape(k, T * b, -1)  # [k, T*B, n]
        p_all = torch.bmm(x_all, w1.transpose(1, 2))  # X W1_0^T  [k, T*B, h]
        gram = more.get("gram")  # [k, T*B, T*B], the engine's (training/window_gram.py)
        if gram is None:
            gram = torch.bmm(x_all, x_all.transpose(1, 2))
        d_all = torch.empty_like(p_all)  # D_t, zero where a row is inactive
        for s, ka in enumerate(active):
            if ka < k:
                d_all[ka:, s * b : (s + 1) * b] = 0
        decay = 1.0 - lr * weight_decay
        c1, q_all, sigma = None, None, self._const_sums(decay, T)
        if const is not None:
            c1 = self._const_blocks(const)[0]
            q_all = const_x if const_x is not None else self.const_products(const, x_all)
        window = (active, b, b1, p_all, gram, d_all, q_all, sigma, lr, weight_decay)
        run = None
        if not ascent:
            arrays = (p_all, d_all, q_all, self._q_coef(q_all, sigma, lr, k, w, decay, due))
            run = self._compiled_upper(w, ys, bws, arrays, losses, lr, weight_decay, const)
        if run is None and due is not None:  # W1_0 as stored lacks - lr due C1 (_defer_const)
            p_all.addcmul_(q_all, due.view(k, 1, 1), value=-lr)
        if run is not None:
            self._compiled_steps(run, *window)
        else:
            self._torch_steps(w, xs, ys, bws, losses, const, ascent, *window)
        self._window_update(w1, d_all, x_all, active, lr, weight_decay)
        if c1 is not None and due is None:  # W1 -= lr sigma_f C1 (f: each row's steps)
            w1.addcmul_(c1, self._row_sums(sigma, active, w1).view(k, 1, 1), value=-lr)
        elif c1 is not None:
            self._defer_const(due, sigma, decay, active, w1)
        return losses

    def _torch_steps(self, w, xs, ys, bws, losses, const, ascent, *window) -> None:
        """The window's steps through torch operations (sgd_steps)."""
        active, b, b1, p_all, gram, d_all, q_all, sigma, lr, weight_decay = window
        params, rows = self.unflatten(w), torch.is_tensor(weight_decay)
        for s, ka in enumerate(active):
            cur = slice(s * b, (s + 1) * b)
            z0 = self._window_preactivation(s, ka, b, b1, p_all, gram, d_all, lr, weight_decay)
            if q_all is not None and s:
                if rows:
                    z0.sub_(q_all[:ka, cur] * (lr * sigma[s][:ka]).view(ka, 1, 1))
                else:
                    z0.sub_(q_all[:ka, cur], alpha=lr * sigma[s])
            cs = self._const_blocks(const, ka)
            wd = weight_decay[:ka] if rows else weight_decay
            update = self._window_visit(params, d_all, ka, cur, lr, wd, cs)
            step_args = (w[:ka], xs[s, :ka], ys[s, :ka], bws[s, :ka], update, z0)
            if ascent:
                losses[s, :ka] = self._ascent_pass(*step_args, gram[:ka, cur, cur], ascent)
            else:
                losses[s, :ka] = self._forward_backward(*step_args)

    def _compiled_steps(self, run, *window) -> None:
        """The window's steps: above W1 one numba call a step (run: _compiled_upper), below it
        one GEMM, the Gram correction into p_all's rows of the step, its beta a shared decay's
        power d^s (the Gram's powers, and p_all's for a decay per row: _decay_window, once)."""
        active, b, b1, p_all, gram, d_all, q_all, sigma, lr, weight_decay = window
        decay = 1.0 - lr * weight_decay
        rows = torch.is_tensor(decay)
        if rows or decay != 1.0:
            self._decay_window(p_all if rows else None, gram, decay, len(active), b)
        for s, ka in enumerate(active):
            if s:
                cur, beta = slice(s * b, (s + 1) * b), 1.0 if rows else decay**s
                g, d = gram[:ka, cur, : s * b], d_all[:ka, : s * b]
                p_all[:ka, cur].baddbmm_(g, d, beta=beta, alpha=-lr)
            run(s, ka)

    @staticmethod
    def _decay_window(p_all, gram, decay, T: int, b: int) -> None:
        """The Gram's block (s, t < s) *= d^(s-1-t) and p_all's step s (unless None) *= d^s,
        per row where the decay is [k] (FedDyn): _window_preactivation's powers, once."""
        k = gram.shape[0]
        d = decay.view(k, 1) if torch.is_tensor(decay) else gram.new_full((k, 1), decay)
        steps = torch.arange(T, dtype=gram.dtype, device=gram.device)
        if p_all is not None:
            p_all.view(k, T, b, -1).mul_((d**steps).view(k, T, 1, 1))
        lag = (steps.view(T, 1) - 1 - steps.view(1, T)).clamp(min=0)
        gram.view(k, T, b, T, b).mul_((d.view(k, 1, 1) ** lag).view(k, T, 1, T, 1))

    def configure(self, device: torch.device, threads: int) -> None:
        """Compiled window steps for a CPU model with one hidden layer where numba loads
        (Engine.fastpath, FEDBENCH_FASTPATH=0, turns them off); the window's length T."""
        self._compilable = device.type == "cpu" and len(self.sizes) == 3 and _numba_loads()
        if self.step_window > 1:
            self.step_window = self.window_for(device)

    def window_for(self, device: torch.device) -> int:
        """AVX2_WINDOW on an AVX2 CPU (torch's kernel level; ATEN_CPU_CAPABILITY=avx2 sets it),
        else HIDDEN_WINDOW: a function of the device, so one device sums in one order."""
        avx2 = device.type == "cpu" and torch.backends.cpu.get_cpu_capability() == "AVX2"
        return self.AVX2_WINDOW if avx2 else self.HIDDEN_WINDOW

    @property
    def layout_name(self) -> str:
        how = "batched, compiled steps" if self._compiled() else "batched"
        return f"{how}, window {self.step_window}" if self.step_window > 1 else how

    def _compiled(self) -> bool:
        return self.compiled_steps and self._compilable

    def _compiled_upper(self, w, ys, bws, arrays, losses, lr, weight_decay, const):
        """run(s, ka): window step s of rows :ka above W1 as one numba call
        (models/_mlp_steps.py), or None where the torch operations run (compiled_steps off, a
        dtype or layout numba would not take as the torch path's arrays)."""
        if not (self._compiled() and w.device.type == "cpu"):
            return None
        if w.dtype not in (torch.float32, torch.float64):
            return None
        if not all(t.is_contiguous() for t in (w, *arrays) if t is not None):
            return None
        from fedbench.models import _mlp_steps

        args = (w, ys, bws, arrays, losses, lr, weight_decay, const)
        return _mlp_steps.step_runner(self.sizes, *args)

    @staticmethod
    def _q_coef(q_all, sigma, lr: float, k: int, like, decay, due) -> torch.Tensor | None:
        """lr (sigma_s + d^s due_r) of each step s and row r [T+1, k]: the constant's term's
        coefficient, with what earlier windows carried (due [k] or None: _defer_const), which
        the torch steps read from p_all instead (a pass over it a window)."""
        if q_all is None:
            return None
        if torch.is_tensor(sigma[-1]):  # per row (FedDyn's decay); sigma[0] is 0.0
            coef = torch.stack([torch.as_tensor(x, dtype=like.dtype).expand(k) for x in sigma])
        else:
            coef = torch.tensor(sigma, dtype=like.dtype).view(-1, 1).expand(-1, k)
        if due is not None:
            d = decay.view(1, k) if torch.is_tensor(decay) else like.new_tensor(decay)
            steps = torch.arange(len(sigma), dtype=like.dtype).view(-1, 1)
            coef = coef + d.to(like.dtype) ** steps * due.view(1, k).to(like.dtype)
        return (lr * coef).contiguous()

    def _row_sums(self, sigma, active, like) -> torch.Tensor:
        """sigma_f of each row [k], f the steps row r ran in this window (sigma_f per row when
        the decay is)."""
        f = self._row_steps(active, active[0])
        if torch.is_tensor(sigma[-1]):
            return torch.stack([sigma[fr][r] for r, fr in enumerate(f)])
        return torch.tensor([sigma[fr] for fr in f], dtype=like.dtype, device=like.device)

    def _defer_const(self, due, sigma, decay, active, w1) -> None:
        """due <- d^f due + sigma_f per row (f: the row's steps in this window): the constant
        this window would subtract from W1 (a pass over all of W1 a window), carried instead;
        W1 as stored lacks - lr due C1, which apply_const_due subtracts once a round."""
        k = active[0]
        f = torch.tensor(self._row_steps(active, k), dtype=due.dtype, device=due.device)
        d = decay[:k] if torch.is_tensor(decay) else decay
        due[:k] = due[:k] * d**f + self._row_sums(sigma, active, w1)

    def apply_const_due(self, w, const, due, lr: float) -> None:
        """W1 -= lr due C1 per row: settles what sgd_steps' windows carried (const_due)."""
        w1, c1 = self.unflatten(w)[0], self._const_blocks(const)[0]
        w1.addcmul_(c1, due.view(-1, 1, 1), value=-lr)

    def _window_visit(self, params, d_all, ka, cur, lr, wd, cs):
        """The update a window step's backward visits each layer with: the first layer's output
        gradient D_t kept in d_all (its weight waits for the window's end), the rest applied."""

        def update(i, dz, act):
            if i == 0:
                d_all[:ka, cur] = dz
                self._update_layer(None, params[1][:ka], dz, act, lr, wd, None, cs[1])
            else:
                wk = [p[:ka] for p in params[2 * i : 2 * i + 2]]
                ck = cs[2 * i : 2 * i + 2]
                self._update_layer(wk[0], wk[1], dz, act, lr, wd, ck[0], ck[1])

        return update

    def const_products(self, const, x) -> torch.Tensor:
        """X C1^T [k, m, h] of inputs x [k, m, ...] and const's first-layer block C1."""
        c1 = self._const_blocks(const)[0]
        return torch.bmm(x.flatten(2), c1.transpose(1, 2))

    def _ascent_pass(self, w, x, y, weight, visit, z0, gram_ss, radius: float):
        """One SAM step of the window: the loss gradient h at w (nothing updated), e = radius h /
        (|h| + 1e-7) per row, then the pass at w + e whose gradients visit applies to w. The
        first layer's block of h is D^T X, never formed: |D^T X|^2 = sum (X X^T) * (D D^T),
        and w + e's first pre-activation is z0 + c (sum D + X X^T D) (c = radius / (|h| +
        1e-7)); the upper layers' blocks are small and formed. Returns the losses at w."""
        grads = {}

        def keep(i, dz, act):
            grads[i] = (dz, act)

        losses = self._forward_backward(w, x, y, weight, keep, z0)
        params, dz0 = self.unflatten(w), grads[0][0]
        gb = dz0.sum(1)
        sq = (torch.bmm(dz0, dz0.transpose(1, 2)) * gram_ss).sum((1, 2)) + gb.square().sum(1)
        blocks = []
        for i in range(1, len(params) // 2):
            dz, act = grads[i]
            blocks += [torch.bmm(dz.transpose(1, 2), act), dz.sum(1)]
            sq += blocks[-2].square().sum((1, 2)) + blocks[-1].square().sum(1)
        c = radius / (sq.sqrt() + 1e-7)  # [k]
        z_up = torch.baddbmm(gb.unsqueeze(1), gram_ss, dz0).mul_(c.view(-1, 1, 1)).add_(z0)
        up = [p.addcmul(c.view(-1, *[1] * (p.dim() - 1)), g) for p, g in zip(params[2:], blocks)]
        self._forward_backward(w, x, y, weight, visit, z_up, [None, None, *up])
        return losses

    @staticmethod
    def _row_steps(active: list[int], k: int) -> list[int]:
        """Steps of the window each of the k rows runs (active: the rows of each step)."""
        return [sum(a > r for a in active) for r in range(k)]

    @staticmethod
    def _const_sums(decay: float, T: int) -> list[float]:
        """sigma_s = sum_{t<s} decay^(s-1-t) for s = 0..T: how many times (decayed) a constant
        has been subtracted after s steps (s when decay is 1)."""
        sigma = [0.0]
        for _ in range(T):
            sigma.append(decay * sigma[-1] + 1.0)
        return sigma

    @staticmethod
    def _window_preactivation(s, ka, b, b1, p_all, gram, d_all, lr, weight_decay):
        """First-layer pre-activation of the window's step s, rows :ka:
        d^s X_s W1_0^T + b1 - lr sum_{t<s} d^(s-1-t) (X_s X_t^T) D_t."""
        decay = 1.0 - lr * weight_decay
        cur = slice(s * b, (s + 1) * b)
        if torch.is_tensor(decay):  # per row [k] (FedDyn's alpha_i)
            return BatchedMLP._row_preactivation(s, ka, b, b1, p_all, gram, d_all, lr, decay)
        z0 = torch.add(b1[:ka].unsqueeze(1), p_all[:ka, cur], alpha=decay**s)
        if s:
            g = gram[:ka, cur, : s * b]
            if weight_decay:  # step t's update has decayed s-1-t times by step s
                pw = decay ** torch.arange(s - 1, -1, -1, dtype=g.dtype, device=g.device)
                g = (g.view(ka, b, s, b) * pw.view(1, 1, s, 1)).view(ka, b, s * b)
            z0.baddbmm_(g, d_all[:ka, : s * b], alpha=-lr)
        return z0

    @staticmethod
    def _row_preactivation(s, ka, b, b1, p_all, gram, d_all, lr, decay):
        """_window_preactivation with a per-row decay [k]."""
        cur, dk = slice(s * b, (s + 1) * b), decay[:ka]
        z0 = torch.addcmul(b1[:ka].unsqueeze(1), p_all[:ka, cur], (dk**s).view(ka, 1, 1))
        if s:
            pw = dk.view(ka, 1) ** torch.arange(s - 1, -1, -1, dtype=dk.dtype, device=dk.device)
            g = (gram[:ka, cur, : s * b].view(ka, b, s, b) * pw.view(ka, 1, s, 1)).view(ka, b, -1)
            z0.baddbmm_(g, d_all[:ka, : s * b], alpha=-lr)
        return z0

    @staticmethod
    def _window_update(w1, d_all, x_all, active, lr, weight_decay):
        """W1 -= lr D_all^T X_all (one GEMM, inner dimension T*B); with weight decay, row r
        that ran f_r steps decays W1_0 f_r times and step t's D_t f_r-1-t times."""
        beta = 1.0
        if torch.is_tensor(weight_decay) or weight_decay:
            k, T = w1.shape[0], len(active)
            decay = 1.0 - lr * weight_decay
            decay = decay.view(k, 1) if torch.is_tensor(decay) else decay
            steps = BatchedMLP._row_steps(active, k)
            f = torch.tensor(steps, dtype=w1.dtype, device=w1.device).unsqueeze(1)  # [k, 1]
            ts = torch.arange(T, dtype=w1.dtype, device=w1.device)
            coef = torch.where(ts < f, decay ** (f - 1 - ts), 0.0)  # [k, T]
            d_all.view(k, T, -1, d_all.shape[2]).mul_(coef.view(k, T, 1, 1))
            per_row = torch.is_tensor(decay) or len(set(steps)) > 1
            if per_row and w1.device.type == "cpu":
                # a decay per row: each row's GEMM takes it as its beta (a pass of its own over
                # W1, [k, h, n], cost a tenth of FedDyn's round; on a GPU the betas would be
                # read from the device every window, so the pass stays there)
                betas = (decay**f).view(k).tolist()
                d_t = d_all.transpose(1, 2)
                for r in range(k):
                    w1[r].addmm_(d_t[r], x_all[r], beta=betas[r], alpha=-lr)
                return
            if per_row:
                w1.mul_((decay**f).view(k, 1, 1))
            else:
                beta = decay ** steps[0]  # one decay for all rows: the GEMM's beta
        w1.baddbmm_(d_all.transpose(1, 2), x_all, beta=beta, alpha=-lr)

    @staticmethod
    def _update_layer(weight_i, bias_i, dz, act, lr, weight_decay, c_weight=None, c_bias=None):
        """One layer's SGD update from its output gradient dz and input act, in place
        (weight_i None: the bias only); c_weight, c_bias: its blocks of a per-row constant."""
        decay = 1.0 - lr * weight_decay
        rows = torch.is_tensor(decay)  # per row [k] (FedDyn's alpha_i)
        if weight_i is not None:
            if rows:
                weight_i.mul_(decay.view(-1, 1, 1)).baddbmm_(dz.transpose(1, 2), act, alpha=-lr)
            else:
                weight_i.baddbmm_(dz.transpose(1, 2), act, beta=decay, alpha=-lr)
            if c_weight is not None:
                weight_i.sub_(c_weight, alpha=lr)
        if rows:
            bias_i.mul_(decay.view(-1, 1))
        elif weight_decay:
            bias_i.mul_(decay)
        bias_i.sub_(dz.sum(1), alpha=lr)
        if c_bias is not None:
            bias_i.sub_(c_bias, alpha=lr)

    def init(self, gen: torch.Generator, dtype=torch.float32) -> torch.Tensor:
        if self.init_mode == "zeros":  # FedProx's TF model starts from zeros
            return torch.zeros(self.dim, dtype=dtype)
        parts = []
        for s in self.slots:
            # nn.Linear's default: U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for weight and bias
            fan_in = self.sizes[int(s.name.split(".")[0]) // 2]
            bound = 1.0 / math.sqrt(fan_in)
            parts.append((torch.rand(s.numel, generator=gen, dtype=torch.float64) * 2 - 1) * bound)
        return torch.cat(parts).to(dtype)

    def module(self) -> nn.Module:
        layers: list[nn.Module] = [nn.Flatten()]
        for i, (a, b) in enumerate(zip(self.sizes[:-1], self.sizes[1:])):
            if i:
                layers.append(nn.ReLU())
            layers.append(nn.Linear(a, b))
        return nn.Sequential(*layers)


def _numba_loads() -> bool:
    """Whether models/_mlp_steps.py imports (numba present, its cache folder writable)."""
    try:
        from fedbench.models import _mlp_steps  # noqa: F401
    except (ImportError, RuntimeError):
        return False
    return True


@register_model("logreg")
def _logreg(cfg, input_shape, num_classes, info, embeddings) -> BatchedMLP:
    return BatchedMLP([prod(input_shape), num_classes], init=cfg.init)


@register_model("mlp")
def _mlp(cfg, input_shape, num_classes, info, embeddings) -> BatchedMLP:
    return BatchedMLP([prod(input_shape), cfg.hidden, num_classes], init=cfg.init)
