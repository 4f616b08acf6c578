"""Each device's Gram X X^T for the MLP window (BatchedMLP.sgd_steps' gram), computed once a run
instead of once a window.

The window corrects each step's first-layer pre-activation by the Gram of its T*B samples
(models/mlp.py), one [T*B, n] x [n, T*B] product a device and window: on FedLGA-FMNIST (T*B =
160, n = 784) 12.3 GFLOP a round, a sixth of the round's arithmetic. It depends on the data
only, so each device's Gram over all its samples (n_i x n_i, 13 ms for 1,200 images) is
computed the first time the device trains and kept; the windows gather their [T*B, T*B] blocks
from it. Same products (each is one sample's pixels against another's), summed by a GEMM of
another shape: equal to rounding (1e-7 relative in float32).

Memory: sum_i n_i^2 numbers (FedLGA-FMNIST's 50 devices of ~1,200: 288 MB in float32); where
that is over BUDGET_BYTES (skewed partitions, big devices) the windows compute theirs as before.
"""

from __future__ import annotations

import torch

BUDGET_BYTES = 1 << 30  # the Grams of all devices, at most


class DeviceGrams:
    """The devices' Grams in one flat store (device i's n_i x n_i block at offset[i]), each
    filled the first time its device trains."""

    def __init__(self, data, device: torch.device):
        self.data = data
        self.sizes = sizes = data.sizes  # [N] int64
        self.offset = torch.cumsum(sizes * sizes, 0) - sizes * sizes
        self.store = torch.empty(
            int((sizes * sizes).sum()), dtype=data.train_x.dtype, device=device
        )
        self.done = torch.zeros(len(sizes), dtype=torch.bool)

    def _fill(self, client: int) -> None:
        members = self.data.client_indices[client].to(self.store.device)
        x = self.data.train_x.index_select(0, members).flatten(1)
        n, at = len(members), int(self.offset[client])
        torch.mm(x, x.T, out=self.store[at : at + n * n].view(n, n))
        self.done[client] = True

    def fill(self, clients) -> None:
        """These devices' Grams, where not yet computed (all of them: a benchmark's steady
        state; a run fills each the first time it trains)."""
        for c in clients:
            if not self.done[c]:
                self._fill(c)

    def fill_all(self) -> None:
        self.fill(range(len(self.sizes)))

    def for_round(self, clients: list[int], places) -> RoundGrams:
        """The round's windows' Grams; places [k, S, B]: each batch sample's place in its
        device (FederatedData.positions)."""
        self.fill(clients)
        return RoundGrams(self, clients, places)


class RoundGrams:
    """Where each of the round's batch samples sits in its device's Gram; window() gathers."""

    def __init__(self, grams: DeviceGrams, clients: list[int], places):
        dev = grams.store.device
        self.local = places.to(dev)
        self.n, self.offset = grams.sizes[clients], grams.offset[clients]
        self.store = grams.store
        self.gather = _compiled_gather() if dev.type == "cpu" else None

    def window(self, s: int, steps: int, ka: int) -> torch.Tensor:
        """Rows :ka of the window of `steps` steps from step s: [ka, steps * B, steps * B], its
        blocks (step, step') with step' <= step; 0 above (the window reads no more)."""
        li = self.local[:ka, s : s + steps].reshape(ka, -1)  # [ka, T*B]
        b, m = self.local.shape[2], li.shape[1]
        out = self.store.new_empty(ka, m, m)
        if self.gather is not None:
            arrays = (self.store, self.offset[:ka], self.n[:ka], li.contiguous())
            self.gather(*(a.numpy() for a in arrays), b, out.numpy())
            return out
        for r in range(ka):  # whole rows of the Gram, then their columns (a flat gather of
            n, at = int(self.n[r]), int(self.offset[r])  # single numbers: 2x slower)
            rows = self.store[at : at + n * n].view(n, n).index_select(0, li[r])
            torch.index_select(rows, 1, li[r], out=out[r])
        step = torch.arange(m, device=out.device) // b
        return out.masked_fill_(step.view(1, m) > step.view(m, 1), 0.0)


def _compiled_gather():
    """training/_gram_gather.py's kernel, or None where numba does not load."""
    try:
        from fedbench.training._gram_gather import gather_blocks
    except (ImportError, RuntimeError):
        return None
    return gather_blocks


def device_grams(engine) -> DeviceGrams | None:
    """The engine's DeviceGrams where they apply: a model whose window takes a Gram, no input
    pipeline (a transformed sample differs epoch by epoch), within BUDGET_BYTES. Kept with the
    data (FederatedData.derived): the runs of a sweep on the same data share them."""
    data = engine.data
    if not getattr(engine.model, "window_gram", False) or data.pipeline is not None:
        return None
    sizes = data.sizes.to(torch.float64)
    if float((sizes * sizes).sum()) * data.train_x.element_size() > BUDGET_BYTES:
        return None
    key = ("window_gram", str(engine.device))
    if key not in data.derived:
        data.derived[key] = DeviceGrams(data, engine.device)
    return data.derived[key]
