"""A plain per-client loop: nn.Module copies, a DataLoader and torch.optim.SGD, one device after
another. It is the yardstick the batched engine is tested against (same batches, same numbers)
and timed against (benchmarks/engine_speed.py).

Modules with BatchNorm train in train mode from the global running statistics, which are then
averaged with the aggregation weights like the parameters. Inputs go through the data's input
pipeline without augmentation (the engine's draws are per batch slot, not reproduced here).

It shares only the round plan with the engine (fedbench.training.round_plan): the engine object
passed in is read for its state (config, data, model, global weights and buffers, method), never
trained.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from torch.utils.data import DataLoader, TensorDataset

from fedbench.training import round_plan as planning
from fedbench.training.round_plan import RoundPlan, client_batches

if TYPE_CHECKING:
    from fedbench.training.engine import Engine

__all__ = ["client_batches", "reference_local", "reference_round"]


def reference_local(
    engine: Engine, plan: RoundPlan, lr: float, mu: float = 0.0, batches=None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Each device trains alone from the global model (and global buffers); returns the final
    models [K, D] and buffers [K, Db] (Db = 0 without BatchNorm). FedProx's proximal term when
    mu > 0. `batches` (per device, the index lists of its steps) defaults to the plan's."""
    data, model = engine.data, engine.model
    dataset = TensorDataset(data.train_x, data.train_y)
    w_global = engine.w
    if batches is None:
        batches = [client_batches(plan, row) for row in range(plan.k)]
    finals, buffers = [], []
    for row in range(plan.k):
        net = model.to_module(w_global, engine.buffers if model.buffer_dim else None).train()
        ref = [p.detach().clone() for p in net.parameters()]
        opt = torch.optim.SGD(
            net.parameters(),
            lr=lr,
            momentum=engine.cfg.momentum,
            weight_decay=engine.cfg.weight_decay,
        )
        loader = DataLoader(dataset, batch_sampler=batches[row])
        for x, y in loader:
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(net(data.train_transform(x)), y)
            loss.backward()
            if mu:
                for p, p0 in zip(net.parameters(), ref):
                    p.grad.add_(p.detach() - p0, alpha=mu)
            opt.step()
        finals.append(model.from_module(net))
        buffers.append(model.buffers_from_module(net).to(w_global))
    return torch.stack(finals), torch.stack(buffers)


def reference_round(engine: Engine, r: int, mu: float = 0.0) -> tuple[torch.Tensor, torch.Tensor]:
    """One FedAvg/FedProx round by the per-client loop; returns the new global model [D] and
    buffers [Db] (the aggregation weights' averages)."""
    cfg, data = engine.cfg, engine.data
    drops = engine.method.drops_stragglers
    plan = planning.plan_round(cfg, r, data.sizes, data.client_indices, drops, engine.device)
    finals, buffers = reference_local(engine, plan, planning.lr_at(cfg, r), mu)
    n_samples = data.sizes[plan.clients].to(finals.device, finals.dtype)
    p = planning.aggregation_weights(cfg, n_samples)
    return p @ finals, p @ buffers
