"""The method interface: the whole contract between a method and the engine that trains it.

The engine owns the round loop (sampling, heterogeneity, mini-batches, masking, timing,
evaluation). A method says, in the order the engine calls it:

- ``state``: its persistent state (server state [D], per-device state [N, D], plain values), as
  a tuple of ``State`` declarations. ``setup`` allocates it as attributes of the method (with the
  server optimizer's state) and ``state_dict``/``load_state_dict`` save and restore it;
- ``init(w0, services)`` (optional): called once, after ``setup``, with the initial global
  model w^0 [D] and the engine's services (below): state that starts from the model (an anchor,
  a per-device copy, FedProx's adaptive-mu loss at w^0) is filled here, never lazily in round 1.
  A restored checkpoint (load_state_dict) replaces it afterwards;
- ``client_start(ctx)``: per-round local state for the K sampled devices, a dict of tensors whose
  first dimension is K (momentum buffers, control variates gathered for these devices, ...);
- ``local_step(ctx, w, grad_fn, local)``: the update direction d for the k still-active devices;
  the engine then applies w <- w - lr * d. ``w`` and every tensor in ``local`` arrive as views of
  the first k rows (devices are ordered by work, so the active ones form a prefix), so a method may
  update ``local`` in place. ``grad_fn(v)`` returns (loss [k], gradient [k, D]) of the current
  mini-batch at v (already clipped and with weight decay added);
- ``linear_step()`` (optional): the local step declared as d = scale g + mu (w - w^t) +
  local[const] (``LinearStep``), so that the engine may train the round without calling
  local_step. What the declaration buys is ``step_paths``: the engine's round paths (ROUND_PATHS)
  open to it. Undeclared, every round runs "stepwise": local_step called at every step, one
  autograd pass and a Python call each: ~20x slower than the compiled path on the default run
  (logreg on Synthetic: 2.74 vs 0.13 s/round), 2.3x slower than the MLP window on FedLGA-FMNIST
  (42.0 vs 17.9 s/round; benchmarks/round_paths.py, one thread on a loaded 2-core machine).
  `fedbench methods` lists each method's paths;
- ``client_final(ctx, res)`` (optional): after local training, before aggregation, on the
  devices' rows (FedJAX's client_final): what each device sends, e.g. a compressed or clipped
  delta, or per-device state updated from its final model (SCAFFOLD's c_i, FedDyn's L_i).
  Returns the (new) LocalResult;
- ``combine(ctx, res)``: the method's new global model at server learning rate 1 without server
  momentum, plus extra per-round records (scalars or lists) for rounds.parquet. ``aggregate``
  (what the engine calls) applies the server step after it: the run's server optimizer
  (fedbench.methods.server_opt: sgd, FedAvgM, adagrad, adam, yogi from the config), so a method
  never restates a server rule that is a setting;
- ``record_fields``: the per-round fields ``combine``/``aggregate`` add to the round's record,
  each a ``RecordField`` (name, type, unit, when, help): rounds.parquet holds every registered
  method's fields in every run, null where a method does not record them (fedbench.results.schema);
- ``check_config(params, cfg)`` (optional) rejects parameters that clash with the run's config
  (e.g. FedMax(k) with k > K); fedbench.assembly.validate_config calls it. Overrides call
  super() first.

What a method may ask of the engine (full-batch gradients, the global training loss, ...) is
``ctx.services`` (EngineServices, below), never the engine itself.

Parameters live in a frozen dataclass ``Params``; every field has a default and metadata
{"help": ...}: ``param(default, help, must_be=...)`` (fedbench.methods.params) declares one with
the range it must lie in ("> 0", "in [0, 1]", ...), which the registry checks whenever it builds
the Params (method_params), with a one-line FedbenchError. Other checks (a choice among names)
go in ``__post_init__``, raising the same. A method without parameters leaves ``Params`` out
(``NoParams``).

``version`` is the method's behaviour version, part of every run's identity (fedbench.identity).
The rule: a new parameter gets the default that keeps the old behaviour (stored runs keep their
identity); changing a parameter's default, or what the method computes for the same parameters,
bumps ``version`` by one (stored runs then no longer count as done, and are rerun).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from fedbench.errors import FedbenchError
from fedbench.lazy import torch
from fedbench.methods.params import NoParams
from fedbench.methods.server_opt import ClientModels, ServerOpt, server_optimizer

if TYPE_CHECKING:
    from fedbench.config import RunConfig

# w -> (loss, gradient); a string, so that defining it needs no torch
GradFn = "Callable[[torch.Tensor], tuple[torch.Tensor, torch.Tensor]]"


@dataclass
class Setup:
    """What a method may size its state by."""

    num_clients: int
    dim: int
    device: torch.device
    dtype: torch.dtype
    cfg: RunConfig | None
    client_sizes: torch.Tensor  # [N] samples per device (on device)


class EngineServices(Protocol):
    """Everything a method may ask of the training side during a round (ctx.services): passes
    over a whole dataset. fedbench.training.evaluation.RoundServices implements it; a test may
    pass any object with these methods."""

    def full_batch_grads(
        self, w: torch.Tensor, clients: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Each listed device's full local (loss [k], gradient [k, D]) at w ([D] or [k, D])."""

    def train_loss(
        self, w: torch.Tensor, ctx: RoundContext | None = None, res: LocalResult | None = None
    ) -> float:
        """Mean cross-entropy over all training data at w; given the round (ctx, res), models
        with buffers (BatchNorm) use the buffers that round produces, else the global ones."""

    def gradient_dissimilarity(self, w: torch.Tensor) -> float:
        """(1/N) sum_k |g - g_k|^2 over all N devices' full-batch gradients at w."""


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
    cfg: RunConfig | None
    services: EngineServices | None  # what the method may ask of the engine

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


