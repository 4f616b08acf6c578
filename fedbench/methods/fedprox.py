"""FedProx (Li et al., MLSys 2020): local SGD on F_k(w) + (mu/2)||w - w^t||^2.

Local step (litian96/FedProx flearn/optimizer/pgd.py): w <- w - lr (grad f_B(w) + mu (w - w^t)).
Aggregation: the p_i-weighted average of all K local models, partial work included.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fedbench.errors import FedbenchError
from fedbench.methods.base import Method


@dataclass(frozen=True)
class FedProxParams:
    mu: float = field(
        default=1.0,
        metadata={"help": "proximal weight; FedProx grid {0.001,0.01,0.1,1}, FedLGA {0.1,0.5,1}"},
    )

    def __post_init__(self):
        if self.mu < 0:
            raise FedbenchError(f"fedprox: mu must be >= 0, got {self.mu}")


class FedProx(Method):
    name = "fedprox"
    Params = FedProxParams

    def local_step(self, ctx, w, grad_fn, local):
        _, g = grad_fn(w)
        if self.p.mu:
            g.add_(w - ctx.global_w, alpha=self.p.mu)
        return g
