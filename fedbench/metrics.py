"""Per-round diagnostics that any method can record."""

from __future__ import annotations

import torch


@torch.no_grad()
def gradient_dissimilarity(engine, w: torch.Tensor, chunk: int | None = None) -> float:
    """FedProx's "gradient difference" (litian96/FedProx trainers/fedprox.py, spec §3.7) at w:
    each of the N devices' full-batch gradient g_k, g = sum n_k g_k / sum n_k, and
    (1/N) sum_k |g - g_k|^2 (an unweighted mean over devices).

    Devices are batched in chunks (full_batch_grads); the [N, D] gradients are never stored: the
    sum expands to sum_k |g_k|^2 - 2 g . sum_k g_k + N |g|^2, accumulated in float64.
    """
    n = engine.data.num_clients
    dim = engine.model.dim
    if chunk is None:  # about 16M gradient entries per chunk
        chunk = max(1, min(n, (1 << 24) // max(dim, 1)))
    sizes = engine.sizes.to(torch.float64)
    dev = engine.device
    weighted = torch.zeros(dim, dtype=torch.float64, device=dev)  # sum n_k g_k
    plain = torch.zeros(dim, dtype=torch.float64, device=dev)  # sum g_k
    sq = torch.zeros((), dtype=torch.float64, device=dev)  # sum |g_k|^2
    for start in range(0, n, chunk):
        clients = torch.arange(start, min(n, start + chunk))
        g = engine.full_batch_grads(w, clients)[1].to(torch.float64)
        weighted += sizes[clients].to(dev) @ g
        plain += g.sum(0)
        sq += (g * g).sum()
    g_bar = weighted / sizes.sum()
    return float((sq - 2 * (g_bar @ plain) + n * (g_bar @ g_bar)) / n)
