"""The typed run configuration: one dataclass, its fields and their checks.

A leaf: it imports nothing of fedbench but errors. Every field is validated before any work
starts; a bad value raises FedbenchError with a one-line message naming the field and what is
allowed. Reading `key=value` and TOML text into field values is fedbench.config_input's;
layering presets, TOML files, `key=value` and method parameters into a config is
fedbench.assembly's; a config's identity (hash, run id) is fedbench.identity's.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from fedbench.errors import FedbenchError

DATASETS = (
    "synthetic",
    "mnist",
    "fmnist",
    "cifar10",
    "cifar100",
    "cinic10",
    "femnist",
    "shakespeare",
    "sent140",
    "quadratic",
    "fedprox-mnist",
)
# datasets that come with their own per-device split (partition=natural)
NATURAL_DATASETS = ("synthetic", "femnist", "shakespeare", "sent140", "quadratic", "fedprox-mnist")
PARTITIONS = (
    "natural",
    "iid",
    "pclass",
    "dirichlet",
    "exdir",
    "imbalance",
    "powerlaw",
    "shards",
    "handpick",
)
NORMALIZE = ("dataset", "imagenet", "none")
MODELS = (
    "logreg",
    "mlp",
    "quadratic",
    "cnn",
    "resnet20",
    "vgg9",
    "resnet18",
    "charlstm",
    "sentlstm",
)
NORMS = ("bn", "gn")
HETERO = ("none", "fedlga", "stragglers")
SLOW_WORK = ("tau", "at-most")
STRAGGLER_EPOCHS = ("code", "paper")
STRAGGLER_POLICIES = ("partial", "drop", "drop-fedavg")
AGGREGATIONS = ("samples", "uniform")
DTYPES = ("float32", "float64")
# the server optimizers (fedbench.methods.server_opt registers each, a plugin's too: allow_name)
SERVER_OPTS = ("sgd", "adagrad", "adam", "yogi")

# Short names from the papers, accepted by --set and TOML.
ALIASES = {
    "N": "num_clients",
    "K": "clients_per_round",
    "E": "local_epochs",
    "B": "batch_size",
    "P": "classes_per_client",
    "s": "stragglers",
}


@dataclass
class RunConfig:
    # data
    dataset: str = "synthetic"
    data_dir: str | None = None
    syn_alpha: float = 1.0  # FedProx Synthetic(alpha, beta): standard deviations (spec §3.3, §7.11)
    syn_beta: float = 1.0
    syn_iid: bool = False
    partition: str = "natural"
    classes_per_client: int = 2  # P, for partition=pclass
    dirichlet_alpha: float = 0.5  # dirichlet, and exdir's alpha (SFL: 10)
    xi: float = 1.0  # partition=imbalance: |X_large| / |X_small| (FedLGA Fig. 10: 1, 2, 3)
    powerlaw_sigma: float = 2.0  # partition=powerlaw: lognormal sigma of the sizes (FedProx: 2)
    num_shards: int = 60  # partition=shards: 60 (FedSoftMax NIID) or 100 (TNIID)
    coarse_labels: bool = False  # cifar100: the 20 coarse classes instead of the 100 fine ones
    glove: str | None = None  # sent140: GloVe text file (word v1 ... vd); None: learned embedding
    quad_group: int = 1  # dataset=quadratic: SFL's (a, b) group 1-4 (spec §5.1)
    quad_b_scale: float = 1.0  # dataset=quadratic: b scaled by 1, 10 or 100
    # a registered dataset's own settings (fedbench.data.registry: register_dataset(params=))
    dataset_params: dict[str, Any] = field(default_factory=dict)  # the dataset's own: --set K=V
    # input pipeline (image datasets; applied per mini-batch on the tensor device)
    normalize: str = "dataset"  # dataset mean/std | imagenet mean/std | none (raw 0-255)
    augment: bool = False  # random crop 32 (padding 4) + horizontal flip, training batches
    resize: int | None = None  # bilinear resize of every input (FedLGA §VI-A: 224)
    data_seed: int | None = None  # None: use `seed`
    # model
    model: str = "logreg"
    hidden: int = 400
    init: str = "default"  # default (torch's nn.Linear init) | zeros (FedProx's TF code)
    norm: str = "bn"  # resnet20's normalization: bn (BatchNorm, Hsieh et al.) | gn (GroupNorm)
    # federation
    num_clients: int = 30
    clients_per_round: int = 10
    local_epochs: int = 20
    local_steps: int | None = None  # fixed number of mini-batch steps instead of epochs
    batch_size: int = 10
    lr: float = 0.01
    lr_decay: float = 1.0  # lr at round r = lr * lr_decay**r
    momentum: float = 0.0  # local heavy-ball momentum, reset every round
    weight_decay: float = 0.0
    grad_clip: float | None = None  # per-client gradient-norm clip
    aggregation: str = "samples"  # weights of FedAvg-style averages: sample counts or uniform
    rounds: int = 200
    seed: int = 0
    # method
    method: str = "fedavg"
    method_params: dict[str, Any] = field(default_factory=dict)
    # the server optimizer after every method's combine (fedbench.methods.server_opt), on the
    # pseudo-gradient Delta = aggregate - w
    server_opt: str = "sgd"  # sgd (FedAvgM with server_momentum), adagrad, adam, yogi
    server_lr: float = 1.0  # eta: sgd w <- w + eta * Delta; 1 (sgd): the aggregate itself
    server_momentum: float = 0.0  # sgd: beta of m <- beta m + Delta (FedAvgM: 0.9)
    server_beta1: float = 0.9  # adagrad/adam/yogi: m <- b1 m + (1 - b1) Delta (Reddi et al.)
    server_beta2: float = 0.99  # adam/yogi: the second moment's decay b2
    server_eps: float = 1e-3  # adagrad/adam/yogi: tau in w <- w + eta m / (sqrt(v) + tau)
    # a registered server optimizer's own parameters (fedbench.methods.server_opt)
    server_params: dict[str, Any] = field(default_factory=dict)  # server_opt's own: --set K=V
    # device heterogeneity
    hetero: str = "none"
    rho: float = 0.5  # fedlga: fraction of the K sampled devices that are slow
    tau_max: int = 4  # fedlga: tau_i ~ U{1..tau_max}, E_i = E - tau_i + 1
    # fedlga: which reading of tau_max draws a slow device's work (training/hetero.py): tau
    # (tau_i ~ U{1..tau_max}, spec §7.2) or at-most (E_i ~ U{1..tau_max}, TCYB §VI-A)
    slow_work: str = "tau"
    stragglers: float = 0.0  # stragglers: fraction s of the sampled devices
    straggler_epochs: str = "code"  # code: U{1..E-1}; paper: U{1..E}
    straggler_policy: str = "partial"  # partial | drop | drop-fedavg (FedProx paper's baseline)
    # evaluation and records
    target_acc: float | None = None
    stop_at_target: bool = False  # end the run at the first evaluation >= target_acc
    eval_every: int = 1
    eval_train: bool = False  # also evaluate the global model's loss on all training data
    # also record local_acc: the participating devices' mean accuracy of their local models on
    # their own training data after local training (FedSoftMax's smoothness curve)
    eval_local: bool = False
    device: str = "auto"
    dtype: str = "float32"
    preset: str | None = None

    # ---- derived ----
    @property
    def work_units(self) -> int:
        """E in the heterogeneity model: epochs, or steps when local_steps is set."""
        return self.local_steps if self.local_steps is not None else self.local_epochs

    @property
    def effective_data_seed(self) -> int:
        return self.seed if self.data_seed is None else self.data_seed

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    # ---- validation (the method's parameters: fedbench.assembly.validate_config) ----
    def validate_fields(self) -> RunConfig:
        """Every field (type, finiteness, range, choices), then the fields' combinations; the
        first problem raises a one-line FedbenchError."""
        self.validate_data()
        if self.clients_per_round > self.num_clients:
            raise FedbenchError(
                f"clients_per_round (K) = {self.clients_per_round} exceeds num_clients (N) = "
                f"{self.num_clients}; choose K <= N"
            )
        if self.stop_at_target and self.target_acc is None:
            raise FedbenchError("stop_at_target needs target_acc; set target_acc=0.65 (say)")
        if self.hetero == "fedlga":
            e = self.work_units
            if not 1 <= self.tau_max < e:
                raise FedbenchError(
                    f"tau_max must be in [1, E-1] = [1, {e - 1}] (E = {e} local "
                    f"{'steps' if self.local_steps else 'epochs'}), got {self.tau_max}"
                )
        if self.slow_work != "tau" and self.hetero != "fedlga":
            raise FedbenchError(
                f"slow_work={self.slow_work} reads tau_max of hetero=fedlga; "
                "set hetero=fedlga or leave slow_work at tau"
            )
        if self.hetero == "stragglers" and self.straggler_epochs == "code" and self.work_units < 2:
            raise FedbenchError(
                "straggler_epochs=code draws U{1..E-1} and needs E >= 2; "
                "set E >= 2 or straggler_epochs=paper"
            )
        return self  # the server optimizer's settings: fedbench.methods.server_opt

    def validate_data(self) -> RunConfig:
        """Every field on its own, then the dataset, partition and input-pipeline fields'
        combinations (all `fedbench data` needs)."""
        for name in FIELD_KINDS:
            check_value(name, getattr(self, name))
        if self.dataset in NATURAL_DATASETS and self.partition != "natural":
            raise FedbenchError(
                f"dataset {self.dataset} has its own per-device split; use partition=natural"
            )
        if self.dataset not in NATURAL_DATASETS and self.partition == "natural":
            others = ", ".join(p for p in PARTITIONS if p != "natural")
            raise FedbenchError(
                f"dataset {self.dataset} has no natural split; use partition={others}"
            )
        if self.partition == "shards" and self.num_shards < self.num_clients:
            raise FedbenchError(
                f"num_shards = {self.num_shards} < num_clients (N) = {self.num_clients}; "
                "every device needs a shard"
            )
        if self.dataset == "quadratic" and (self.num_clients != 2 or self.model != "quadratic"):
            raise FedbenchError(
                "dataset quadratic has M = 2 devices and model quadratic; "
                "set N=2 and model=quadratic"
            )
        images = ("cifar10", "cifar100", "cinic10")
        if (self.augment or self.resize) and self.dataset not in images:
            raise FedbenchError(
                f"augment and resize apply to {', '.join(images)}; "
                f"dataset {self.dataset} takes augment=false resize=none"
            )
        if self.glove and self.dataset != "sent140":
            raise FedbenchError("glove (GloVe vectors) applies to dataset=sent140 only")
        if self.coarse_labels and self.dataset != "cifar100":
            raise FedbenchError("coarse_labels applies to dataset=cifar100 only")
        _check_paths(self)
        return self


def _check_paths(cfg: RunConfig) -> None:
    """A given data folder or GloVe file must exist: a typo must not fall back to another copy
    of the data found elsewhere."""
    if cfg.data_dir is not None:
        d = Path(cfg.data_dir)
        if not d.is_dir():
            what = "is a file" if d.exists() else "does not exist"
            raise FedbenchError(
                f"data_dir {cfg.data_dir} {what}; give the folder that holds the dataset"
            )
    if cfg.glove is not None and not Path(cfg.glove).is_file():
        raise FedbenchError(f"glove file {cfg.glove} not found; give a GloVe .txt file")


# ---------------------------------------------------------------- checking one field


@dataclass(frozen=True)
class Range:
    """An interval of allowed numbers; open ends exclude their bound."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False

    def __contains__(self, v: float) -> bool:
        if self.low is not None and (v < self.low or (self.low_open and v == self.low)):
            return False
        return self.high is None or (v < self.high or (not self.high_open and v == self.high))

    def __str__(self) -> str:
        if self.high is None:
            return f"{'>' if self.low_open else '>='} {self.low:g}"
        left, right = "(" if self.low_open else "[", ")" if self.high_open else "]"
        return f"in {left}{self.low:g}, {self.high:.15g}{right}"


