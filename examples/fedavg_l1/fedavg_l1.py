"""FedAvg with an L1 proximal term: an example fedbench plugin (examples/fedavg_l1/README.md).

Each device runs local SGD on F_i(w) + lam ||w - w^t||_1 from the global model w^t, with the
subgradient d = g + lam sign(w - w^t) (sign(0) = 0: the first step is FedAvg's). The server
averages the local models like FedAvg (sum_i p_i w_i). Unlike FedProx's squared term, the L1 term
pulls every coordinate back by the same lr * lam per step however far it moved.

Engine path: the method only adds a term to the local gradient, so it writes grad_term instead
of local_step; the default linear_step then declares LinearStep(term=True) and the engine trains
its rounds on the fused batched path (the model's fused SGD step, then w -= lr term, at each
step's w) rather than calling local_step every step; at lam = 0 it declares LinearStep(), so
it takes FedAvg's paths and numbers. Stragglers keep their partial work (unlike the FedProx
paper's FedAvg, which drops them under straggler_policy=drop-fedavg): at lam = 0 its rows equal
FedProx mu=0's.

Load it with `--plugin examples/fedavg_l1/fedavg_l1.py` on any fedbench command.
"""

from __future__ import annotations

from dataclasses import dataclass

from fedbench.methods import Method, register
from fedbench.methods.base import LinearStep
from fedbench.methods.params import param


@dataclass(frozen=True)
class FedAvgL1Params:
    lam: float = param(0.01, "weight of the L1 proximal term lam ||w - w^t||_1 (0: FedAvg)", ">= 0")


@register
class FedAvgL1(Method):
    """FedAvg with an L1 proximal term: local d = g + lam sign(w - w^t) (example plugin)."""

    name = "fedavg_l1"
    version = 1  # bump when what it computes changes (stored runs then stop counting as done)
    Params = FedAvgL1Params
    reduces_to_fedavg = {"lam": 0.0}
    local_step_params = ("lam",)

    def linear_step(self) -> LinearStep:
        # lam = 0: FedAvg's step and paths (the compiled loop, the MLP window), bit for bit
        return LinearStep(term=bool(self.p.lam))

    def grad_term(self, ctx, w, local):
        if not self.p.lam:
            return None
        return (w - ctx.global_w).sign_().mul_(self.p.lam)
