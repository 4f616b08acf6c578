"""A plain per-client loop: nn.Module copies, a DataLoader and torch.optim.SGD, one device after
another. It is the yardstick the batched engine is tested against (same batches, same numbers)
and timed against (benchmarks/engine_speed.py)."""

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
) -> torch.Tensor:
    """Each device trains alone from the global model; returns the final models [K, D]
    (FedProx's proximal term when mu > 0). `batches` (per device, the index lists of its steps)
    defaults to the plan's."""
    data = engine.data
    dataset = TensorDataset(data.train_x, data.train_y)
    w_global = engine.w
    if batches is None:
        batches = [client_batches(plan, row) for row in range(plan.k)]
    finals = []
    for row in range(plan.k):
        net = engine.model.to_module(w_global)
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
            loss = torch.nn.functional.cross_entropy(net(x), y)
            loss.backward()
            if mu:
                for p, p0 in zip(net.parameters(), ref):
                    p.grad.add_(p.detach() - p0, alpha=mu)
            opt.step()
        finals.append(engine.model.from_module(net))
    return torch.stack(finals)


def reference_round(engine: Engine, r: int, mu: float = 0.0) -> torch.Tensor:
    """One FedAvg/FedProx round by the per-client loop; returns the new global model [D]."""
    plan = engine.plan_round(r)
    ctx = engine.context(r, plan, engine.lr_at(r))
    finals = reference_local(engine, plan, ctx.lr, mu)
    return ctx.weights.to(finals.dtype) @ finals
