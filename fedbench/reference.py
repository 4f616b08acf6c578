"""A plain per-client loop: nn.Module copies, a DataLoader and torch.optim.SGD, one device after
another. It is the yardstick the batched engine is tested against (same batches, same numbers)
and timed against (benchmarks/engine_speed.py).

Modules with BatchNorm train in train mode from the global running statistics, which are then
averaged with the aggregation weights like the parameters. Inputs go through the data's input
pipeline without augmentation (the engine's draws are per batch slot, not reproduced here).
"""

from __future__ import annotations

import torch
from torch.utils.data import DataLoader, TensorDataset

from fedbench.engine import Engine, RoundPlan


def client_batches(plan: RoundPlan, row: int) -> list[list[int]]:
    """The sample indices of each local step of one device, as the engine will draw them."""
    out = []
    for s in range(int(plan.steps[row])):
        idx, wt = plan.batch_idx[row, s], plan.batch_weight[row, s]
        out.append(idx[wt > 0].tolist())
    return out


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
    plan = engine.plan_round(r)
    ctx = engine.context(r, plan, engine.lr_at(r))
    finals, buffers = reference_local(engine, plan, ctx.lr, mu)
    p = ctx.weights.to(finals.dtype)
    return p @ finals, p @ buffers
