"""What a method may ask of the engine, and nothing more: ctx.services.

Methods see the engine only through this narrow interface, so a method's needs are listed in
one place and a test (or another engine) can supply them with a stub.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

import torch

from fedbench.metrics import gradient_dissimilarity

if TYPE_CHECKING:
    from fedbench.engine import Engine
    from fedbench.methods.base import LocalResult, RoundContext


class EngineServices(Protocol):
    def full_batch_grads(
        self, w: torch.Tensor, clients: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Each listed device's full local (loss [k], gradient [k, D]) at w ([D] or [k, D])."""

    def train_loss(
        self, w: torch.Tensor, ctx: RoundContext | None = None, res: LocalResult | None = None
    ) -> float:
        """Mean cross-entropy over all training data at w; given the round (ctx, res), models
        with buffers (BatchNorm) use the buffers that round produces, else the global ones."""

    def gradient_dissimilarity(self, w: torch.Tensor) -> float:
        """(1/N) sum_k |g - g_k|^2 over all N devices' full-batch gradients at w."""


class ServicesOf:
    """EngineServices backed by an Engine (Engine.context hands one to every round)."""

    def __init__(self, engine: Engine):
        self._engine = engine

    def full_batch_grads(self, w, clients):
        return self._engine.full_batch_grads(w, clients)

    def train_loss(self, w, ctx=None, res=None):
        eng = self._engine
        kw = {}
        if res is not None and eng.model.buffer_dim:
            kw["buffers"] = eng.merged_buffers(ctx, res)
        return eng.evaluate(eng.data.train_x, eng.data.train_y, w=w, **kw)[0]

    def gradient_dissimilarity(self, w):
        return gradient_dissimilarity(self._engine, w)
