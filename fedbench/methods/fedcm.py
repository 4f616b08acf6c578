"""FedCM (Xu et al. 2021): client-level momentum, local steps along alpha g + (1 - alpha) Delta_t.

Local step (spec §4.4): x <- x - lr (alpha g + (1 - alpha) Delta_t), with Delta_t the server's
state, frozen during the round, and g the engine's mini-batch gradient (weight decay included, so
it is scaled by alpha too; FL-Simulator's optimizer applies weight decay unscaled, a difference of
(1 - alpha) wd x that vanishes at the default wd = 0; FL-Simulator also clips the whole direction,
the engine only g).
Server, with K_i the SGD steps device i actually ran and eta_l the round's lr:
  Delta_{t+1} = sum_i p_i (x_t - x_i) / (eta_l K_i),   x_{t+1} = x_t - eta_g sum_i p_i (x_t - x_i),
p_i = ctx.weights (the paper's mean under aggregation=uniform), Delta_0 = 0. When all K_i equal K
this is the paper's x_{t+1} = x_t - eta_g eta_l K Delta_{t+1}; with partial work each device's
update enters the model as it is, and Delta is its per-step average. alpha = 1 is FedAvg.
FedLGA's Table IV calls alpha "beta" (grid {0.01, 0.1, 0.5}).
"""

from __future__ import annotations

from dataclasses import dataclass

from fedbench.methods.base import LinearStep, Method, State, weighted_mean
from fedbench.methods.params import param
from fedbench.methods.registry import register


@dataclass(frozen=True)
class FedCMParams:
    alpha: float = param(
        0.1, "weight of the local gradient in [0, 1]; FedLGA's beta {0.01,0.1,0.5}", "in [0, 1]"
    )
    eta_g: float = param(1.0, "server learning rate (= server_lr); FedCM uses 1", "> 0")


@register(order=60)
class FedCM(Method):
    name = "fedcm"
    Params = FedCMParams
    state = (State("delta", "dim"),)
    server_lr_param = "eta_g"
    reduces_to_fedavg = {"alpha": 1.0}

    def client_start(self, ctx):
        # the fixed part (1 - alpha) Delta_t of every device's direction (a view, no copy)
        return {"fedcm_pull": (self.delta * (1.0 - self.p.alpha)).expand(ctx.k, -1)}

    def linear_step(self):
        return LinearStep(scale=self.p.alpha, const="fedcm_pull") if self.p.alpha else None

    def local_step(self, ctx, w, grad_fn, local):
        _, g = grad_fn(w)
        return g.mul_(self.p.alpha).add_(local["fedcm_pull"])

    def combine(self, ctx, res):
        diff = ctx.global_w - res.w  # [K, D]
        k_eta = (ctx.steps.to(res.w.dtype) * ctx.lr).unsqueeze(1)
        self.delta = weighted_mean(diff / k_eta, ctx.weights)
        # x_t - eta_g sum_i p_i (x_t - x_i): eta_g is the server step's learning rate
        return ctx.global_w - weighted_mean(diff, ctx.weights), {}
