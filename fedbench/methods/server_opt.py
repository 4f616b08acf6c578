"""The server step every method ends its round with: a server optimizer on the pseudo-gradient.

A method's ``combine`` gives its new global model x' at server learning rate 1. The server step
takes Delta = x' - x^t as the round's pseudo-gradient (for FedAvg: the p_i-weighted mean of the
client deltas Delta_i) and applies the optimizer the config names, so FedAvgM, FedAdam, FedYogi
and FedAdagrad are settings of any method (``--set server_opt=adam --set server_lr=0.01``), not
method classes:

  sgd (default)   m <- beta m + Delta (beta = server_momentum; no m at beta = 0),
                  x <- x + eta m. beta = 0.9 is FedAvgM (Hsu et al. 2019); at eta = 1, beta = 0
                  the step returns x' itself, bit for bit (every stored run).
  adagrad, adam, yogi  Reddi et al., "Adaptive Federated Optimization" (ICLR 2021), Alg. 2:
                  m <- b1 m + (1 - b1) Delta
                  adagrad  v <- v + Delta^2
                  adam     v <- b2 v + (1 - b2) Delta^2
                  yogi     v <- v - (1 - b2) Delta^2 sign(v - Delta^2)
                  x <- x + eta m / (sqrt(v) + tau)
                  with m_{-1} = 0 and v_{-1} = tau^2 (Alg. 2 asks v_{-1} >= tau^2; equality
                  here) and no bias correction (Alg. 2 has none; Flower's FedAdam adds one, and
                  starts v at 0). b1 = server_beta1, b2 = server_beta2, tau = server_eps.

eta = cfg.server_lr times the method's own server learning rate (a paper's eta_g,
``Method.server_lr_param``). The optimizer's state (server_m, server_v: [D] each) is declared
here and held by the method like its own state, so it is part of the method's state_dict
(checkpoints). This module knows nothing of methods; fedbench.methods.base composes it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fedbench.lazy import torch

# the server optimizers (config.SERVER_OPTS lists the same names, torch-free, for validation)
OPTIMIZERS = ("sgd", "adagrad", "adam", "yogi")
# state names the server optimizer may hold on a method (no method may declare them)
STATE_NAMES = ("server_m", "server_v")


@dataclass(frozen=True)
class ServerOpt:
    """One run's server step (built each round from the method and config: it holds no state)."""

    name: str = "sgd"
    lr: float = 1.0
    momentum: float = 0.0  # sgd's beta
    beta1: float = 0.9
    beta2: float = 0.99
    eps: float = 1e-3  # tau

    @property
    def state(self) -> tuple[tuple[str, float], ...]:
        """(name, initial fill) of each [D] tensor this optimizer keeps across rounds."""
        if self.name == "sgd":
            return (("server_m", 0.0),) if self.momentum else ()
        return (("server_m", 0.0), ("server_v", self.eps**2))

    def step(self, holder: Any, w: torch.Tensor, new_w: torch.Tensor) -> torch.Tensor:
        """x^{t+1} from x^t = w and the method's x' = new_w; the state is read from and written
        to `holder`'s attributes (the method's), under the names of `state`."""
        if self.name == "sgd":
            return self._sgd(holder, w, new_w)
        delta = new_w - w
        holder.server_m = holder.server_m.mul_(self.beta1).add_(delta, alpha=1 - self.beta1)
        holder.server_v = SECOND_MOMENT[self.name](holder.server_v, delta * delta, self.beta2)
        return w + self.lr * holder.server_m / (holder.server_v.sqrt() + self.eps)

    def _sgd(self, holder: Any, w: torch.Tensor, new_w: torch.Tensor) -> torch.Tensor:
        if self.lr == 1 and not self.momentum:
            return new_w
        u = new_w - w
        if self.momentum:
            holder.server_m = holder.server_m.mul_(self.momentum).add_(u)
            u = holder.server_m
        return w + self.lr * u


def _adagrad(v: torch.Tensor, d2: torch.Tensor, beta2: float) -> torch.Tensor:
    return v.add_(d2)


def _adam(v: torch.Tensor, d2: torch.Tensor, beta2: float) -> torch.Tensor:
    return v.mul_(beta2).add_(d2, alpha=1 - beta2)


def _yogi(v: torch.Tensor, d2: torch.Tensor, beta2: float) -> torch.Tensor:
    return v.sub_((1 - beta2) * d2 * torch.sign(v - d2))


# v_t from v_{t-1} and Delta^2, per adaptive optimizer (Reddi et al., Alg. 2)
SECOND_MOMENT = {"adagrad": _adagrad, "adam": _adam, "yogi": _yogi}


def server_optimizer(own_lr: float, cfg: Any) -> ServerOpt:
    """The server step of a run: `own_lr` the method's own server learning rate (1 when it has
    none), `cfg` the RunConfig (None: plain sgd at the method's own rate, as in unit tests)."""
    if cfg is None:
        return ServerOpt(lr=own_lr)
    return ServerOpt(
        name=cfg.server_opt,
        lr=own_lr * cfg.server_lr,
        momentum=cfg.server_momentum,
        beta1=cfg.server_beta1,
        beta2=cfg.server_beta2,
        eps=cfg.server_eps,
    )
