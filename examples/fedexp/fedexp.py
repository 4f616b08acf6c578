"""FedExP's server step size: an example fedbench server-optimizer plugin (README.md here).

Jhunjhunwala, Wang and Joshi, "FedExP: Speeding up Federated Averaging via Extrapolation" (ICLR
2023): the server extrapolates, as POCS does, by a step size it reads from the round itself.
With Delta_i = x_i - x^t each sampled device's update and Delta = x' - x^t the aggregate (for
FedAvg sum_i p_i Delta_i), the round ends with

    eta_t = max(1, sum_i p_i ||Delta_i||^2 / (2 (||Delta||^2 + epsilon)))
    x^{t+1} = x^t + server_lr * eta_t * Delta

The paper writes the uniform average (1/M) sum_i ||Delta_i||^2 / (2 (||Delta||^2 + eps)) and
x^{t+1} = x^t - eta_g Delta with Delta = x^t - mean_i x_i; p_i are the run's aggregation weights
(aggregation=uniform gives the paper's 1/M). eta_t = 1 is FedAvg's step: where the devices agree
(every Delta_i = Delta) the ratio is 1/2 and the step is FedAvg's. Not done here: the paper
evaluates the mean of the last two iterates (x^t + x^{t+1}) / 2; fedbench evaluates x^{t+1}.

Load it with `--plugin examples/fedexp/fedexp.py --set server_opt=fedexp` on any command; it
works after any method's combine (the x' it is given) and keeps no state across rounds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from fedbench.errors import FedbenchError
from fedbench.methods.params import param
from fedbench.methods.server_opt import ServerOpt, register_server_optimizer


@dataclass(frozen=True)
class FedExPParams:
    epsilon: float = param(1e-3, "epsilon in ||Delta||^2 + epsilon (FedExP: 1e-3)", "> 0")


@register_server_optimizer
@dataclass(frozen=True)
class FedExP(ServerOpt):
    """FedExP: server step size max(1, sum_i p_i ||Delta_i||^2 / 2(||Delta||^2 + eps))."""

    name: ClassVar[str] = "fedexp"
    Params: ClassVar[type] = FedExPParams
    version: ClassVar[int] = 1  # bump when what it computes changes

    def step_size(self, w, new_w, clients) -> float:
        if clients is None:
            raise FedbenchError("server_opt=fedexp reads the round's device models; none given")
        delta = new_w - w
        spread = clients.weights.to(w.dtype) @ (clients.w - w).square().sum(dim=1)
        return max(1.0, float(spread / (2 * (delta.square().sum() + self.p.epsilon))))

    def step(self, holder, w, new_w, clients=None):
        return w + (self.lr * self.step_size(w, new_w, clients)) * (new_w - w)
