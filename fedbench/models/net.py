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
"""

from __future__ import annotations

import torch
from torch import nn

from fedbench.models.base import BatchedModel


class NetModel(BatchedModel):
    batch_stats: bool = False  # train-mode outputs depend on the whole batch (BatchNorm)

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

    # ---- BatchedModel
    def forward(self, params, x, buffers=None, train: bool = True, mask=None):
        p = {s.name: t for s, t in zip(self.slots, params)}
        b = None
        if buffers is not None and self.buffer_dim:
            b = {s.name: self.view(buffers, s) for s in self.buffer_slots}
        return self.run(p, x, b, train, mask)

    def predict(self, w, x, buffers=None):
        """Eval-mode logits: BatchNorm uses the buffers [k, Db] (running statistics)."""
        return self.forward(self.unflatten(w), x, buffers, train=False)

    def loss(self, params, x, y, weight, buffers=None):
        mask = None
        if self.batch_stats:
            real = weight > 0
            if not bool(real.all()):  # padded batch: keep padding out of the statistics
                mask = real
        logits = self.forward(params, x, buffers, train=True, mask=mask)
        ce = torch.nn.functional.cross_entropy(logits.flatten(0, 1), y.flatten(), reduction="none")
        return (ce.view(weight.shape) * weight).sum(1)

    def loss_and_grad(self, w, x, y, weight, buffers=None):
        """Train mode; BatchNorm's running statistics in buffers [k, Db] are updated in place
        (buffers=None: batch statistics only, nothing recorded)."""
        leaves = [p.detach().requires_grad_(True) for p in self.unflatten(w)]
        with torch.enable_grad():
            losses = self.loss(leaves, x, y, weight, buffers)
            grads = torch.autograd.grad(losses.sum(), leaves)
        g = torch.empty_like(w)
        for s, gs in zip(self.slots, grads):
            self.view(g, s).copy_(gs)
        return losses.detach(), g

    def sgd_step(self, w, x, y, weight, lr, weight_decay=0.0, buffers=None):
        losses, g = self.loss_and_grad(w, x, y, weight, buffers)
        if weight_decay:
            g.add_(w, alpha=weight_decay)
        w.sub_(g, alpha=lr)
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
