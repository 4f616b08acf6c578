"""FedSAM (Qu et al., ICML 2022): local sharpness-aware minimisation, then plain averaging.

Each local step (spec §4.6; woodenchild95/FL-Simulator's ESAM): g = grad f_B(w);
eps = r g / (|g| + 1e-7), the norm over each device's whole flattened parameter vector;
g' = grad f_B(w + eps) on the same mini-batch; step with g' (w itself is never moved to w + eps,
so there is nothing to restore). Server: the p_i-weighted average (eta_g = 1).

The engine's grad_fn adds weight decay wd * v to the gradient it returns; FedSAM's ascent uses the
loss gradient alone and the step decays w, not w + eps, so both weight-decay terms are taken back
out (g - wd w for the ascent direction, g' - wd eps for the step). Gradient clipping (grad_clip)
only rescales g, so eps is unchanged by it; g' is clipped as in FL-Simulator.

Cost: two gradient evaluations per step, both counted in the records' grad_evals. Compare FedSAM
with other methods by gradient evaluations, or give it E/2 local epochs (spec §7.8: FedLGA compares
"by operation number").
"""

from __future__ import annotations

from dataclasses import dataclass

from fedbench.methods.base import LinearStep, Method
from fedbench.methods.params import param
from fedbench.methods.registry import register


@dataclass(frozen=True)
class FedSAMParams:
    r: float = param(0.1, "perturbation radius rho of SAM; FedLGA grid {0.1,0.5,0.9}", ">= 0")


@register(order=80)
class FedSAM(Method):
    name = "fedsam"
    Params = FedSAMParams
    reduces_to_fedavg = {"r": 0.0}

    def linear_step(self):
        # the MLP's window runs both passes batched; r = 0 keeps its two passes, stepwise
        return LinearStep(ascent=self.p.r) if self.p.r else None

    def local_step(self, ctx, w, grad_fn, local):
        wd = ctx.cfg.weight_decay
        _, g = grad_fn(w)
        if wd:
            g.sub_(w, alpha=wd)
        eps = g.mul_(self.p.r / (g.norm(dim=1, keepdim=True) + 1e-7))
        _, g2 = grad_fn(w + eps)
        if wd:
            g2.sub_(eps, alpha=wd)
        return g2
