"""FedNova (Wang et al., NeurIPS 2020): normalized averaging of local updates.

Local solver (JYWa/FedNova distoptim/FedNova.py, spec §4.1): the engine's SGD, where cfg.momentum
is FedNova's rho and cfg.weight_decay its wd, plus FedNova's proximal term mu (w - w^t). The engine
adds the proximal term *inside* the momentum buffer (buf = rho buf + g + mu (w - w^t)); so does
the official code, whose `d_p = buf; d_p.add_(mu, ...)` updates the buffer in place.

Normaliser a_i (the code's recurrence, applied once per local step of the S_i steps device i
actually ran; with both momentum and mu nonzero both lines apply, as in the code):
  momentum: c <- rho c + 1, a <- a + c;   prox: a <- a (1 - lr mu) + 1;   plain SGD: a <- a + 1.
It depends only on (S_i, lr, rho, mu), so the server computes it from ctx.steps.

Server: cum_i = w^t - w_i (= lr times the sum of the local directions),
  tau_eff = sum_i p_i a_i (the paper's ||a_i||_1, spec §7.7, default `tau_eff=paper`), or with
  `tau_eff=code` sum_i p_i S_i when mu != 0 (the official code's choice),
  D = sum_i p_i (tau_eff / a_i) cum_i, and w^{t+1} = w^t - D; with server momentum gmf > 0,
  buf <- gmf buf + D / lr and w^{t+1} = w^t - lr buf (the code's global momentum buffer).
  gmf is not the server step's server_momentum (m <- beta m - D, w^{t+1} = w^t + m): the
  code's buffer is in gradient units, so the two differ under lr decay; set only one (nor with
  an adaptive server_opt, whose m is a momentum too).
p_i = ctx.weights (n_i / sum n by default, the code's `ratio`). With mu = 0, no momentum and equal
S_i this is FedAvg. Records tau_eff and a_mean (the mean a_i) per round.
"""

from __future__ import annotations

from dataclasses import dataclass

from fedbench.errors import FedbenchError
from fedbench.lazy import torch
from fedbench.methods.base import LinearStep, Method, RecordField, State, weighted_mean
from fedbench.methods.params import param
from fedbench.methods.registry import register

TAU_EFF = ("paper", "code")


@dataclass(frozen=True)
class FedNovaParams:
    mu: float = param(
        0.0, "proximal weight of the local solver; FedLGA grid {0.001,0.005,0.01}", ">= 0"
    )
    gmf: float = param(0.0, "server momentum factor in [0, 1); JYWa/FedNova default 0", "in [0, 1)")
    tau_eff: str = param("paper", "paper: tau_eff = sum p_i a_i; code: sum p_i S_i when mu != 0")

    def __post_init__(self):
        if self.tau_eff not in TAU_EFF:
            raise FedbenchError(
                f"fednova: tau_eff must be one of: {', '.join(TAU_EFF)}; got {self.tau_eff!r}"
            )


def normalisers(max_steps: int, lr: float, rho: float, mu: float) -> list[float]:
    """a after s local steps, for s = 0..max_steps (JYWa/FedNova's per-step recurrence)."""
    a, c, out = 0.0, 0.0, [0.0]
    etamu = lr * mu
    for _ in range(max_steps):
        if rho:
            c = rho * c + 1.0
            a += c
        if etamu:
            a = a * (1.0 - etamu) + 1.0
        if not rho and not etamu:
            a += 1.0
        out.append(a)
    return out


@register(order=30)
class FedNova(Method):
    name = "fednova"
    Params = FedNovaParams
    # the code's global momentum buffer (gmf), in gradient units: buf <- gmf buf + D / lr
    state = (State("buf", "dim"),)
    reduces_to_fedavg = {"mu": 0.0}  # with equal S_i and no local momentum
    record_fields = (
        RecordField("tau_eff", "float64", "steps", "the effective number of local steps"),
        RecordField("a_mean", "float64", "", "mean of the devices' normalisers |a_i|_1"),
    )

    @classmethod
    def check_config(cls, params, cfg):
        super().check_config(params, cfg)
        if params.gmf and (cfg.server_momentum or cfg.server_opt != "sgd"):
            raise FedbenchError(
                f"fednova: gmf and server_momentum / server_opt={cfg.server_opt} are both "
                "server momentum; set only one"
            )

    def linear_step(self):
        return LinearStep(mu=self.p.mu)

    def local_step(self, ctx, w, grad_fn, local):
        _, g = grad_fn(w)
        if self.p.mu:
            g.add_(w - ctx.global_w, alpha=self.p.mu)
        return g

    def combine(self, ctx, res):
        steps = ctx.steps.tolist()
        table = normalisers(max(steps), ctx.lr, ctx.cfg.momentum, self.p.mu)
        dtype, dev = res.w.dtype, res.w.device
        a = torch.tensor([table[s] for s in steps], dtype=dtype, device=dev)
        p = ctx.weights.to(dtype)
        if self.p.tau_eff == "code" and self.p.mu:
            tau_eff = float(p @ ctx.steps.to(dtype))
        else:
            tau_eff = float(p @ a)
        d = weighted_mean(ctx.global_w - res.w, p * tau_eff / a)
        if self.p.gmf:
            self.buf = self.buf * self.p.gmf + d / ctx.lr
            new_w = ctx.global_w - ctx.lr * self.buf
        else:
            new_w = ctx.global_w - d
        return new_w, {"tau_eff": tau_eff, "a_mean": float(a.mean())}
