"""A constant's first-layer products for the MLP window (BatchedMLP.sgd_steps' const_x), once
a round instead of once an epoch.

A per-row constant C of the local step (SCAFFOLD's drift, FedProx's -mu w^t, MimeLite's and
FedCM's pull, FedDyn's linear term) enters every windowed step's first-layer pre-activation as
X C1^T (C1: C's first-layer block). Computed window by window that is one more first-layer GEMM
per window, the cost of the forward itself (~1.4x FedAvg's round on FedLGA-FMNIST). C is fixed
during the round, so each row's X C1^T over its device's samples is computed here once and the
windows gather their rows of it: E local epochs pay for one. Same products (each is row x
column of the same numbers), summed by a GEMM of another shape: equal to rounding.
"""

from __future__ import annotations

import torch

from fedbench.devices import take_rows


class ConstProducts:
    """X C1^T of every sample of each row's device, [k, n_max, h], and where each of the
    plan's batch samples sits in it."""

    def __init__(self, model, data, clients: list[int], places, const: torch.Tensor):
        """places [k, S, B]: each batch sample's place in its device (FederatedData.positions)."""
        k = const.shape[0]
        idx = data.padded_indices(clients)  # [k, n_max]
        n_max = idx.shape[1]
        dev = const.device
        self.products = model.const_products(const, take_rows(data.train_x, idx.to(dev)))
        # where each batch sample's row sits in products flattened to [k * n_max, h]
        self.flat = (places + n_max * torch.arange(k).view(k, 1, 1)).to(dev)

    def window(self, s: int, steps: int, ka: int) -> torch.Tensor:
        """Rows :ka of the window of `steps` steps from step s: [ka, steps * B, h], samples in
        the window's order (step after step)."""
        h = self.products.shape[2]
        rows = self.products.view(-1, h).index_select(0, self.flat[:ka, s : s + steps].flatten())
        return rows.view(ka, -1, h)


def pays(engine, const) -> bool:
    """Whether a round's ConstProducts pay: an MLP window with a constant, no input pipeline (a
    transformed sample differs epoch by epoch) and more than one local epoch."""
    cfg, data = engine.cfg, engine.data
    if const is None or data.pipeline is not None or not hasattr(engine.model, "const_products"):
        return False
    return cfg.local_steps is None and cfg.local_epochs >= 2