MAX_COUNT = 2**31 - 1  # sizes and counts: larger ones only overflow somewhere
MAX_SEED = 2**32 - 1  # numpy's RandomState (the Synthetic data) takes seeds below 2**32
POSITIVE = Range(0, low_open=True)
NON_NEGATIVE = Range(0)
UNIT = Range(0, 1)
COUNT = Range(1, MAX_COUNT)
SEED = Range(0, MAX_SEED)

# Allowed values of every number field (a test checks that none is missing); non-finite floats
# are refused for every field.
BOUNDS: dict[str, Range] = {
    "syn_alpha": NON_NEGATIVE,  # standard deviations
    "syn_beta": NON_NEGATIVE,
    "classes_per_client": COUNT,
    "dirichlet_alpha": POSITIVE,
    "xi": Range(1),  # |X_large| / |X_small|
    "powerlaw_sigma": POSITIVE,
    "num_shards": COUNT,
    "quad_group": Range(1, 4),
    "quad_b_scale": POSITIVE,
    "resize": COUNT,
    "data_seed": SEED,
    "hidden": COUNT,
    "num_clients": COUNT,
    "clients_per_round": COUNT,
    "local_epochs": COUNT,
    "local_steps": COUNT,
    "batch_size": COUNT,
    "lr": POSITIVE,
    "lr_decay": POSITIVE,
    "momentum": Range(0, 1, high_open=True),
    "server_lr": POSITIVE,
    "server_momentum": Range(0, 1, high_open=True),
    "server_beta1": Range(0, 1, high_open=True),
    "server_beta2": Range(0, 1, high_open=True),
    "server_eps": POSITIVE,
    "weight_decay": NON_NEGATIVE,
    "grad_clip": POSITIVE,
    "rounds": COUNT,
    "seed": SEED,
    "rho": UNIT,
    "tau_max": COUNT,
    "stragglers": UNIT,
    "target_acc": UNIT,
    "eval_every": COUNT,
}
# Allowed values of the text fields that name one of a few things.
CHOICES: dict[str, tuple[str, ...]] = {
    "dataset": DATASETS,
    "partition": PARTITIONS,
    "normalize": NORMALIZE,
    "model": MODELS,
    "init": ("default", "zeros"),
    "norm": NORMS,
    "hetero": HETERO,
    "slow_work": SLOW_WORK,
    "straggler_epochs": STRAGGLER_EPOCHS,
    "straggler_policy": STRAGGLER_POLICIES,
    "aggregation": AGGREGATIONS,
    "server_opt": SERVER_OPTS,
    "dtype": DTYPES,
}