@dataclass(frozen=True)
class LinearStep:
    """A local direction affine in the engine's mini-batch gradient g (weight decay included):
        d = scale * g + mu * (w - w^t) + local[const]
    scale and mu plain numbers for all rows; const the name of a [K, D] tensor of
    client_start's state that stays fixed during the round (None: no constant). FedAvg is
    LinearStep(), FedProx LinearStep(mu=mu), SCAFFOLD LinearStep(const="scaffold_corr"), FedCM
    LinearStep(scale=alpha, const=...).

    decay, the name of a [K, 1] tensor of client_start's state fixed during the round, adds a
    per-row decay[i] w to d (FedDyn's alpha_i w, alpha_i differing by device).
    term = True adds the method's grad_term(ctx, w, local) [k, D] at each step's w (a term of
    any form, e.g. a regulariser's subgradient): plain SGD plus a term opens the fused path.
    ascent = r > 0 (SAM) takes g at the ascent point instead: g = grad f_B(w + e) + wd w,
    e = r h / (|h| + 1e-7), h = grad f_B(w) (the loss gradient, each row's whole vector): two
    gradient passes a step, FedSAM's step (only the window path runs it besides stepwise)."""

    scale: float = 1.0
    mu: float = 0.0
    const: str | None = None
    decay: str | None = None
    term: bool = False
    ascent: float = 0.0

    @property
    def plain_but_term(self) -> bool:
        """Plain SGD (plus a fixed drift) but for the grad_term."""
        return self.scale == 1 and not (self.mu or self.decay or self.ascent)

    @property
    def plain(self) -> bool:
        """Plain SGD on g, plus a fixed drift at most."""
        return self.scale == 1 and not (self.mu or self.decay or self.ascent or self.term)

    def as_sgd(self, lr: float) -> tuple[float, float, float]:
        """(lr', mu', c') with w - lr d = w - lr' (g + mu' (w - w^t) + c' local[const]): the step
        as SGD at learning rate lr scale, mu and the constant divided by scale (scale > 0). At
        scale 1 every number is unchanged, bit for bit."""
        a = self.scale
        if a == 1:
            return lr, self.mu, 1.0
        return lr * a, self.mu / a, 1.0 / a


SHAPES = ("dim", "clients", "clients x dim", "value")


RECORD_TYPES = ("int64", "float64", "bool", "list<int64>", "list<float64>")


@dataclass(frozen=True)
class RecordField:
    """A per-round field a method adds to its rounds' records: a column of every rounds.parquet
    (fedbench.results.schema), null in the rows and runs that do not record it."""

    name: str
    type: str  # one of RECORD_TYPES
    unit: str  # "" for a count or a plain number
    help: str
    when: str = "every trained round"  # when the method records it

    def __post_init__(self):
        if self.type not in RECORD_TYPES:
            raise FedbenchError(
                f"record field {self.name!r}: type {self.type!r} is not one of "
                f"{', '.join(RECORD_TYPES)}"
            )


# the cost of full-batch gradient passes a method asks of ctx.services (MimeLite, FedLGA eq6)
EXTRA_GRAD_FIELDS = (
    RecordField("extra_grad_samples", "int64", "samples", "samples in the round's extra passes"),
    RecordField("extra_grad_passes", "int64", "devices", "devices given an extra full pass"),
)


