"""FedDyn (Acar et al., ICLR 2021), in the form of the official code (alpemreacar/FedDyn).

Local objective of device i (utils_general.train_feddyn_mdl, spec §4.3):
  f_i(theta) + alpha_i <theta, L_i - theta^t> + ((alpha_i + wd) / 2) ||theta||^2,
  alpha_i = alpha / (n_i / n_bar), n_bar = the mean device size over all N devices,
so the local direction is grad f_i + alpha_i (L_i - theta^t) + alpha_i theta (the code puts
alpha_i into the optimizer's weight decay; the engine adds cfg.weight_decay to the gradient).
After training (client_final): L_i <- L_i + (theta_i - theta^t). Server: theta^{t+1} =
mean_{i in S} theta_i + mean_{j in all N} L_j, an unweighted mean as in the code
(cfg.aggregation is not used).

Signs, checked against the paper. Paper: local objective L_i(theta) - <grad L_i(theta_i^{t-1}),
theta> + (alpha/2) ||theta - theta^t||^2; state grad L_i(theta_i^t) = grad L_i(theta_i^{t-1}) -
alpha (theta_i^t - theta^t); h^t = h^{t-1} - alpha (1/N) sum_S (theta_i^t - theta^t); theta^{t+1}
= mean_S theta_i - h^t / alpha. With L_i = -grad L_i(theta_i^{prev}) / alpha (zeros at start):
the local gradient is grad L_i + alpha L_i + alpha (theta - theta^t), the code's; the state
update is L_i += theta_i - theta^t; h = -alpha mean_{all N} L_j, so theta^{t+1} = mean_S theta_i
+ mean_N L_j. The code's per-device alpha_i only changes the local step (L_i carries no alpha).

Differences from the official code: the engine clips (cfg.grad_clip, the code uses 10) only the
data gradient, before the FedDyn terms are added; the code clips the gradient of the whole loss.
"""

from __future__ import annotations

from dataclasses import dataclass

from fedbench.methods.base import LinearStep, Method, State
from fedbench.methods.params import param
from fedbench.methods.registry import register


@dataclass(frozen=True)
class FedDynParams:
    alpha: float = param(
        0.01,
        "dynamic regulariser weight (> 0); FedLGA grid {0.1,0.01,0.001}",
        "> 0",
        why="the server step is theta = avg - h/alpha",
    )


@register(order=50)
class FedDyn(Method):
    name = "feddyn"
    Params = FedDynParams
    state = (State("L", "clients x dim"),)

    def setup(self, setup):
        super().setup(setup)
        sizes = setup.client_sizes.to(setup.dtype)
        self.alpha_i = self.p.alpha * sizes.mean() / sizes  # [N], fixed by the data

    def client_start(self, ctx):
        a = self.alpha_i[ctx.clients].unsqueeze(1)
        return {"feddyn_alpha": a, "feddyn_lin": a * (self.L[ctx.clients] - ctx.global_w)}

    def linear_step(self):
        # alpha_i w is a per-row decay: the MLP's window trains it batched
        return LinearStep(const="feddyn_lin", decay="feddyn_alpha")

    def local_step(self, ctx, w, grad_fn, local):
        _, g = grad_fn(w)
        return g.add_(local["feddyn_lin"]).addcmul_(local["feddyn_alpha"], w)

    def client_final(self, ctx, res):
        # per-device state from each device's final model, before aggregation
        self.L[ctx.clients] += res.delta
        return res

    def combine(self, ctx, res):
        return res.w.mean(0) + self.L.mean(0), {}