def allow_name(field_name: str, name: str, natural: bool = False) -> None:
    """Accept one more dataset, model or server_opt name: their registries call it for
    every name registered, so a plugin's names validate like the built-in ones (listed above
    so that validating a config needs neither the registries nor torch)."""
    global DATASETS, NATURAL_DATASETS, MODELS, SERVER_OPTS
    if field_name == "server_opt":
        SERVER_OPTS = CHOICES["server_opt"] = tuple(dict.fromkeys((*SERVER_OPTS, name)))
    elif field_name == "dataset":
        DATASETS = CHOICES["dataset"] = tuple(dict.fromkeys((*DATASETS, name)))
        if natural:
            NATURAL_DATASETS = tuple(dict.fromkeys((*NATURAL_DATASETS, name)))
    elif field_name == "model":
        MODELS = CHOICES["model"] = tuple(dict.fromkeys((*MODELS, name)))
    else:
        raise ValueError(f"allow_name: {field_name} takes no registered names")


TYPE_WORDS = {
    "int": "int (a whole number)",
    "float": "float (a number)",
    "bool": "bool (true or false)",
    "str": "str (text)",
    "dict": "a table of method parameters",
}


def field_kind(name: str) -> tuple[str, bool]:
    """(int | float | bool | str | dict, whether None is allowed) from the field's annotation."""
    return FIELD_KINDS[name]


