"""The typed run configuration: one dataclass, settable from presets, TOML files and `key=value`.

Every field is validated before any work starts; a bad value raises FedbenchError with a
one-line message naming the field and what is allowed.
"""

from __future__ import annotations

import dataclasses
import sys
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from fedbench.errors import FedbenchError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

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
STRAGGLER_EPOCHS = ("code", "paper")
STRAGGLER_POLICIES = ("partial", "drop", "drop-fedavg")
AGGREGATIONS = ("samples", "uniform")
DTYPES = ("float32", "float64")

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
    # server step after every method's aggregate (fedbench.methods.base.Method.server_step)
    server_lr: float = 1.0  # w <- w + server_lr * (aggregate - w); 1: the aggregate itself
    server_momentum: float = 0.0  # beta of m <- beta m + (aggregate - w) (FedAvgM: 0.9)
    # device heterogeneity
    hetero: str = "none"
    rho: float = 0.5  # fedlga: fraction of the K sampled devices that are slow
    tau_max: int = 4  # fedlga: tau_i ~ U{1..tau_max}, E_i = E - tau_i + 1
    stragglers: float = 0.0  # stragglers: fraction s of the sampled devices
    straggler_epochs: str = "code"  # code: U{1..E-1}; paper: U{1..E}
    straggler_policy: str = "partial"  # partial | drop | drop-fedavg (FedProx paper's baseline)
    # evaluation and records
    target_acc: float | None = None
    stop_at_target: bool = False  # end the run at the first evaluation >= target_acc
    eval_every: int = 1
    eval_train: bool = False  # also evaluate the global model's loss on all training data
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

    def canonical_method_params(self) -> dict[str, Any]:
        """The method's parameters with its defaults filled in and types coerced, so that
        `mu=1`, `mu=1.0` and (fedprox's default) no mu at all name the same run."""
        from fedbench.methods import method_params

        try:
            return dataclasses.asdict(method_params(self.method, self.method_params))
        except (FedbenchError, TypeError):  # a method this build lacks: keep what was given
            return dict(self.method_params)

    def config_hash(self, method_version: int | None = None) -> str:
        """The run's identity: what changes the numbers, defaults left out (fedbench.identity).
        method_version: the one a stored run ran with (default: this build's)."""
        from fedbench.identity import config_hash

        return config_hash(self, method_version)

    def run_id(self) -> str:
        return f"{self.method}-{self.dataset}-s{self.seed}-{self.config_hash()}"

    # ---- validation ----
    def validate(self) -> RunConfig:
        self.validate_data()
        _one_of("model", self.model, MODELS)
        _one_of("init", self.init, ("default", "zeros"))
        _one_of("norm", self.norm, NORMS)
        _one_of("hetero", self.hetero, HETERO)
        _one_of("straggler_epochs", self.straggler_epochs, STRAGGLER_EPOCHS)
        _one_of("straggler_policy", self.straggler_policy, STRAGGLER_POLICIES)
        _one_of("aggregation", self.aggregation, AGGREGATIONS)
        _one_of("dtype", self.dtype, DTYPES)
        _at_least("clients_per_round", self.clients_per_round, 1)
        if self.clients_per_round > self.num_clients:
            raise FedbenchError(
                f"clients_per_round (K) = {self.clients_per_round} exceeds num_clients (N) = "
                f"{self.num_clients}; choose K <= N"
            )
        _at_least("local_epochs", self.local_epochs, 1)
        if self.local_steps is not None:
            _at_least("local_steps", self.local_steps, 1)
        _at_least("batch_size", self.batch_size, 1)
        _at_least("rounds", self.rounds, 1)
        _at_least("eval_every", self.eval_every, 1)
        _at_least("hidden", self.hidden, 1)
        _positive("lr", self.lr)
        _positive("lr_decay", self.lr_decay)
        _in_unit("rho", self.rho)
        _in_unit("stragglers", self.stragglers)
        _in_unit("momentum", self.momentum, closed_right=False)
        _positive("server_lr", self.server_lr)
        _in_unit("server_momentum", self.server_momentum, closed_right=False)
        if self.weight_decay < 0:
            raise FedbenchError(f"weight_decay must be >= 0, got {self.weight_decay}")
        if self.grad_clip is not None:
            _positive("grad_clip", self.grad_clip)
        if self.syn_alpha < 0 or self.syn_beta < 0:
            raise FedbenchError("syn_alpha and syn_beta are standard deviations and must be >= 0")
        if self.target_acc is not None:
            _in_unit("target_acc", self.target_acc)
        elif self.stop_at_target:
            raise FedbenchError("stop_at_target needs target_acc; set target_acc=0.65 (say)")
        if self.hetero == "fedlga":
            e = self.work_units
            if not 1 <= self.tau_max < e:
                raise FedbenchError(
                    f"tau_max must be in [1, E-1] = [1, {e - 1}] (E = {e} local "
                    f"{'steps' if self.local_steps else 'epochs'}), got {self.tau_max}"
                )
        if self.hetero == "stragglers" and self.straggler_epochs == "code" and self.work_units < 2:
            raise FedbenchError(
                "straggler_epochs=code draws U{1..E-1} and needs E >= 2; "
                "set E >= 2 or straggler_epochs=paper"
            )
        if self.device != "auto":
            from fedbench.devices import check_device

            check_device(self.device)
        # method name and parameters
        from fedbench.methods import method_class, method_params

        params = method_params(self.method, self.method_params)
        method_class(self.method).check_config(params, self)
        return self

    def validate_data(self) -> RunConfig:
        """The dataset, partition and input-pipeline fields (all `fedbench data` needs)."""
        _one_of("dataset", self.dataset, DATASETS)
        _one_of("partition", self.partition, PARTITIONS)
        _one_of("normalize", self.normalize, NORMALIZE)
        _at_least("num_clients", self.num_clients, 1)
        _at_least("classes_per_client", self.classes_per_client, 1)
        _positive("dirichlet_alpha", self.dirichlet_alpha)
        if self.dataset in NATURAL_DATASETS and self.partition != "natural":
            raise FedbenchError(
                f"dataset {self.dataset} has its own per-device split; use partition=natural"
            )
        if self.dataset not in NATURAL_DATASETS and self.partition == "natural":
            others = ", ".join(p for p in PARTITIONS if p != "natural")
            raise FedbenchError(
                f"dataset {self.dataset} has no natural split; use partition={others}"
            )
        if self.partition == "imbalance" and self.xi < 1:
            raise FedbenchError(f"xi (large/small size ratio) must be >= 1, got {self.xi}")
        _positive("powerlaw_sigma", self.powerlaw_sigma)
        _at_least("num_shards", self.num_shards, 1)
        if self.partition == "shards" and self.num_shards < self.num_clients:
            raise FedbenchError(
                f"num_shards = {self.num_shards} < num_clients (N) = {self.num_clients}; "
                "every device needs a shard"
            )
        if self.dataset == "quadratic":
            if self.quad_group not in (1, 2, 3, 4):
                raise FedbenchError(f"quad_group must be 1, 2, 3 or 4, got {self.quad_group}")
            if self.num_clients != 2 or self.model != "quadratic":
                raise FedbenchError(
                    "dataset quadratic has M = 2 devices and model quadratic; "
                    "set N=2 and model=quadratic"
                )
        if self.resize is not None:
            _at_least("resize", self.resize, 1)
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
        return self


