"""FedAvg with an L1 proximal term: an example fedbench plugin (examples/fedavg_l1/README.md).

Each device runs local SGD on F_i(w) + lam ||w - w^t||_1 from the global model w^t, with the
subgradient d = g + lam sign(w - w^t) (sign(0) = 0: the first step is FedAvg's). The server
averages the local models like FedAvg (sum_i p_i w_i). Unlike FedProx's squared term, the L1 term
pulls every coordinate back by the same lr * lam per step however far it moved.

Engine path: sign() is not affine in w, so for lam > 0 the method declares no LinearStep and the
engine calls local_step at every local step (the per-step torch path: no fused SGD, no MLP window
of steps, no compiled small-model loop); at lam = 0 it is FedAvg and declares LinearStep(), so
it takes FedAvg's paths. Stragglers keep their partial work (unlike the FedProx paper's FedAvg,
which drops them under straggler_policy=drop-fedavg): at lam = 0 its rows equal FedProx mu=0's.

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

    def linear_step(self) -> LinearStep | None:
        return LinearStep() if self.p.lam == 0 else None  # sign() is not linear

    def local_step(self, ctx, w, grad_fn, local):
        _, g = grad_fn(w)
        if self.p.lam:
            g.add_((w - ctx.global_w).sign(), alpha=self.p.lam)
        return g