def _kind_of(annotation: str) -> tuple[str, bool]:
    parts = str(annotation).split(" | ")
    return parts[0].split("[")[0], "None" in parts


def has_kind(value: Any, kind: str) -> bool:
    """Whether value is of a field kind (int, float: an int too, bool, str, dict)."""
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "float":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, {"bool": bool, "str": str, "dict": dict}[kind])


def check_seeds(seeds, option: str = "--seeds") -> None:
    """Each seed of a list an option gave, the error naming that option."""
    for seed in seeds or ():
        try:
            check_value("seed", seed)
        except FedbenchError as e:
            raise FedbenchError(f"{option}: {e}") from None


def check_value(name: str, value: Any) -> None:
    """One field's value on its own: its type, finiteness, range and choices."""
    kind, optional = field_kind(name)
    if value is None:
        if optional:
            return
        raise FedbenchError(f"{name} expects {TYPE_WORDS[kind]}, got none")
    if not has_kind(value, kind):
        raise FedbenchError(f"{name} expects {TYPE_WORDS[kind]}, got {value!r}")
    if kind == "float" and not math.isfinite(value):
        raise FedbenchError(f"{name} must be a finite number, got {value!r}")
    if name in BOUNDS and value not in BOUNDS[name]:
        raise FedbenchError(f"{name} must be {BOUNDS[name]}, got {value!r}")
    if name in CHOICES and value not in CHOICES[name]:
        raise FedbenchError(f"unknown {name} {value!r}; choose one of: {', '.join(CHOICES[name])}")


# ---------------------------------------------------------------- building configs

FIELD_TYPES = {f.name: f.type for f in fields(RunConfig)}
FIELD_KINDS = {name: _kind_of(typ) for name, typ in FIELD_TYPES.items()}


def config_from_dict(d: dict[str, Any]) -> RunConfig:
    """A RunConfig from a stored run.json "config": fields this build lacks are dropped and
    fields the record lacks take their defaults, so records of older versions still match."""
    return RunConfig(**{k: v for k, v in d.items() if k in FIELD_TYPES})
