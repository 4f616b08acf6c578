"""numba kernel of BatchedMLP's window step above the first layer's weight (imported only where
the window runs compiled: a CPU model with one hidden layer, models/mlp.py).

Each window step, after the first layer's pre-activation z0 [k, B, h] (bias and the window's
Gram corrections included, computed by torch), ran ~25 small torch operations: ReLU, the output
layer, log-softmax and its loss, the backward, the output layer's and both biases' updates, and
the copy of the first layer's output gradient into the window's D. A step of the FedLGA MLP is
~2.5 MFLOP over its 10 rows: in dispatch it cost several times that (a third of its engine
round). Here one call does all of it, row by row, in the order torch does (the sums inside a
dot product may be reassociated: fastmath reassoc/contract, so they vectorize).

Per row r (d = its decay 1 - lr wd, c_* its constant's blocks, all updates in place in w):
    a = relu(z0), logits = b2 + a W2^T, loss = sum_b bw_b nll_b,
    dz2 = bw (softmax - onehot), dz1 = (dz2 W2) * (z0 > 0)      (W2 before its update)
    W2 <- d W2 - lr dz2^T a - lr c_W2,  b2 <- d b2 - lr sum_b dz2 - lr c_b2,
    b1 <- d b1 - lr sum_b dz1 - lr c_b1,  D[r, rows of this step] = dz1
"""

from __future__ import annotations

import numpy as np
import torch
from numba import njit

FAST = {"reassoc", "contract"}


def step_runner(sizes, w, ys, bws, window, losses, lr: float, weight_decay, const):
    """run(s, ka): upper_step for step s of the window (BatchedMLP._compiled_steps), over numpy
    views of its torch tensors: w [k, D], ys and bws [T, k, B], losses [T, k], const [k, D] or
    None, and window = (p_all, d_all, q_all, q_coef): the pre-activations [k, T*B, h] (Gram
    corrections in, b1 not), D [k, T*B, h], X C1^T [k, T*B, h] or None and its coefficient a
    step and row [T, k] (lr sigma_s). The decay 1 - lr wd is the torch path's (_update_layer:
    a [k] tensor for FedDyn, else a float)."""
    n, h, nc = sizes
    o_b1 = h * n
    o_w2, o_b2 = o_b1 + h, o_b1 + h + nc * h
    decay = 1.0 - lr * weight_decay
    if not torch.is_tensor(decay):
        decay = torch.full((w.shape[0],), decay, dtype=w.dtype)
    p_all, d_all, q_all, q_coef = window
    wn, pn, dn, ln, yn, bn = (t.numpy() for t in (w, p_all, d_all, losses, ys, bws))
    cn = const.numpy() if const is not None else wn[:0, :0]
    qn = q_all.numpy() if q_all is not None else pn[:0]
    qc = q_coef.numpy() if q_all is not None else wn[:1, :0]
    dec = decay.to(w.dtype).contiguous().numpy()
    lr_t = dec.dtype.type(lr)  # every sum in the arrays' dtype
    b = d_all.shape[1] // losses.shape[0]

    def run(s: int, ka: int) -> None:
        upper_step(pn, qn, qc[min(s, len(qc) - 1)], wn, o_w2, o_b2, o_b1, dn, s * b,
                   yn[s, :ka], bn[s, :ka], lr_t, dec, cn, ln[s, :ka])  # fmt: skip

    return run


