"""numba loops of fedbench.training.fastpath (imported only when a round takes the fast path).

Each runs a whole local round in place: w [K, D] rows, row i for steps[i] steps, step s on the
samples idx[i, s] with weights bw[i, s] (0: padding, skipped), losses[i, s] written. The update is
    w <- w - lr (g + wd w + mu (w - wg)) - lr drift     (drift only when has_drift)
computed in the dtype of w (float32 or float64), like the engine's torch step. Sums may be
reassociated (fastmath reassoc/contract, so dot products vectorize): the order of a sum's terms
differs from torch's GEMMs anyway, and no infinities or NaNs are assumed away.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

FAST = {"reassoc", "contract"}


@njit(cache=True, nogil=True)
def _update(wi, gi, wgi, di, lr, wd, mu, has_drift):
    for d in range(wi.shape[0]):
        step = gi[d]
        if wd != 0.0:
            step += wd * wi[d]
        if mu != 0.0:
            step += mu * (wi[d] - wgi[d])
        wi[d] -= lr * step
        if has_drift:
            wi[d] -= lr * di[d]


@njit(cache=True, nogil=True, fastmath=FAST)
def logreg_round(w, wg, drift, x, y, idx, bw, steps, lr, wd, mu, has_drift, losses):
    """Multinomial logistic regression: w = [W (C x F) row-major, b (C)], x [N, F]."""
    k, dim = w.shape
    n_feat = x.shape[1]
    n_cls = dim // (n_feat + 1)
    n_w = n_cls * n_feat
    bsz = idx.shape[2]
    g = np.zeros(dim, dtype=w.dtype)
    z = np.zeros(n_cls, dtype=w.dtype)
    for i in range(k):
        wi = w[i]
        di = drift[i] if has_drift else wi
        for s in range(steps[i]):
            g[:] = 0.0
            loss = w.dtype.type(0.0)
            for j in range(bsz):
                a = bw[i, s, j]
                if a == 0.0:
                    continue
                r = idx[i, s, j]
                xr = x[r]
                zmax = -np.inf
                for c in range(n_cls):
                    acc = wi[n_w + c]
                    off = c * n_feat
                    for f in range(n_feat):
                        acc += wi[off + f] * xr[f]
                    z[c] = acc
                    zmax = max(zmax, acc)
                label = y[r]
                z_label = z[label]
                tot = 0.0
                for c in range(n_cls):
                    e = math.exp(z[c] - zmax)
                    z[c] = e
                    tot += e
                loss += a * (zmax + math.log(tot) - z_label)
                scale = a / tot
                for c in range(n_cls):  # z becomes d loss / d logits: a (softmax - onehot)
                    z[c] = z[c] * scale - (a if c == label else 0.0)
                for c in range(n_cls):
                    dz = z[c]  # in the dtype of w
                    g[n_w + c] += dz
                    off = c * n_feat
                    for f in range(n_feat):
                        g[off + f] += dz * xr[f]
            losses[i, s] = loss
            _update(wi, g, wg[i], di, lr, wd, mu, has_drift)


@njit(cache=True, nogil=True, fastmath=FAST)
def quadratic_round(w, wg, drift, x, y, idx, bw, steps, lr, wd, mu, has_drift, losses):
    """BatchedQuadratic: per-sample loss sum_d a_d w_d^2 + b_d w_d, x [N, 2 dim] = (a, b)."""
    k, dim = w.shape
    bsz = idx.shape[2]
    g = np.zeros(dim, dtype=w.dtype)
    for i in range(k):
        wi = w[i]
        di = drift[i] if has_drift else wi
        for s in range(steps[i]):
            g[:] = 0.0
            loss = w.dtype.type(0.0)
            for j in range(bsz):
                a = bw[i, s, j]
                if a == 0.0:
                    continue
                xr = x[idx[i, s, j]]
                for d in range(dim):
                    loss += a * (xr[d] * wi[d] * wi[d] + xr[dim + d] * wi[d])
                    g[d] += a * (2.0 * xr[d] * wi[d] + xr[dim + d])
            losses[i, s] = loss
            _update(wi, g, wg[i], di, lr, wd, mu, has_drift)
