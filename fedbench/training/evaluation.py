"""Whole-dataset passes over (model, data): evaluation, full-batch gradients, FedProx's gradient
dissimilarity, merged buffers, and `RoundServices`, the EngineServices (fedbench.methods.base) a
round hands to methods. One place for every pass over a whole dataset.

Everything here takes the model, the data and the weights explicitly and holds no state of its
own beyond them: nothing here knows the Engine, so a test (or another engine) can call it with
any model and data.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import torch

from fedbench.devices import take_rows
from fedbench.methods.base import LocalResult, RoundContext, weighted_mean

if TYPE_CHECKING:
    from fedbench.config import RunConfig
    from fedbench.data import FederatedData
    from fedbench.models import BatchedModel


class RoundServices:
    """What a method may ask during a round (fedbench.methods.base.EngineServices), backed by
    the run's model and data; `buffers` are the global buffers at the round's start."""

    def __init__(self, model: BatchedModel, data: FederatedData, buffers: torch.Tensor):
        self.model, self.data, self.buffers = model, data, buffers

    def full_batch_grads(self, w, clients):
        return full_batch_grads(self.model, self.data, w, clients)

    def train_loss(self, w, ctx=None, res=None):
        b = self.buffers
        if res is not None and self.model.buffer_dim:
            b = merged_buffers(self.buffers, ctx, res)
        return evaluate(self.model, self.data, w, b, self.data.train_x, self.data.train_y)[0]

    def gradient_dissimilarity(self, w):
        return gradient_dissimilarity(self.model, self.data, w)


def merged_buffers(buffers: torch.Tensor, ctx: RoundContext, res: LocalResult) -> torch.Tensor:
    """The global buffers after a round: the devices' final buffers averaged with the round's
    aggregation weights p_i (n_i-proportional or uniform, as FedAvg averages parameters;
    dropped devices never trained and are not in res), whatever rule the method applies to
    the parameters. SFL's chain (res.order) keeps the last device's, as it keeps its model.
    `buffers`: the global buffers before the round (kept when the model has none)."""
    if res.buffers is None:
        return buffers
    if res.order is not None:
        return res.buffers[res.order[-1]].clone()
    return weighted_mean(res.buffers, ctx.weights)


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


@torch.no_grad()
def local_accuracy(
    model: BatchedModel, data: FederatedData, w: torch.Tensor, clients, buffers=None, chunk=512
) -> torch.Tensor:
    """Each device's accuracy [k] of its own model w[i] ([k, D]) on its own training data, in
    eval mode (buffers [k, Db] for models that have them), batched over the devices, chunked
    over their samples: the local training accuracy FedSoftMax's smoothness is measured on."""
    members = [data.client_indices[int(c)] for c in clients]
    sizes = torch.tensor([len(m) for m in members])
    n_max = int(sizes.max())
    idx = torch.zeros(len(members), n_max, dtype=torch.long)
    for i, m in enumerate(members):
        idx[i, : len(m)] = m
    valid = (torch.arange(n_max) < sizes.unsqueeze(1)).to(w.device)
    idx = idx.to(w.device)
    bkw = {"buffers": buffers} if model.buffer_dim and buffers is not None else {}
    correct = torch.zeros(len(members), dtype=torch.float64, device=w.device)
    for s in range(0, n_max, chunk):
        rows = idx[:, s : s + chunk]
        logits = model.predict(w, data.eval_transform(take_rows(data.train_x, rows)), **bkw)
        hit = (logits.argmax(-1) == take_rows(data.train_y, rows)) & valid[:, s : s + chunk]
        correct += hit.sum(1)
    return correct / sizes.to(correct)


def full_batch_grads(
    model: BatchedModel, data: FederatedData, w: torch.Tensor, clients, chunk: int | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Each device's full local loss and gradient at w ([D], or [k, D] one row per device):
    (loss [k], grad [k, D]), batched over the devices, chunked over their samples (chunk
    samples a device; default the model's grad_chunk).
    Used by MimeLite's server statistics, FedProx's dissimilarity metric and FedSoftMax's
    loss=start. BatchNorm models run in train mode on batch statistics (of each chunk, padding
    left out) without touching any buffers: a gradient is a train-mode quantity."""
    k, chunk = len(clients), chunk or model.grad_chunk
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
        xb = data.eval_transform(take_rows(data.train_x, rows))
        yb = take_rows(data.train_y, rows)
        l_c, g_c = model.loss_and_grad(w, xb, yb, weight[:, s : s + chunk])
        loss += l_c
        grad += g_c
    return loss, grad


@torch.no_grad()
def gradient_dissimilarity(
    model: BatchedModel, data: FederatedData, w: torch.Tensor, chunk: int | None = None
) -> float:
    """FedProx's "gradient difference" (litian96/FedProx trainers/fedprox.py, spec §3.7) at w:
    each of the N devices' full-batch gradient g_k, g = sum n_k g_k / sum n_k, and
    (1/N) sum_k |g - g_k|^2 (an unweighted mean over devices).

    Devices are batched in chunks (full_batch_grads); the [N, D] gradients are never stored: the
    sum expands to sum_k |g_k|^2 - 2 g . sum_k g_k + N |g|^2, accumulated in float64.
    """
    n = data.num_clients
    dim = model.dim
    if chunk is None:  # about 16M gradient entries per chunk
        chunk = max(1, min(n, (1 << 24) // max(dim, 1)))
    sizes = data.sizes.to(torch.float64)
    dev = w.device
    weighted = torch.zeros(dim, dtype=torch.float64, device=dev)  # sum n_k g_k
    plain = torch.zeros(dim, dtype=torch.float64, device=dev)  # sum g_k
    sq = torch.zeros((), dtype=torch.float64, device=dev)  # sum |g_k|^2
    for start in range(0, n, chunk):
        clients = torch.arange(start, min(n, start + chunk))
        g = full_batch_grads(model, data, w, clients)[1].to(torch.float64)
        weighted += sizes[clients].to(dev) @ g
        plain += g.sum(0)
        sq += (g * g).sum()
    g_bar = weighted / sizes.sum()
    return float((sq - 2 * (g_bar @ plain) + n * (g_bar @ g_bar)) / n)


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
