"""The server step every method ends its round with: a server optimizer on the pseudo-gradient,
and the registry of server optimizers (a plugin of one class adds one, as a method plugin does).

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

A new server rule is a subclass of ServerOpt with a name, its own Params (a dataclass of
``param`` fields: `--set NAME=...` reaches them, stored as cfg.server_params) and ``step``,
registered with ``@register_server_optimizer`` (examples/fedexp/ is one, FedExP).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, ClassVar

from fedbench.config import ALIASES, FIELD_TYPES, allow_name
from fedbench.errors import FedbenchError
from fedbench.lazy import torch
from fedbench.param_fields import NoParams, check_ranges, coerce_params

# state names the server optimizer may hold on a method (no method may declare them)
STATE_NAMES = ("server_m", "server_v")


@dataclass(frozen=True)
class ClientModels:
    """What the server step may read of the round besides x^t and x': the sampled devices'
    local models [K, D] and their aggregation weights p_i [K] (FedExP's step size reads them)."""

    w: torch.Tensor
    weights: torch.Tensor


@dataclass(frozen=True)
class ServerOpt:
    """One run's server step (built each round from the method and config: it holds no state;
    what it keeps across rounds lives on the method, under the names of `state`)."""

    name: ClassVar[str] = ""
    Params: ClassVar[type] = NoParams  # its own parameters (cfg.server_params)
    version: ClassVar[int] = 1  # bump when what it computes changes (part of a run's identity)
    # the flat config fields it reads (others left at their defaults: a set one is an error)
    reads: ClassVar[tuple[str, ...]] = ()

    lr: float = 1.0
    momentum: float = 0.0  # sgd's beta
    beta1: float = 0.9
    beta2: float = 0.99
    eps: float = 1e-3  # tau
    p: Any = NoParams()  # its Params

    @property
    def state(self) -> tuple[tuple[str, float], ...]:
        """(name, initial fill) of each [D] tensor this optimizer keeps across rounds."""
        return ()

    def step(
        self, holder: Any, w: torch.Tensor, new_w: torch.Tensor, clients: ClientModels | None
    ) -> torch.Tensor:
        """x^{t+1} from x^t = w and the method's x' = new_w; the state is read from and written
        to `holder`'s attributes (the method's), under the names of `state`."""
        raise NotImplementedError


# name -> class, in registration order
SERVER_OPTIMIZERS: dict[str, type[ServerOpt]] = {}


def register_server_optimizer(cls: type[ServerOpt]) -> type[ServerOpt]:
    """Class decorator: check a ServerOpt subclass and add it to SERVER_OPTIMIZERS (and to the
    names `server_opt=` accepts)."""
    where = f"server optimizer class {getattr(cls, '__name__', cls)}"
    if not (isinstance(cls, type) and issubclass(cls, ServerOpt)) or not cls.name:
        raise FedbenchError(f"{where}: must subclass ServerOpt and set a name")
    if SERVER_OPTIMIZERS.get(cls.name, cls) is not cls:
        raise FedbenchError(f"{where}: server_opt name {cls.name!r} is already registered")
    for f in dataclasses.fields(cls.Params):
        if f.name in FIELD_TYPES or f.name in ALIASES:
            raise FedbenchError(f"{cls.name}: parameter {f.name!r} is also a config field")
        if f.default is dataclasses.MISSING or not f.metadata.get("help"):
            raise FedbenchError(f"{cls.name}: parameter {f.name!r} needs a default and help")
    SERVER_OPTIMIZERS[cls.name] = cls
    allow_name("server_opt", cls.name)
    return cls


def server_opt_class(name: str) -> type[ServerOpt]:
    if name not in SERVER_OPTIMIZERS:
        raise FedbenchError(
            f"unknown server_opt {name!r}; choose one of: {', '.join(SERVER_OPTIMIZERS)}"
        )
    return SERVER_OPTIMIZERS[name]


def server_params(name: str, values: dict[str, Any]) -> Any:
    """A server optimizer's Params from cfg.server_params (checked: names, types, ranges)."""
    cls = server_opt_class(name)
    params = coerce_params(cls.Params, values, f"server_opt {name}", name)
    check_ranges(params, name)
    return params


@register_server_optimizer
@dataclass(frozen=True)
class SGD(ServerOpt):
    """x <- x + eta m, m <- beta m + Delta (FedAvgM at beta = 0.9; x' itself at eta 1, beta 0)."""

    name: ClassVar[str] = "sgd"
    reads: ClassVar[tuple[str, ...]] = ("server_momentum",)

    @property
    def state(self) -> tuple[tuple[str, float], ...]:
        return (("server_m", 0.0),) if self.momentum else ()

    def step(self, holder, w, new_w, clients=None):
        if self.lr == 1 and not self.momentum:
            return new_w
        u = new_w - w
        if self.momentum:
            holder.server_m = holder.server_m.mul_(self.momentum).add_(u)
            u = holder.server_m
        return w + self.lr * u


@dataclass(frozen=True)
class Adaptive(ServerOpt):
    """Reddi et al.'s adaptive server step (Alg. 2); the subclass names v's update."""

    reads: ClassVar[tuple[str, ...]] = ("server_beta1", "server_beta2", "server_eps")

    @property
    def state(self) -> tuple[tuple[str, float], ...]:
        return (("server_m", 0.0), ("server_v", self.eps**2))

    def second_moment(self, v: torch.Tensor, d2: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def step(self, holder, w, new_w, clients=None):
        delta = new_w - w
        holder.server_m = holder.server_m.mul_(self.beta1).add_(delta, alpha=1 - self.beta1)
        holder.server_v = self.second_moment(holder.server_v, delta * delta)
        return w + self.lr * holder.server_m / (holder.server_v.sqrt() + self.eps)


@register_server_optimizer
@dataclass(frozen=True)
class Adagrad(Adaptive):
    name: ClassVar[str] = "adagrad"
    reads: ClassVar[tuple[str, ...]] = ("server_beta1", "server_eps")

    def second_moment(self, v, d2):
        return v.add_(d2)


@register_server_optimizer
@dataclass(frozen=True)
class Adam(Adaptive):
    name: ClassVar[str] = "adam"

    def second_moment(self, v, d2):
        return v.mul_(self.beta2).add_(d2, alpha=1 - self.beta2)


@register_server_optimizer
@dataclass(frozen=True)
class Yogi(Adaptive):
    name: ClassVar[str] = "yogi"

    def second_moment(self, v, d2):
        return v.sub_((1 - self.beta2) * d2 * torch.sign(v - d2))


def server_optimizer(own_lr: float, cfg: Any) -> ServerOpt:
    """The server step of a run: `own_lr` the method's own server learning rate (1 when it has
    none), `cfg` the RunConfig (None: plain sgd at the method's own rate, as in unit tests)."""
    if cfg is None:
        return SGD(lr=own_lr)
    return server_opt_class(cfg.server_opt)(
        lr=own_lr * cfg.server_lr,
        momentum=cfg.server_momentum,
        beta1=cfg.server_beta1,
        beta2=cfg.server_beta2,
        eps=cfg.server_eps,
        p=server_params(cfg.server_opt, cfg.server_params),
    )


def check_server_opt(cfg: Any) -> None:
    """The run's server optimizer: registered, its parameters valid, and the flat settings
    another optimizer reads left at their defaults (set, they would be silently unused)."""
    chosen = server_opt_class(cfg.server_opt)
    server_params(cfg.server_opt, cfg.server_params)
    defaults = {f.name: f.default for f in dataclasses.fields(cfg)}
    for name in dict.fromkeys(n for c in SERVER_OPTIMIZERS.values() for n in c.reads):
        if name not in chosen.reads and getattr(cfg, name) != defaults[name]:
            opts = [n for n, c in SERVER_OPTIMIZERS.items() if name in c.reads]
            raise FedbenchError(
                f"{name} applies to server_opt={' | '.join(opts)}, not server_opt="
                f"{cfg.server_opt}; leave it out or choose one of those"
            )


def server_param_names() -> dict[str, str]:
    """Each parameter name of a registered server optimizer -> the optimizer (`--set NAME=`)."""
    return {f.name: n for n, c in SERVER_OPTIMIZERS.items() for f in dataclasses.fields(c.Params)}
