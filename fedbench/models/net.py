"""NetModel: a BatchedModel laid out from an nn.Module (conv nets, LSTMs).

The slots are the module's parameters (named as in its state_dict), the buffer slots its
persistent float buffers (BatchNorm's running_mean/running_var; num_batches_tracked is not kept:
it only matters for BatchNorm with momentum=None; non-persistent buffers, such as frozen GloVe
vectors shared by all devices, are no slots). Subclasses give module() and a batched
run(p, x, b, train, mask) where p maps slot names to [k, *shape] tensors. Gradients come from
autograd over per-slot leaves (BatchedModel.loss_and_grad's scheme).

Models whose train-mode output couples the samples of a batch (BatchNorm: batch_stats = True)
get mask [k, B] (the real, weight > 0, samples) when a batch has padding, so that padded
samples stay out of the statistics.

How the k devices run is the model's Layout (fedbench/models/layouts.py): all k as one grouped
network, or device by device; the layers read it through pack() and conv().
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from fedbench.models import layers as L
from fedbench.models.batched import BatchedModel
from fedbench.models.layouts import GROUPED, Layout, choose_layout


class NetModel(BatchedModel):
    batch_stats: bool = False  # train-mode outputs depend on the whole batch (BatchNorm)
    family: str = ""  # the row of layouts.CHOICES this model's layout is chosen from
    layout: Layout = GROUPED

    def __init__(self):
        m = self.module()
        params = [(n, tuple(p.shape)) for n, p in m.named_parameters()]
        state = m.state_dict(keep_vars=True)
        bufs = [
            (n, tuple(b.shape))
            for n, b in m.named_buffers()
            if b.is_floating_point() and n in state
        ]
        super().__init__(params, bufs)
        self._init_buffers = self.buffers_from_module(m).double()

    # ---- to implement
    def module(self) -> nn.Module:
        raise NotImplementedError

    def run(self, p: dict, x: torch.Tensor, b: dict | None, train: bool, mask=None):
        """Logits [k, B, C] from params p (name -> [k, *shape]) and buffers b (name -> [k, ...]
        views to update in place in train mode; None: no buffers); mask [k, B] bool or None
        (all samples real), used by batch_stats models only."""
        raise NotImplementedError

    def reset_parameters(self, m: nn.Module) -> None:
        """The paper's initialization, applied to a fresh module (default: torch's own)."""

    # ---- layers in the model's layout
    def configure(self, device: torch.device, threads: int) -> None:
        self.layout = choose_layout(self.family, device, threads)

    @property
    def layout_name(self) -> str:
        return self.layout.name

    def pack(self, x: torch.Tensor) -> torch.Tensor:
        """[k, B, C, H, W] -> the grouped [B, k*C, H, W], in the layout's memory format."""
        return L.pack(x, self.layout.channels_last)

    def conv(self, h, weight, bias=None, stride: int = 1, padding: int = 0) -> torch.Tensor:
        """layers.conv2d; in NHWC layouts one model's one-input-channel conv as a matrix
        product (layers.conv_one_channel)."""
        if self.layout.channels_last and weight.shape[0] == 1 and weight.shape[2] == 1:
            b0 = None if bias is None else bias[0]
            return L.conv_one_channel(h, weight[0], b0, stride, padding)
        return L.conv2d(h, weight, bias, stride, padding)

    @staticmethod
    def relu_pool(h: torch.Tensor) -> torch.Tensor:
        """max_pool2d(relu(h), 2) computed as relu(max_pool2d(h, 2)): the same numbers and
        gradients bit for bit (relu is monotone, and both pick the window's first maximum where
        it is > 0 and give no gradient where it is not), with the ReLU on a 4x smaller tensor."""
        return F.relu(F.max_pool2d(h, 2))

    def row_groups(self, k: int) -> list[slice]:
        """The rows that run as one computation: all k (grouped), or one at a time (loop)."""
        if self.layout.loop:
            return [slice(j, j + 1) for j in range(k)]
        return [slice(0, k)]

    # ---- BatchedModel
    def forward(self, params, x, buffers=None, train: bool = True, mask=None):
        rows = self.row_groups(x.shape[0])
        if len(rows) == 1:
            return self._forward(params, x, buffers, train, mask)
        return torch.cat([
            self._forward([t[r] for t in params], x[r], _rows(buffers, r), train, _rows(mask, r))
            for r in rows
        ])  # fmt: skip

    def _forward(self, params, x, buffers, train, mask):
        p = {s.name: t for s, t in zip(self.slots, params)}
        b = None
        if buffers is not None and self.buffer_dim:
            b = {s.name: self.view(buffers, s) for s in self.buffer_slots}
        return self.run(p, x, b, train, mask)

    def predict(self, w, x, buffers=None):
        """Eval-mode logits: BatchNorm uses the buffers [k, Db] (running statistics)."""
        return self.forward(self.unflatten(w), x, buffers, train=False)

    def loss(self, params, x, y, weight, buffers=None, padded=None):
        """padded (batch_stats models): whether each row's batch has padding (weight-0 samples),
        a host-side list the caller knows; None: read it from weight (a host synchronisation,
        which the engine's per-step calls avoid: tests/test_host_syncs.py)."""
        mask = None
        if self.batch_stats:
            real = weight > 0
            if padded is None:
                padded = [not bool(real.all())]
            if any(padded):  # keep padding out of the statistics
                mask = real
        logits = self.forward(params, x, buffers, train=True, mask=mask)
        ce = torch.nn.functional.cross_entropy(logits.flatten(0, 1), y.flatten(), reduction="none")
        return (ce.view(weight.shape) * weight).sum(1)

    def loss_and_grad(self, w, x, y, weight, buffers=None, padded=None):
        """Train mode; BatchNorm's running statistics in buffers [k, Db] are updated in place
        (buffers=None: batch statistics only, nothing recorded); padded: see loss. Each group
        of rows (all, or one device at a time: row_groups) is one forward and backward."""
        g = torch.empty_like(w)
        losses = w.new_empty(w.shape[0])
        for r in self.row_groups(w.shape[0]):
            b, pad = _rows(buffers, r), _rows(padded, r)
            losses[r], grads = self._grads(w[r], x[r], y[r], weight[r], b, pad)
            for s, gs in zip(self.slots, grads):
                self.view(g[r], s).copy_(gs)
        return losses, g

    def _grads(self, w, x, y, weight, buffers, padded) -> tuple[torch.Tensor, tuple]:
        """The losses [k] of w [k, D] and their gradients, one [k, *shape] per slot."""
        leaves = [p.detach().requires_grad_(True) for p in self.unflatten(w)]
        with torch.enable_grad():
            losses = self.loss(leaves, x, y, weight, buffers, padded)
            grads = torch.autograd.grad(losses.sum(), leaves)
        return losses.detach(), grads

    def sgd_step(self, w, x, y, weight, lr, weight_decay=0.0, buffers=None, padded=None):
        """loss_and_grad and w <- w - lr (g + wd w), slot by slot from autograd's gradients
        (no [k, D] gradient to write and read back: one pass over the parameters less; the
        same elementwise operations, so the same numbers)."""
        losses = w.new_empty(w.shape[0])
        for r in self.row_groups(w.shape[0]):
            b, pad = _rows(buffers, r), _rows(padded, r)
            losses[r], grads = self._grads(w[r], x[r], y[r], weight[r], b, pad)
            for s, gs in zip(self.slots, grads):
                ws = self.view(w[r], s)
                if weight_decay:
                    gs.add_(ws, alpha=weight_decay)
                ws.sub_(gs, alpha=lr)
        return losses

    def init(self, gen: torch.Generator, dtype=torch.float32) -> torch.Tensor:
        """A fresh module initialised from a seed drawn from gen (torch's layer initializers
        draw from the global RNG, which we fork so nothing else is disturbed)."""
        seed = int(torch.randint(0, 2**62, (1,), generator=gen))
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            m = self.module()
            self.reset_parameters(m)
        return self.from_module(m).to(dtype)

    def init_buffers(self, dtype=torch.float32) -> torch.Tensor:
        return self._init_buffers.to(dtype)

    def forward_vmap(self, params, x, buffers=None, train: bool = True):
        """The same forward by torch.func.vmap over functional_call of module(): kept to measure
        the grouped layout against (convnets.py docstring) and to cross-check its logits in
        tests. Train mode does not write the running statistics back into `buffers` (the
        module's in-place update hits vmap's per-device copies), so it is no training path."""
        from torch.func import functional_call, vmap

        m = self.module().to(dtype=params[0].dtype, device=params[0].device).train(train)
        names = [s.name for s in self.slots]
        bnames = [s.name for s in self.buffer_slots] if buffers is not None else []
        bviews = [self.view(buffers, s) for s in self.buffer_slots] if bnames else []

        def f(ps, bs, xb):
            return functional_call(m, {**dict(zip(names, ps)), **dict(zip(bnames, bs))}, (xb,))

        return vmap(f)(list(params), bviews, x)


def _rows(t, r: slice):
    """Rows r of a tensor or list (None stays None)."""
    return None if t is None else t[r]
