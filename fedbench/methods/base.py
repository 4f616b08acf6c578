"""The method interface: a local-step transform, a server rule and their state.

The engine owns the round loop (sampling, heterogeneity, mini-batches, masking, timing,
evaluation). A method only says:

- ``client_start(ctx)``: per-round local state for the K sampled devices, a dict of tensors whose
  first dimension is K (momentum buffers, control variates gathered for these devices, ...);
- ``local_step(ctx, w, grad_fn, local)``: the update direction d for the k still-active devices;
  the engine then applies w <- w - lr * d. ``w`` and every tensor in ``local`` arrive as views of
  the first k rows (devices are ordered by work, so the active ones form a prefix), so a method may
  update ``local`` in place. ``grad_fn(v)`` returns (loss [k], gradient [k, D]) of the current
  mini-batch at v (already clipped and with weight decay added);
- ``aggregate(ctx, res)``: the new global model from the local results, plus extra per-round
  records (scalars or lists) for rounds.parquet;
- ``setup(setup)`` allocates persistent state (server state, per-device state [N, D]) and
  ``state_dict``/``load_state_dict`` expose it for checkpoints;
- ``check_config(params, cfg)`` (optional) rejects parameters that clash with the run's config
  (e.g. FedMax(k) with k > K); RunConfig.validate() calls it.

Parameters live in a frozen dataclass ``Params`` whose ``__post_init__`` rejects bad values with a
one-line FedbenchError.

``version`` is the method's behaviour version, part of every run's identity (fedbench.identity).
The rule: a new parameter gets the default that keeps the old behaviour (stored runs keep their
identity); changing a parameter's default, or what the method computes for the same parameters,
bumps ``version`` by one (stored runs then no longer count as done, and are rerun).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import torch

if TYPE_CHECKING:
    from fedbench.config import RunConfig
    from fedbench.engine import Engine

GradFn = Callable[[torch.Tensor], tuple[torch.Tensor, torch.Tensor]]


@dataclass
class Setup:
    """What a method may size its state by."""

    num_clients: int
    dim: int
    device: torch.device
    dtype: torch.dtype
    cfg: RunConfig
    client_sizes: torch.Tensor  # [N] samples per device (on device)


@dataclass
class RoundContext:
    """One round, seen by the method. Per-device tensors are [K] in the engine's device order
    (sorted by work, most first), on the run's device."""

    round: int
    lr: float
    global_w: torch.Tensor  # [D], w^t
    clients: torch.Tensor  # [K] device ids
    n_samples: torch.Tensor  # [K] float
    steps: torch.Tensor  # [K] local SGD steps each device runs
    units: torch.Tensor  # [K] epochs (or steps) each device runs: E_i
    tau: torch.Tensor  # [K] tau_i = E - E_i + 1
    weights: torch.Tensor  # [K] aggregation weights p_i, summing to 1
    cfg: RunConfig
    engine: Engine

    @property
    def k(self) -> int:
        return int(self.clients.shape[0])


@dataclass
class LocalResult:
    w: torch.Tensor  # [K, D] each device's final model
    global_w: torch.Tensor  # [D] the model they started from (for SFL: the round's start)
    local: dict[str, torch.Tensor] = field(default_factory=dict)  # final local state
    mean_loss: torch.Tensor | None = None  # [K] mean mini-batch loss along the local path
    last_epoch_loss: torch.Tensor | None = None  # [K] mean loss over the last local epoch
    grad_evals: torch.Tensor | None = None  # [K] gradient evaluations (mini-batch passes)
    # SFL only: the rows in the order they trained (each started from the previous one's model)
    order: torch.Tensor | None = None
    # models with buffers (BatchNorm): each device's final buffers [K, Db]; None without
    buffers: torch.Tensor | None = None

    @property
    def delta(self) -> torch.Tensor:
        """Delta_i = w_i - w^t ("after - before", FedLGA Alg. 1)."""
        return self.w - self.global_w


class Method:
    name: ClassVar[str] = ""
    version: ClassVar[int] = 1  # bump when a default or the behaviour changes (module docstring)
    Params: ClassVar[type] = None  # type: ignore[assignment]
    # SFL: devices train one after another, each from the previous one's model
    sequential: ClassVar[bool] = False
    # FedProx paper's FedAvg drops stragglers under straggler_policy=drop-fedavg
    drops_stragglers: ClassVar[bool] = False

    def __init__(self, params: Any):
        self.p = params

    @classmethod
    def check_config(cls, params: Any, cfg: RunConfig) -> None:
        """Reject parameters that do not fit the run (one-line FedbenchError); default: none."""

    # ---- state ----
    def setup(self, setup: Setup) -> None:
        self.n_clients = setup.num_clients

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        pass

    # ---- device side ----
    @property
    def plain_local_sgd(self) -> bool:
        """True when this round's local step is plain SGD on the gradient; the engine may then
        fuse gradient and update (see BatchedMLP.sgd_step). Methods whose extra local term can
        be switched off (FedProx's mu = 0) override this."""
        return type(self).local_step is Method.local_step

    # A method whose local direction is g + b, with b a [k, D] tensor of client_start's state
    # that stays fixed during the round (SCAFFOLD's c - c_i), names that key here: the engine
    # may then take the fused SGD step and subtract lr * b after it (one extra pass, not three).
    local_drift: str | None = None

    def client_start(self, ctx: RoundContext) -> dict[str, torch.Tensor]:
        return {}

    def local_step(
        self, ctx: RoundContext, w: torch.Tensor, grad_fn: GradFn, local: dict[str, torch.Tensor]
    ) -> torch.Tensor:
        _, g = grad_fn(w)
        return g

    # ---- server side ----
    def aggregate(self, ctx: RoundContext, res: LocalResult) -> tuple[torch.Tensor, dict]:
        """Default: w^{t+1} = sum_i p_i w_i (FedAvg)."""
        return weighted_mean(res.w, ctx.weights), {}


def weighted_mean(x: torch.Tensor, p: torch.Tensor) -> torch.Tensor:
    """sum_i p_i x_i for x [K, D], p [K], as one matrix-vector product."""
    return p.to(x.dtype) @ x
