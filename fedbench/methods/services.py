"""Evaluation and full-batch gradients: the services methods call (ctx.services), and the
per-round evaluation the runner records. One place for every pass over a whole dataset.

Methods see the engine only through the narrow EngineServices interface, so a method's needs are
listed in one place and a test (or another engine) can supply them with a stub. The functions
below take the model, the data and the weights explicitly: they hold no state of their own.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Protocol

import torch

from fedbench.metrics import gradient_dissimilarity

if TYPE_CHECKING:
    from fedbench.config import RunConfig
    from fedbench.data import FederatedData
    from fedbench.engine import Engine
    from fedbench.methods.base import LocalResult, RoundContext
    from fedbench.models import BatchedModel


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
    """EngineServices backed by an Engine (Engine.context hands one to every round); it goes
    through the engine's evaluate / full_batch_grads, which call the functions below."""

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


@torch.no_grad()
def evaluate(
    model: BatchedModel,
    data: FederatedData,
    w: torch.Tensor,
    buffers: torch.Tensor,
    x: torch.Tensor,
    y: torch.Tensor,
    chunk: int = 10000,
) -> tuple[float, float]:
    """(mean cross-entropy, accuracy) of the model w [D] on (x, y), in batched chunks; in eval
    mode, with `buffers` [Db] for models that have them (ignored otherwise)."""
    loss_sum, correct = 0.0, 0
    w = w.unsqueeze(0)
    bkw = {"buffers": buffers.unsqueeze(0)} if model.buffer_dim else {}
    chunk = min(chunk, data.eval_chunk)
    for i in range(0, len(y), chunk):
        xb, yb = data.eval_transform(x[i : i + chunk]).unsqueeze(0), y[i : i + chunk]
        logits = model.predict(w, xb, **bkw)[0]
        loss_sum += float(torch.nn.functional.cross_entropy(logits, yb, reduction="sum"))
        correct += int((logits.argmax(1) == yb).sum())
    return loss_sum / len(y), correct / len(y)


def full_batch_grads(
    model: BatchedModel, data: FederatedData, w: torch.Tensor, clients, chunk: int = 512
) -> tuple[torch.Tensor, torch.Tensor]:
    """Each device's full local loss and gradient at w ([D], or [k, D] one row per device):
    (loss [k], grad [k, D]), batched over the devices, chunked over their samples.
    Used by MimeLite's server statistics, FedProx's dissimilarity metric and FedSoftMax's
    loss=start. BatchNorm models run in train mode on batch statistics (of each chunk, padding
    left out) without touching any buffers: a gradient is a train-mode quantity."""
    k = len(clients)
    w = w.expand(k, -1) if w.dim() == 1 else w
    device, dtype = w.device, w.dtype
    members = [data.client_indices[int(c)] for c in clients]
    sizes = torch.tensor([len(m) for m in members])
    n_max = int(sizes.max())
    idx = torch.zeros(k, n_max, dtype=torch.long)
    for i, m in enumerate(members):
        idx[i, : len(m)] = m
    valid = torch.arange(n_max) < sizes.unsqueeze(1)
    weight = (valid.double() / sizes.unsqueeze(1)).to(device, dtype)
    idx = idx.to(device)
    loss = torch.zeros(k, dtype=dtype, device=device)
    grad = torch.zeros(k, model.dim, dtype=dtype, device=device)
    for s in range(0, n_max, chunk):
        rows = idx[:, s : s + chunk]
        xb = data.eval_transform(data.train_x[rows])
        l_c, g_c = model.loss_and_grad(w, xb, data.train_y[rows], weight[:, s : s + chunk])
        loss += l_c
        grad += g_c
    return loss, grad


def eval_record(
    cfg: RunConfig, model: BatchedModel, data: FederatedData, w: torch.Tensor, buffers
) -> dict:
    """The round's evaluation: test loss and accuracy (and training ones with eval_train), or the
    distance to the optimum for SFL's quadratic problem; with the seconds it took."""
    t0 = time.perf_counter()
    if "x_star" in data.info:  # SFL quadratic: distance to the optimum, no accuracy
        dist = float((w - data.info["x_star"]).abs().max())
        return {"dist_to_opt": dist, "eval_seconds": time.perf_counter() - t0}
    test_loss, test_acc = evaluate(model, data, w, buffers, data.test_x, data.test_y)
    rec = {"test_loss": test_loss, "test_acc": test_acc}
    if cfg.eval_train:
        rec["train_loss"], rec["train_acc"] = evaluate(
            model, data, w, buffers, data.train_x, data.train_y
        )
    rec["eval_seconds"] = time.perf_counter() - t0
    return rec