@njit(cache=True, nogil=True, fastmath=FAST)
def upper_step(z, q, q_coef, w, o_w2, o_b2, o_b1, d_all, row0, y, bw, lr, decay, const, losses):
    """One window step of rows :ka = len(losses) (module docstring). z [k, T*B, h] holds the
    first layer's pre-activations without b1: this step's rows from row0 get b1 and
    - q_coef[r] q (q [k, T*B, h], a constant's X C1^T, or [0, ., .]: none) added here, in place;
    w [k, D] the flat rows (W2 at o_w2, b2 at o_b2, b1 at o_b1), d_all [k, T*B, h] the window's
    D, y [ka, B] labels, bw [ka, B] batch weights, decay [ka], const [k, D] or [0, 0] (none);
    losses [ka] written. lr has the arrays' dtype, so every sum runs in it, as torch's. Blocks
    are taken as 2-D arrays and inner loops run along their contiguous rows of h numbers (they
    vectorize: 1-D slices or offsets into w ran 2-5x slower)."""
    ka, nb, h = len(losses), y.shape[1], z.shape[2]
    nc = (o_b2 - o_w2) // h
    zero = z.dtype.type(0)
    act = np.empty((nb, h), z.dtype)
    dz2 = np.empty((nb, nc), z.dtype)
    for r in range(ka):
        w2 = w[r, o_w2:o_b2].reshape((nc, h))
        zr = z[r, row0 : row0 + nb]
        b1 = w[r, o_b1 : o_b1 + h]
        for b in range(nb):
            for j in range(h):
                zr[b, j] += b1[j]
        if q.shape[0]:
            _minus(zr, q[r, row0 : row0 + nb], q_coef[r])
        for b in range(nb):
            for j in range(h):
                act[b, j] = zr[b, j] if zr[b, j] > zero else zero
        losses[r] = _output_layer(w2, w[r, o_b2 : o_b2 + nc], act, y[r], bw[r], dz2)
        dz1 = d_all[r, row0 : row0 + nb]
        _first_layer_grad(w2, zr, dz1, dz2)
        _update(w2, w[r, o_b2 : o_b2 + nc], w[r, o_b1 : o_b1 + h], act, dz2, dz1, lr, decay[r])
        if const.shape[0]:  # 2-D blocks, as the updates': offsets into w do not vectorize
            _minus(w2, const[r, o_w2:o_b2].reshape((nc, h)), lr)
            _minus(
                w[r, o_b2 : o_b2 + nc].reshape((1, nc)),
                const[r, o_b2 : o_b2 + nc].reshape((1, nc)),
                lr,
            )
            _minus(
                w[r, o_b1 : o_b1 + h].reshape((1, h)), const[r, o_b1 : o_b1 + h].reshape((1, h)), lr
            )


@njit(cache=True, nogil=True, fastmath=FAST)
def _minus(a, c, lr):
    """a -= lr c, elementwise over 2-D blocks (a constant's term of a layer's update)."""
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            a[i, j] -= lr * c[i, j]


@njit(cache=True, nogil=True, fastmath=FAST)
def _output_layer(w2, b2, act, yr, bwr, dz2):
    """logits = b2 + act W2^T; the weighted loss; dz2 = bw (softmax - onehot), in torch's
    order (softmax, minus the one-hot, times the weight; the softmax as exp / sum, one exp a
    logit where torch's log-softmax then exp takes two)."""
    nb, h = act.shape
    nc = dz2.shape[1]
    zero = act.dtype.type(0)
    loss = zero
    e = np.empty(nc, act.dtype)
    for b in range(nb):
        for c in range(nc):
            s = zero
            for j in range(h):
                s += act[b, j] * w2[c, j]
            dz2[b, c] = b2[c] + s
        top = dz2[b, 0]
        for c in range(1, nc):
            top = max(top, dz2[b, c])
        tot = zero
        for c in range(nc):
            e[c] = np.exp(dz2[b, c] - top)
            tot += e[c]
        wb = bwr[b]
        loss += (top + np.log(tot) - dz2[b, yr[b]]) * wb
        for c in range(nc):
            dz2[b, c] = e[c] / tot
        dz2[b, yr[b]] -= act.dtype.type(1)
        for c in range(nc):
            dz2[b, c] *= wb
    return loss


@njit(cache=True, nogil=True, fastmath=FAST)
def _first_layer_grad(w2, z0r, out, dz2):
    """out [B, h] = (dz2 W2) * (z0 > 0): the first layer's output gradient (W2 before its
    update)."""
    nb, h = out.shape
    nc = dz2.shape[1]
    zero = out.dtype.type(0)
    for b in range(nb):
        for j in range(h):
            out[b, j] = zero
        for c in range(nc):
            g = dz2[b, c]
            for j in range(h):
                out[b, j] += g * w2[c, j]
        for j in range(h):
            if not z0r[b, j] > zero:
                out[b, j] = zero


@njit(cache=True, nogil=True, fastmath=FAST)
def _update(w2, b2, b1, act, dz2, dz1, lr, d):
    """W2 <- d W2 - lr dz2^T act, b2 <- d b2 - lr sum dz2, b1 <- d b1 - lr sum dz1."""
    nb, h = act.shape
    nc = dz2.shape[1]
    grad = np.empty(h, act.dtype)
    zero = act.dtype.type(0)
    for c in range(nc):
        s = zero
        for j in range(h):
            grad[j] = zero
        for b in range(nb):
            g = dz2[b, c]
            s += g
            for j in range(h):
                grad[j] += g * act[b, j]
        for j in range(h):
            w2[c, j] = d * w2[c, j] - lr * grad[j]
        b2[c] = d * b2[c] - lr * s
    for j in range(h):
        grad[j] = zero
    for b in range(nb):
        for j in range(h):
            grad[j] += dz1[b, j]
    for j in range(h):
        b1[j] = d * b1[j] - lr * grad[j]
