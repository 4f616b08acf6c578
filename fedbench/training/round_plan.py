"""Round planning: who trains in round r, how long, and on which mini-batches.

A pure function of the config, the devices' data (sizes and sample indices) and the round: no
model, no engine. The batched engine and the per-device reference loop
(fedbench.training.reference) both train from the same RoundPlan, which is why their numbers agree.

Rows are ordered by how many steps each device runs (most first), so at step s the active devices
are a prefix: partial work is a shorter prefix, never a special case.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from dataclasses import dataclass

import torch

from fedbench.config import RunConfig
from fedbench.devices import generator
from fedbench.training.hetero import sample_work


@dataclass
class RoundPlan:
    """Who trains this round, how long, and on which mini-batches. Rows in engine order."""

    clients: torch.Tensor  # [K] device ids
    units: torch.Tensor  # [K] epochs/steps to run (E_i)
    tau: torch.Tensor  # [K]
    slow: torch.Tensor  # [K] bool
    steps: torch.Tensor  # [K] local SGD steps
    batches_per_epoch: torch.Tensor  # [K]
    batch_idx: torch.Tensor  # [K, S, B] sample indices (on device)
    batch_weight: torch.Tensor  # [K, S, B] 1/batch size for real samples, 0 for padding
    n_dropped: int
    dropped: list[int]

    @property
    def k(self) -> int:
        return int(self.clients.shape[0])

    def rows(self, sel: slice) -> RoundPlan:
        """The plan restricted to some rows (SFL trains one device at a time)."""
        return RoundPlan(
            self.clients[sel],
            self.units[sel],
            self.tau[sel],
            self.slow[sel],
            self.steps[sel],
            self.batches_per_epoch[sel],
            self.batch_idx[sel],
            self.batch_weight[sel],
            self.n_dropped,
            self.dropped,
        )


def lr_at(cfg: RunConfig, r: int) -> float:
    """The local learning rate of round r (1-based)."""
    return cfg.lr * cfg.lr_decay ** (r - 1)


def aggregation_weights(cfg: RunConfig, n_samples: torch.Tensor) -> torch.Tensor:
    """p_i of the round's devices: n_i-proportional, or uniform."""
    if cfg.aggregation == "samples":
        return n_samples / n_samples.sum()
    return torch.full_like(n_samples, 1.0 / max(len(n_samples), 1))


def plan_round(
    cfg: RunConfig,
    r: int,
    sizes: torch.Tensor,
    client_indices: list[torch.Tensor],
    drops_stragglers: bool = False,
    device: torch.device | str = "cpu",
) -> RoundPlan:
    """Round r's plan: sample K of the N devices (sizes: CPU [N]), draw their work, drop the slow
    ones where the straggler policy says so (drop-fedavg: only for methods that drop
    stragglers), order the rest by steps and draw their mini-batches (batch tensors on
    `device`)."""
    n, k = len(sizes), cfg.clients_per_round
    clients = torch.randperm(n, generator=generator(cfg.seed, "select", r))[:k]
    work = sample_work(cfg, k, generator(cfg.seed, "hetero", r))
    keep = torch.ones(k, dtype=torch.bool)
    policy = cfg.straggler_policy
    if policy == "drop" or (policy == "drop-fedavg" and drops_stragglers):
        keep = ~work.slow
    dropped = clients[~keep].tolist()
    clients, units, slow, tau = clients[keep], work.units[keep], work.slow[keep], work.tau[keep]
    nb = (sizes[clients] + cfg.batch_size - 1) // cfg.batch_size
    steps = units if cfg.local_steps is not None else units * nb
    order = torch.argsort(steps, descending=True, stable=True)
    clients, units, slow, tau, nb, steps = (
        t[order] for t in (clients, units, slow, tau, nb, steps)
    )
    idx, wt = batches(cfg, r, client_indices, clients, nb, steps)
    return RoundPlan(
        clients, units, tau, slow, steps, nb, idx.to(device), wt.to(device), len(dropped), dropped
    )


def batches(cfg: RunConfig, r: int, client_indices, clients, nb, steps):
    """Mini-batch indices [K, S, B] and weights: each device walks through fresh permutations of
    its data, epoch after epoch; the last batch of an epoch may be short (padded, weight 0).

    A device's permutations come from its own stream (seed, round, device), drawn for the full E
    epochs, so its batches do not depend on who else trains this round or on how much of its
    work it finishes: partial work is a prefix of full work.
    """
    bsz = cfg.batch_size
    s_max = int(steps.max()) if len(steps) else 0
    k = len(clients)
    idx = torch.zeros(k, s_max, bsz, dtype=torch.long)
    wt = torch.zeros(k, s_max, bsz, dtype=getattr(torch, cfg.dtype))
    for row, c in enumerate(clients.tolist()):
        members = client_indices[c]
        n_i, nb_i, s_i = len(members), int(nb[row]), int(steps[row])
        n_full = cfg.local_steps if cfg.local_steps is not None else cfg.local_epochs * nb_i
        epochs = math.ceil(max(n_full, s_i) / nb_i)
        gen = generator(cfg.seed, "batches", r, c)
        perms = torch.argsort(torch.rand(epochs, n_i, generator=gen), dim=1)
        # an epoch's nb_i batches: its permutation, the short last batch padded with the
        # permutation's last sample (weight 0)
        pad = nb_i * bsz - n_i
        perms = torch.cat([perms, perms[:, -1:].expand(-1, pad)], 1).view(-1, bsz)
        idx[row, :s_i] = members[perms[:s_i]]
        valid = (torch.arange(nb_i * bsz) < n_i).view(nb_i, bsz)
        epoch_wt = valid.double() / valid.sum(1, keepdim=True)  # [nb_i, B]
        wt[row, :s_i] = epoch_wt.repeat(epochs, 1)[:s_i]
    return idx, wt


def client_batches(plan: RoundPlan, row: int) -> list[list[int]]:
    """The sample indices of each local step of one device, as the engine will draw them."""
    out = []
    for s in range(int(plan.steps[row])):
        idx, wt = plan.batch_idx[row, s], plan.batch_weight[row, s]
        out.append(idx[wt > 0].tolist())
    return out


class PlanAhead:
    """Round r+1's plan built in a background thread while round r trains (a plan is a pure
    function of the config, the data and r: the same plan as built on demand, so the records
    do not change). It takes the planning (per-device permutations, ~25 % of the default run's
    round) off the critical path; a plan asked for out of turn is built on demand."""

    def __init__(self, build: Callable[[int], RoundPlan]):
        self.build = build
        self._round: int | None = None
        self._thread: threading.Thread | None = None
        self._out: RoundPlan | BaseException | None = None

    def get(self, r: int, ahead: bool) -> RoundPlan:
        """Round r's plan; ahead: start building round r+1's."""
        plan = self._take(r)
        if ahead:
            self._start(r + 1)
        return plan

    def _take(self, r: int) -> RoundPlan:
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join()
            if self._round == r:
                if isinstance(self._out, BaseException):
                    raise self._out
                return self._out
        return self.build(r)

    def _start(self, r: int) -> None:
        self._round, self._out = r, None
        threads = torch.get_num_threads()  # a new thread starts from OpenMP's default

        def work():
            torch.set_num_threads(threads)
            try:
                self._out = self.build(r)
            except BaseException as e:  # raised in the thread that asks for the plan
                self._out = e

        self._thread = threading.Thread(target=work, name=f"fedbench-plan-{r}", daemon=True)
        self._thread.start()
