"""Layers of k models at once, for the conv nets and LSTMs.

Conv nets run in the grouped layout: the k devices' activations are stacked along channels,
h [B, k*C, H, W], and a conv layer is one F.conv2d with groups=k (device j's input channels only
meet device j's filters). BatchNorm on that layout computes per-channel statistics over the batch
and space, i.e. per device, and GroupNorm with k*G groups normalizes each device's G groups; so a
batch of k models is one ordinary network k times wider. (The alternative, torch.func.vmap over
functional_call, is measured in fedbench/models/convnets.py's docstring.)
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def pack(x: torch.Tensor, channels_last: bool = False) -> torch.Tensor:
    """[k, B, C, H, W] -> grouped layout [B, k*C, H, W] (channels_last: stored NHWC; the
    layers keep the input's memory format)."""
    k, b = x.shape[:2]
    h = x.transpose(0, 1).reshape(b, k * x.shape[2], *x.shape[3:])
    return h.contiguous(memory_format=torch.channels_last) if channels_last else h


def unpack(h: torch.Tensor, k: int) -> torch.Tensor:
    """Grouped [B, k*C, ...] -> [k, B, C*...] (each device's features flattened like nn.Flatten)."""
    return h.reshape(h.shape[0], k, -1).transpose(0, 1)


def conv2d(h, weight, bias=None, stride: int = 1, padding: int = 0) -> torch.Tensor:
    """weight [k, O, C, kh, kw], bias [k, O] or None."""
    k, o = weight.shape[:2]
    b = None if bias is None else bias.reshape(k * o)
    return F.conv2d(h, weight.reshape(k * o, *weight.shape[2:]), b, stride, padding, groups=k)


def conv_one_channel(h, weight, bias=None, stride: int = 1, padding: int = 0) -> torch.Tensor:
    """One model's conv of one input channel, h [B, 1, H, W], weight [O, 1, kh, kw], bias [O]
    or None, as unfold + one matrix product, output stored channels-last (NHWC): oneDNN runs
    this conv (the MNIST CNN's first layer) ~15x slower than the product on this project's
    CPU."""
    o, _, kh, kw = weight.shape
    if padding:
        h = F.pad(h, (padding,) * 4)
    # [B, hh, ww, kh, kw] windows as a view, then one copy: rows in NHWC order
    win = h[:, 0].unfold(1, kh, stride).unfold(2, kw, stride)
    n, hh, ww = win.shape[:3]
    cols = win.reshape(n * hh * ww, kh * kw)
    w2 = weight.reshape(o, kh * kw).t().contiguous()  # contiguous: its gradient is one fast mm
    out = cols @ w2 if bias is None else torch.addmm(bias, cols, w2)  # [B*hh*ww, O]
    return out.view(n, hh, ww, o).permute(0, 3, 1, 2)


def batch_norm(h, weight, bias, running_mean=None, running_var=None, train: bool = True,
               momentum: float = 0.1, eps: float = 1e-5, mask=None) -> torch.Tensor:  # fmt: skip
    """BatchNorm2d of each device; weight/bias [k, C]; running_mean/var [k, C] views into the
    device buffers (updated in place in train mode, as nn.BatchNorm2d does; None: batch
    statistics only, nothing recorded). mask [k, B] bool (train mode): the real samples of each
    device's batch; padded samples are left out of its statistics (see masked_batch_norm)."""
    k, c = weight.shape
    if train and mask is not None:
        return masked_batch_norm(h, weight, bias, mask, running_mean, running_var, momentum, eps)
    if running_mean is None:
        if not train:
            raise ValueError("batch_norm in eval mode needs running statistics")
        return F.batch_norm(h, None, None, weight.reshape(-1), bias.reshape(-1), True, 0.0, eps)
    rm = running_mean.reshape(k * c).clone()  # F.batch_norm updates contiguous stats in place
    rv = running_var.reshape(k * c).clone()
    out = F.batch_norm(h, rm, rv, weight.reshape(-1), bias.reshape(-1), train, momentum, eps)
    if train:
        running_mean.copy_(rm.view(k, c))
        running_var.copy_(rv.view(k, c))
    return out


def masked_batch_norm(h, weight, bias, mask, running_mean=None, running_var=None,
                      momentum: float = 0.1, eps: float = 1e-5) -> torch.Tensor:  # fmt: skip
    """Train-mode BatchNorm2d of each device over its real samples only (mask [k, B]).

    The engine pads short batches (a device's last batch of an epoch, devices of different sizes
    in full-batch passes) to a common B with weight-0 samples; they must not enter the batch
    statistics, or a device would not normalize as nn.BatchNorm2d does on its short batch. The
    statistics are nn.BatchNorm2d's (biased variance to normalize, unbiased in running_var);
    padded samples' outputs are meaningless and get no gradient (their loss weight is 0)."""
    k, c = weight.shape
    m = mask.t().to(h.dtype).repeat_interleave(c, dim=1)[:, :, None, None]  # [B, k*C, 1, 1]
    cnt = m.sum(0).flatten() * (h.shape[2] * h.shape[3])  # values per channel
    mean = (h * m).sum((0, 2, 3)) / cnt.clamp(min=1)
    cen = h - mean[:, None, None]
    var = (cen.square() * m).sum((0, 2, 3)) / cnt.clamp(min=1)
    scale = torch.rsqrt(var + eps) * weight.reshape(-1)
    out = cen * scale[:, None, None] + bias.reshape(-1)[:, None, None]
    if running_mean is not None:
        with torch.no_grad():
            unbiased = var * cnt / (cnt - 1).clamp(min=1)
            running_mean.mul_(1 - momentum).add_(mean.detach().view(k, c), alpha=momentum)
            running_var.mul_(1 - momentum).add_(unbiased.detach().view(k, c), alpha=momentum)
    return out


def group_norm(h, groups: int, weight, bias, eps: float = 1e-5) -> torch.Tensor:
    """GroupNorm(groups, C) of each device; weight/bias [k, C]."""
    return F.group_norm(h, weight.shape[0] * groups, weight.reshape(-1), bias.reshape(-1), eps)


def linear(z, weight, bias=None) -> torch.Tensor:
    """z [k, B, in], weight [k, out, in], bias [k, out] -> [k, B, out]."""
    if bias is None:
        return torch.bmm(z, weight.transpose(1, 2))
    return torch.baddbmm(bias.unsqueeze(1), z, weight.transpose(1, 2))


def embedding(x: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
    """x [k, B, L] int64 ids, table [k, V, E] -> [k, B, L, E]: one lookup in the stacked tables."""
    k, v = table.shape[:2]
    offset = torch.arange(k, device=x.device).view(k, 1, 1) * v
    return F.embedding(x + offset, table.reshape(k * v, -1))


def lstm_layer(x, w_ih, w_hh, b_ih, b_hh) -> torch.Tensor:
    """One nn.LSTM layer (gate order i, f, g, o; zero initial state) for k models:
    x [k, B, L, I], w_ih [k, 4H, I], w_hh [k, 4H, H], biases [k, 4H] -> outputs [k, B, L, H]."""
    k, b, steps, _ = x.shape
    hid = w_hh.shape[2]
    # input projections of all time steps at once; only h @ W_hh is sequential
    xi = torch.matmul(x, w_ih.transpose(1, 2).unsqueeze(1)) + (b_ih + b_hh)[:, None, None, :]
    h = x.new_zeros(k, b, hid)
    c = x.new_zeros(k, b, hid)
    w_hh_t = w_hh.transpose(1, 2)
    outs = []
    for t in range(steps):
        gates = torch.baddbmm(xi[:, :, t], h, w_hh_t)
        i, f, g, o = gates.chunk(4, dim=2)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        h = torch.sigmoid(o) * torch.tanh(c)
        outs.append(h)
    return torch.stack(outs, 2)


def lstm_one(x, weights: list[torch.Tensor], layers: int) -> torch.Tensor:
    """One model's nn.LSTM (zero initial state, batch first) by torch's fused kernel, the one
    nn.LSTM runs: x [B, L, I], weights per layer (w_ih, w_hh, b_ih, b_hh) -> outputs [B, L, H].
    5x faster than lstm_layer's step-by-step products for one device at B = 10 on this
    project's CPU (fedbench/models/layouts.py)."""
    hid = weights[1].shape[1]
    h0 = x.new_zeros(layers, x.shape[0], hid)
    return torch.lstm(x, (h0, h0), weights, True, layers, 0.0, True, False, True)[0]