def _one_of(name: str, value: Any, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise FedbenchError(f"unknown {name} {value!r}; choose one of: {', '.join(allowed)}")


def _at_least(name: str, value: int, low: int) -> None:
    if not isinstance(value, int) or value < low:
        raise FedbenchError(f"{name} must be an integer >= {low}, got {value!r}")


def _positive(name: str, value: float) -> None:
    if not value > 0:
        raise FedbenchError(f"{name} must be > 0, got {value!r}")


def _in_unit(name: str, value: float, closed_right: bool = True) -> None:
    ok = 0 <= value <= 1 if closed_right else 0 <= value < 1
    if not ok:
        interval = "[0, 1]" if closed_right else "[0, 1)"
        raise FedbenchError(f"{name} must be in {interval}, got {value!r}")


# ---------------------------------------------------------------- building configs

FIELD_TYPES = {f.name: f.type for f in fields(RunConfig)}


def _coerce(key: str, raw: Any) -> Any:
    """Turn a CLI string (or TOML value) into the field's type."""
    typ = str(FIELD_TYPES[key])
    if not isinstance(raw, str):
        if "float" in typ and isinstance(raw, int) and not isinstance(raw, bool):
            return float(raw)
        return raw
    text = raw.strip()
    if "| None" in typ and text.lower() in ("none", "null", ""):
        return None
    try:
        if typ.startswith("bool"):
            if text.lower() in ("1", "true", "yes", "on"):
                return True
            if text.lower() in ("0", "false", "no", "off"):
                return False
            raise ValueError
        if typ.startswith("int"):
            return int(text)
        if typ.startswith("float"):
            return float(text)
    except ValueError:
        raise FedbenchError(f"{key} expects {typ.split(' ')[0]}, got {raw!r}") from None
    return text


def _parse_value(text: str) -> Any:
    """A method parameter from the CLI: number, bool or string."""
    low = text.strip().lower()
    if low in ("true", "false"):
        return low == "true"
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    return text.strip()


def apply_overrides(cfg: RunConfig, overrides: dict[str, Any]) -> RunConfig:
    """Set fields by name (or paper alias); keys that are no field go to the method's params."""
    changes: dict[str, Any] = {}
    mparams = dict(cfg.method_params)
    for key, raw in overrides.items():
        name = ALIASES.get(key, key)
        if name.startswith("method."):
            mparams[name[len("method.") :]] = _parse_value(raw) if isinstance(raw, str) else raw
        elif name == "method_params":
            mparams.update(raw)
        elif name in FIELD_TYPES:
            changes[name] = _coerce(name, raw)
        else:
            mparams[key] = _parse_value(raw) if isinstance(raw, str) else raw
    out = dataclasses.replace(cfg, **changes)
    if "method" in changes and changes["method"] != cfg.method:
        # parameters of the old method do not carry over to the new one
        mparams = {k: v for k, v in mparams.items() if k not in cfg.method_params}
    out.method_params = mparams
    return out


def parse_set(items: tuple[str, ...] | list[str]) -> dict[str, str]:
    out = {}
    for item in items:
        if "=" not in item:
            raise FedbenchError(f"--set expects key=value, got {item!r}")
        k, v = item.split("=", 1)
        out[k.strip()] = v
    return out


def load_toml(path: str | Path) -> dict[str, Any]:
    p = Path(path)
    if not p.is_file():
        raise FedbenchError(f"config file {p} not found")
    try:
        data = tomllib.loads(p.read_text())
    except tomllib.TOMLDecodeError as e:
        raise FedbenchError(f"config file {p} is not valid TOML: {e}") from None
    flat: dict[str, Any] = {}
    for k, v in data.items():
        if isinstance(v, dict) and k in ("method_params", "method"):
            if k == "method":
                flat["method"] = v.pop("name", None) or flat.get("method")
            flat.setdefault("method_params", {}).update(v)
        else:
            flat[k] = v
    if flat.get("method") is None:
        flat.pop("method", None)
    return flat


def config_from_dict(d: dict[str, Any]) -> RunConfig:
    """A RunConfig from a stored run.json "config": fields this build lacks are dropped and
    fields the record lacks take their defaults, so records of older versions still match."""
    return RunConfig(**{k: v for k, v in d.items() if k in FIELD_TYPES})


def build_config(
    preset: str | None = None,
    toml_path: str | None = None,
    overrides: dict[str, Any] | None = None,
    validate: bool = True,
) -> RunConfig:
    """preset, then TOML file, then key=value overrides; validated (unless asked not to)."""
    from fedbench.presets import get_preset

    cfg = get_preset(preset) if preset else get_preset("default")
    if toml_path:
        file_values = load_toml(toml_path)
        if "preset" in file_values and not preset:
            cfg = get_preset(file_values.pop("preset"))
        cfg = apply_overrides(cfg, file_values)
    if overrides:
        cfg = apply_overrides(cfg, overrides)
    return cfg.validate() if validate else cfg
