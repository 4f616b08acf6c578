"""MimeLite (Karimireddy et al., Mime 2020): local steps mimic server SGD with momentum m.

Local step (spec §4.5, §7.9): y <- y - lr ((1 - beta) g + beta m), with m the server momentum,
frozen during the round (the Mime paper's form, default). `damped=false` gives google/fedjax's
mime_lite with optax SGD momentum: the local direction g + beta m and the server update
m <- g_bar + beta m (optax's trace, applied to the same frozen state).
Server: x <- x - eta_s sum_i p_i (x - y_i) (p_i = ctx.weights), then
  m <- (1 - beta) g_bar + beta m,  g_bar = sum_i (n_i / sum n) grad F_i(x^t),
the example-weighted full-batch gradient at x^t over the sampled devices' data (fedjax's
server_grads), plus cfg.weight_decay x^t so that it is the gradient of the same regularised loss
the devices train on (fedjax's `regularizer` enters both). It is not clipped. It costs each
sampled device one extra pass over its data: recorded per round as extra_grad_samples (sum n_i)
and extra_grad_passes (devices). beta = 0 is FedAvg (with eta_s = 1).
Local heavy-ball momentum (cfg.momentum) is applied on top by the engine; Mime means it to be 0.
"""

from __future__ import annotations

from dataclasses import dataclass

from fedbench.methods.base import EXTRA_GRAD_FIELDS, LinearStep, Method, State, weighted_mean
from fedbench.methods.params import param
from fedbench.methods.registry import register


@dataclass(frozen=True)
class MimeLiteParams:
    beta: float = param(0.1, "server momentum in [0, 1]; FedLGA grid {0.01,0.1,0.5}", "in [0, 1]")
    eta_s: float = param(1.0, "server learning rate (= server_lr); Mime uses 1", "> 0")
    damped: bool = param(True, "true: (1-beta) g + beta m (Mime paper); false: g + beta m (fedjax)")


@register(order=70)
class MimeLite(Method):
    name = "mimelite"
    Params = MimeLiteParams
    state = (State("m", "dim"),)
    server_lr_param = "eta_s"
    reduces_to_fedavg = {"beta": 0.0}
    record_fields = EXTRA_GRAD_FIELDS

    @property
    def _grad_scale(self) -> float:
        return 1.0 - self.p.beta if self.p.damped else 1.0

    def client_start(self, ctx):
        # the fixed part beta m of every device's direction (a view, no copy)
        return {"mimelite_pull": (self.m * self.p.beta).expand(ctx.k, -1)}

    def linear_step(self):
        scale = self._grad_scale
        return LinearStep(scale=scale, const="mimelite_pull") if scale else None

    def local_step(self, ctx, w, grad_fn, local):
        _, g = grad_fn(w)
        return g.mul_(self._grad_scale).add_(local["mimelite_pull"])

    def combine(self, ctx, res):
        x = ctx.global_w
        new_w = x + weighted_mean(res.delta, ctx.weights)  # the server step adds eta_s
        _, grads = ctx.services.full_batch_grads(x, ctx.clients)
        g_bar = weighted_mean(grads, ctx.n_samples / ctx.n_samples.sum())
        if ctx.cfg.weight_decay:
            g_bar = g_bar + ctx.cfg.weight_decay * x
        self.m = self._grad_scale * g_bar + self.p.beta * self.m
        extra = {"extra_grad_samples": int(ctx.n_samples.sum()), "extra_grad_passes": ctx.k}
        return new_w, extra
