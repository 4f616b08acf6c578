"""Batched models: K copies of one network train as one computation.

A model's parameters are one flat vector of length D; K copies are a [K, D] tensor, and each
layer reads its weights as a view into it. Server rules (averages, dot products, norms) are then
plain vector arithmetic, and a method never needs to know the layers.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

import torch
import torch.nn.functional as F
from torch import nn


@dataclass(frozen=True)
class Slot:
    name: str
    shape: tuple[int, ...]
    offset: int

    @property
    def numel(self) -> int:
        return prod(self.shape)


def _layout(shapes: list[tuple[str, tuple[int, ...]]]) -> tuple[list[Slot], int]:
    slots, offset = [], 0
    for name, shape in shapes:
        slots.append(Slot(name, tuple(shape), offset))
        offset += prod(shape)
    return slots, offset


class BatchedModel:
    """Subclasses declare their slots (names and shapes, in nn.Module's state_dict order) and
    implement forward(params, x [k, B, ...]) -> logits [k, B, C], where params holds one tensor
    [k, *shape] per slot, and module().

    Models with state that is not trained by gradients (BatchNorm's running statistics) also
    declare buffer slots: K copies are a flat [K, Db] tensor laid out like the parameters. Such
    models take `buffers=` in loss_and_grad (per-device [k, Db], updated in place in train mode)
    and predict (eval mode); the engine keeps the global buffers and averages them each round.
    Models without buffers (buffer_dim == 0) are never passed any."""

    buffer_slots: list[Slot] = []
    buffer_dim: int = 0

    def __init__(self, shapes: list[tuple[str, tuple[int, ...]]], buffer_shapes=()):
        self.slots, self.dim = _layout(shapes)
        self.buffer_slots, self.buffer_dim = _layout(list(buffer_shapes))

    def init_buffers(self, dtype=torch.float32) -> torch.Tensor:
        """Initial flat buffers [Db] (as a fresh nn.Module has them)."""
        return torch.zeros(0, dtype=dtype)

    def view(self, w: torch.Tensor, slot: Slot) -> torch.Tensor:
        """Slot of each of the k models in w [k, D], shaped [k, *shape] (no copy)."""
        return w[:, slot.offset : slot.offset + slot.numel].view(w.shape[0], *slot.shape)

    def unflatten(self, w: torch.Tensor) -> list[torch.Tensor]:
        return [self.view(w, s) for s in self.slots]

    def forward(self, params: list[torch.Tensor], x: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def predict(self, w: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """Logits [k, B, C] of the k flat models w [k, D]."""
        return self.forward(self.unflatten(w), x)

    def loss(self, params: list[torch.Tensor], x: torch.Tensor, y: torch.Tensor, weight):
        """Per-model loss [k]: cross-entropy weighted per sample (weight [k, B] sums to 1 per row;
        padded samples have weight 0)."""
        logits = self.forward(params, x)
        ce = F.cross_entropy(logits.flatten(0, 1), y.flatten(), reduction="none")
        return (ce.view(weight.shape) * weight).sum(1)

    def loss_and_grad(self, w: torch.Tensor, x, y, weight) -> tuple[torch.Tensor, torch.Tensor]:
        """(loss [k], gradient [k, D]) of the k models w [k, D] on their own mini-batches.

        Each slot is its own autograd leaf: differentiating through slices of one flat tensor
        would make autograd build a zero-filled [k, D] tensor per slot (measured: 60% of a round).
        """
        leaves = [p.detach().requires_grad_(True) for p in self.unflatten(w)]
        with torch.enable_grad():
            losses = self.loss(leaves, x, y, weight)
            grads = torch.autograd.grad(losses.sum(), leaves)
        g = torch.empty_like(w)
        for s, gs in zip(self.slots, grads):
            self.view(g, s).copy_(gs)
        return losses.detach(), g

    def sgd_step(
        self, w, x, y, weight, lr: float, weight_decay: float = 0.0, const=None
    ) -> torch.Tensor:
        """One SGD step in place, w <- w - lr (grad + wd w + const) (const [k, D] a per-row
        constant, or None); returns the losses [k]. Models may fuse it (BatchedMLP does); the
        engine uses it when a method's local step is plain SGD and there is no momentum or
        clipping."""
        losses, g = self.loss_and_grad(w, x, y, weight)
        if weight_decay:
            g.add_(w, alpha=weight_decay)
        w.sub_(g, alpha=lr)
        if const is not None:  # after the step, as the engine subtracts a drift
            w.sub_(const, alpha=lr)
        return losses

    # compiled steps where a model has them (BatchedMLP's window); Engine.fastpath turns them off
    compiled_steps: bool = True

    # steps per call of sgd_steps the engine asks for; models that batch a window of steps
    # into fewer, bigger operations (BatchedMLP's window) set it higher
    step_window: int = 1

    # samples a device per chunk of a full-batch pass (training.evaluation.full_batch_grads):
    # big for GEMM-bound models (the FedLGA MLP: 0.15-0.17 s at 512-1200, 0.18 s at 128)
    grad_chunk: int = 512

    def sgd_steps(
        self, w, xs, ys, bws, active: list[int], lr: float, weight_decay: float = 0.0, const=None
    ):
        """T consecutive SGD steps w <- w - lr (g + wd w + const) in place on w [k, D]
        (k = active[0], const [k, D] or None); returns the losses [T, k] (0 where a row is
        inactive). xs [T, k, B, ...] are the (transformed) inputs, ys and bws [T, k, B] the
        labels and batch weights, active[t] (non-increasing) the rows that take step t, a
        prefix. Exactly T calls of sgd_step on the active rows, each followed by
        w -= lr const (as the engine's per-step path subtracts a drift; any model's sgd_step)."""
        losses = w.new_zeros(len(active), w.shape[0])
        for t, ka in enumerate(active):
            losses[t, :ka] = self.sgd_step(
                w[:ka], xs[t, :ka], ys[t, :ka], bws[t, :ka], lr, weight_decay
            )
            if const is not None:
                w[:ka].sub_(const[:ka], alpha=lr)
        return losses

    def configure(self, device: torch.device, threads: int) -> None:
        """Pick how the k copies run on `device` at `threads` CPU threads (NetModel's layout;
        the others have one way)."""

    @property
    def layout_name(self) -> str:
        """How the k copies run, as run.json records it."""
        return "batched"

    def init(self, gen: torch.Generator, dtype=torch.float32) -> torch.Tensor:
        """Initial flat parameters [D], drawn from gen the way the reference module would be."""
        raise NotImplementedError

    def module(self) -> nn.Module:
        """The plain nn.Module this model batches (for reference loops and tests)."""
        raise NotImplementedError

    def to_module(self, w: torch.Tensor, buffers: torch.Tensor | None = None) -> nn.Module:
        """The nn.Module with parameters w [D] (and buffers [Db], default: init_buffers())."""
        m = self.module().to(dtype=w.dtype, device=w.device)
        state = m.state_dict()  # keeps what no slot covers (BatchNorm's num_batches_tracked)
        state.update({s.name: w[s.offset : s.offset + s.numel].view(s.shape) for s in self.slots})
        if self.buffer_dim:
            b = self.init_buffers(w.dtype).to(w.device) if buffers is None else buffers
            for s in self.buffer_slots:
                state[s.name] = b[s.offset : s.offset + s.numel].view(s.shape)
        m.load_state_dict({k: v.clone() for k, v in state.items()})
        return m

    def from_module(self, m: nn.Module) -> torch.Tensor:
        sd = m.state_dict()
        return torch.cat([sd[s.name].reshape(-1) for s in self.slots])

    def buffers_from_module(self, m: nn.Module) -> torch.Tensor:
        sd = m.state_dict()
        parts = [sd[s.name].reshape(-1) for s in self.buffer_slots]
        return torch.cat(parts) if parts else torch.zeros(0)
