"""SCAFFOLD (Karimireddy et al., ICML 2020), option II control variates.

Local step (spec §4.2): y <- y - lr (g - c_i + c), with g the engine's mini-batch gradient (weight
decay and clipping included) and c_i, c frozen during the round.
After local training (client_final), with K_i the SGD steps device i actually ran (partial work
included) and eta_l = the round's lr:  c_i+ = c_i - c + (x - y_i) / (K_i eta_l), and
c <- c + (1/N) sum_{i in S} (c_i+ - c_i), N = all devices.
Server: x <- x + eta_g sum_i p_i (y_i - x) with p_i = ctx.weights (the paper's mean over S under
aggregation=uniform).
State: c [D] and c_i [N, D], zeros at the start; in round 1 SCAFFOLD is FedAvg.

FedLGA's grid "local variance control c in {5, 10, 20}" (TCYB Table IV) has no clear meaning in
SCAFFOLD: c is a control variate, not a hyperparameter. It cannot be reproduced (spec §7.6); this
is standard option II with eta_g = 1. Unlike the FedDyn repository's baseline, c_i is not
reweighted by n_i / n_bar and K_i is the real step count, not E ceil(n_bar / B).
"""

from __future__ import annotations

from dataclasses import dataclass

from fedbench.methods.base import LinearStep, Method, State, weighted_mean
from fedbench.methods.params import param
from fedbench.methods.registry import register


@dataclass(frozen=True)
class ScaffoldParams:
    eta_g: float = param(1.0, "server learning rate (= server_lr); SCAFFOLD uses 1", "> 0")


@register(order=40)
class Scaffold(Method):
    name = "scaffold"
    Params = ScaffoldParams
    state = (State("c", "dim"), State("c_i", "clients x dim"))
    server_lr_param = "eta_g"
    local_step_params = ()  # eta_g is the server's

    def client_start(self, ctx):
        # the correction c - c_i of each sampled device; the engine slices it to the active rows
        return {"scaffold_corr": self.c - self.c_i[ctx.clients]}

    def linear_step(self):
        return LinearStep(const="scaffold_corr")

    def local_step(self, ctx, w, grad_fn, local):
        _, g = grad_fn(w)
        return g.add_(local["scaffold_corr"])

    def client_final(self, ctx, res):
        # each device's c_i+ from its final model, and c's share of the change (per-device
        # state: updated here, before aggregation, as FedJAX's client_final does)
        x, ids = ctx.global_w, ctx.clients
        k_eta = (ctx.steps.to(res.w.dtype) * ctx.lr).unsqueeze(1)
        c_old = self.c_i[ids]
        c_new = c_old - self.c + (x - res.w) / k_eta
        self.c = self.c + (c_new - c_old).sum(0) / self.n_clients
        self.c_i[ids] = c_new
        return res

    def combine(self, ctx, res):
        # x + eta_g sum_i p_i (y_i - x): eta_g is the server step's learning rate
        return ctx.global_w + weighted_mean(res.delta, ctx.weights), {}