@dataclass(frozen=True)
class State:
    """One piece of a method's persistent state, kept across rounds and in checkpoints.

    shape "dim" is a [D] tensor, "clients" [N], "clients x dim" [N, D] (all filled with `fill`,
    in the run's dtype and device); "value" is a plain Python value, `init(params)` when init is
    callable, else `init` itself."""

    name: str
    shape: str = "dim"
    fill: float = 0.0
    init: Any = None

    def __post_init__(self):
        if self.shape not in SHAPES:
            raise FedbenchError(f"state {self.name}: shape must be one of {', '.join(SHAPES)}")

    def allocate(self, setup: Setup, params: Any) -> Any:
        if self.shape == "value":
            return self.init(params) if callable(self.init) else self.init
        size = {"dim": (setup.dim,), "clients": (setup.num_clients,)}.get(
            self.shape, (setup.num_clients, setup.dim)
        )
        return torch.full(size, self.fill, dtype=setup.dtype, device=setup.device)


# the ways the engine may train a round's local steps, fastest first (Engine.round_path picks
# one by the model and config, among those the method's linear_step opens: step_paths)
ROUND_PATHS = ("compiled", "window", "fused", "stepwise")


def step_paths(step: LinearStep | None) -> tuple[str, ...]:
    """The ROUND_PATHS open to a local step declared as `step` (Method.linear_step): compiled
    (numba loop, small models) and window (the MLP's GEMM window) run any linear step with a
    positive scale, fused (the model's fused SGD step) plain SGD plus a fixed drift; stepwise
    (local_step at every step) runs anything, and is what an undeclared step gets."""
    if step is None or step.scale <= 0:
        return ("stepwise",)
    if step.term:  # a term at each step's w: the fused step, then w -= lr term
        return ("fused", "stepwise") if step.scale == 1 and step.plain_but_term else ("stepwise",)
    if step.ascent or step.decay:  # SAM's two passes, a per-row decay: only the MLP's window
        return ("window", "stepwise")
    if step.plain:
        return ROUND_PATHS
    return ("compiled", "window", "stepwise")


class Method:
    name: ClassVar[str] = ""
    version: ClassVar[int] = 1  # bump when a default or the behaviour changes (module docstring)
    Params: ClassVar[type] = NoParams  # a frozen dataclass (module docstring)
    # SFL: devices train one after another, each from the previous one's model
    sequential: ClassVar[bool] = False
    # FedProx paper's FedAvg drops stragglers under straggler_policy=drop-fedavg
    drops_stragglers: ClassVar[bool] = False
    # persistent state, allocated by setup(), saved by state_dict()
    state: ClassVar[tuple[State, ...]] = ()
    # the Params field that is the paper's own server learning rate (eta_g), if any
    server_lr_param: ClassVar[str | None] = None
    # parameter values at which the method is FedAvg, round after round, without heterogeneity
    # and with equal device sizes (a contract test checks it); None: no such values
    reduces_to_fedavg: ClassVar[dict[str, Any] | None] = None
    # per-round fields combine/aggregate add to the round's record (rounds.parquet columns)
    record_fields: ClassVar[tuple[RecordField, ...]] = ()
    # position in `fedbench methods` and the README (set by @register(order=...))
    listing_order: ClassVar[float] = 1000

    def __init__(self, params: Any):
        self.p = params

    def server_optimizer(self, cfg: RunConfig | None) -> ServerOpt:
        """The run's server step: the config's server optimizer at cfg.server_lr times the
        method's own server learning rate (a paper's eta_g; check_config allows at most one of
        the two to differ from 1)."""
        own = getattr(self.p, self.server_lr_param) if self.server_lr_param else 1.0
        return server_optimizer(own, cfg)

    @classmethod
    def check_config(cls, params: Any, cfg: RunConfig) -> None:
        """Reject parameters that do not fit the run (one-line FedbenchError). The base checks
        that the server learning rate is set once: cfg.server_lr or the method's own name."""
        own = cls.server_lr_param
        if own and getattr(params, own) != 1 and cfg.server_lr != 1:
            raise FedbenchError(
                f"{cls.name}: {own} and server_lr both set the server learning rate; "
                f"set only one of them"
            )

    # ---- state ----
    def setup(self, setup: Setup) -> None:
        """Allocate the declared state and the server optimizer's (zeros, `fill`, values)."""
        self.n_clients = setup.num_clients
        server = tuple(State(n, "dim", fill) for n, fill in self.server_optimizer(setup.cfg).state)
        self._declared = self.state + server
        for s in self._declared:
            setattr(self, s.name, s.allocate(setup, self.p))

    def init(self, w0: torch.Tensor, services: EngineServices) -> None:
        """Called once by the engine after setup, with the initial global model w^0 [D] and what
        the method may ask of the engine (EngineServices): fill state that starts from the model
        (State declarations start from `fill`)."""

    @property
    def declared_state(self) -> tuple[State, ...]:
        """The method's State declarations and its server optimizer's (after setup)."""
        return self._declared

    def state_dict(self) -> dict[str, Any]:
        """The declared state, copied (later rounds do not change what was saved)."""
        out = {}
        for s in self._declared:
            v = getattr(self, s.name)
            out[s.name] = v.detach().clone() if isinstance(v, torch.Tensor) else v
        return out

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore a state_dict() into a method set up for the same run (copied in)."""
        names = [s.name for s in self._declared]
        if sorted(state) != sorted(names):
            raise FedbenchError(
                f"{self.name}: saved state has {', '.join(sorted(state)) or 'nothing'}; "
                f"expected {', '.join(names) or 'nothing'} (a checkpoint of another run?)"
            )
        for name in names:
            cur, new = getattr(self, name), state[name]
            if isinstance(cur, torch.Tensor):
                if tuple(new.shape) != tuple(cur.shape):
                    raise FedbenchError(
                        f"{self.name}: saved state {name} has shape {tuple(new.shape)}, "
                        f"this run's is {tuple(cur.shape)}"
                    )
                cur.copy_(new)
            else:
                setattr(self, name, new)

    # ---- device side ----
    # The Params fields local_step reads; None: unknown (all). Runs that differ only in other
    # fields may train as one stack (fedbench.sweep.executors); plain SGD reads none.
    local_step_params: ClassVar[tuple[str, ...] | None] = None

    def linear_step(self) -> LinearStep | None:
        """This round's local step as d = scale g + mu (w - w^t) + local[const] (LinearStep), or
        None when it has another form. Called after client_start, every round (FedProx's mu may
        change). A method whose local_step is of this form says so here, and the engine may
        then train the round without calling local_step: fused SGD steps, the MLP's window of
        steps, the compiled loop of small models. local_step must compute the same d (a test
        checks each registered method: tests/methods/test_linear_step.py). step_paths says
        which engine paths a declaration opens; None leaves only the stepwise one."""
        if type(self).local_step is not Method.local_step:
            return None
        return LinearStep(term=type(self).grad_term is not Method.grad_term)

    def client_start(self, ctx: RoundContext) -> dict[str, torch.Tensor]:
        return {}

    def local_step(
        self, ctx: RoundContext, w: torch.Tensor, grad_fn: GradFn, local: dict[str, torch.Tensor]
    ) -> torch.Tensor:
        _, g = grad_fn(w)
        term = self.grad_term(ctx, w, local)
        return g if term is None else g.add_(term)

    def grad_term(
        self, ctx: RoundContext, w: torch.Tensor, local: dict[str, torch.Tensor]
    ) -> torch.Tensor | None:
        """A term [k, D] the local step adds to the mini-batch gradient at w (rows as in
        local_step), or None: d = g + grad_term(w). A method whose step is only that overrides
        this instead of local_step; the default linear_step then declares LinearStep(term=True)
        and its rounds take the fused batched path (the model's fused SGD step, then
        w -= lr term) instead of the stepwise one."""
        return None

    def client_final(self, ctx: RoundContext, res: LocalResult) -> LocalResult:
        """After local training, before aggregation (FedJAX's client_final): what the devices
        send, row by row ([K, D] in res.w; res.delta is w_i - w^t). Default: unchanged."""
        return res

    # ---- server side ----
    def combine(self, ctx: RoundContext, res: LocalResult) -> tuple[torch.Tensor, dict]:
        """The method's new global model at server lr 1; default sum_i p_i w_i (FedAvg)."""
        return weighted_mean(res.w, ctx.weights), {}

    def aggregate(self, ctx: RoundContext, res: LocalResult) -> tuple[torch.Tensor, dict]:
        """What the engine calls: combine, then the server step."""
        new_w, rec = self.combine(ctx, res)
        return self.server_step(ctx, new_w, res), rec

    def server_step(
        self, ctx: RoundContext, new_w: torch.Tensor, res: LocalResult | None = None
    ) -> torch.Tensor:
        """The run's server optimizer (fedbench.methods.server_opt) on Delta = new_w - w^t:
        w^{t+1} = w^t + eta Delta by default, new_w itself at eta = 1 (bit for bit); FedAvgM,
        FedAdagrad, FedAdam, FedYogi by the config's server_* fields."""
        clients = ClientModels(res.w, ctx.weights) if res is not None else None
        return self.server_optimizer(ctx.cfg).step(self, ctx.global_w, new_w, clients)


def weighted_mean(x: torch.Tensor, p: torch.Tensor) -> torch.Tensor:
    """sum_i p_i x_i for x [K, D], p [K], as one matrix-vector product."""
    return p.to(x.dtype) @ x
