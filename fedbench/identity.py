"""A run's identity: the hash that says "this config already ran", stable across upgrades.

The identity (config_hash(cfg), the last part of run_id(cfg)) is a hash of what changes the
numbers:

- every config field except where the data lives (data_dir), the preset's name and the torch
  device, **left out when it equals the field's default**;
- the method's parameters, resolved (defaults filled in, types coerced, so `mu=1`, `mu=1.0` and
  no mu at all are one run), **left out when equal to the parameter's default**;
- the method's behaviour version (``Method.version``).

So a config field or method parameter added later, whose default keeps the old behaviour, leaves
every stored run's identity unchanged: an old run.json lacks it, it reads as its default, and a
default is not hashed. The other direction needs a rule, because a stored run.json holds only
the method parameters the user gave: **changing a parameter's default, or what a method computes,
bumps its ``version``** (stored runs keep the version they ran with, so they stop matching).
Config fields are stored in full, so a changed config default already changes the identity of
runs that used the old one; a new field must be added with the default that reproduces the old
behaviour. Where the data came from is not part of the identity: it is the data fingerprint,
compared when deciding whether a run is already done (see runner.check_not_done).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from typing import TYPE_CHECKING, Any

from fedbench.errors import FedbenchError
from fedbench.methods import method_class, method_params  # registers Params; no torch
from fedbench.methods.server_opt import server_opt_class, server_params

if TYPE_CHECKING:
    from fedbench.config import RunConfig

NOT_IDENTITY = ("data_dir", "preset", "device")  # where and how, not what, a run computes


def _default(f: dataclasses.Field) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
        return f.default_factory()  # type: ignore[misc]
    return dataclasses.MISSING


def _non_default(obj: Any) -> dict[str, Any]:
    """The fields of a dataclass instance whose value differs from the field's default."""
    out = {}
    for f in dataclasses.fields(obj):
        v = getattr(obj, f.name)
        if not _same(v, _default(f)):
            out[f.name] = v
    return out


def _same(a: Any, b: Any) -> bool:
    """Equal as values, where True is not 1 but 1 is 1.0."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return a == b


def method_version(method: str) -> int | None:
    """The behaviour version of a method; None for a method this build lacks."""
    try:
        return int(method_class(method).version)
    except FedbenchError:
        return None


def method_identity(cfg: RunConfig) -> dict[str, Any]:
    """The method parameters that differ from their defaults (all given ones if the method or
    its parameters are unknown to this build: such a record matches no current config)."""
    try:
        return _non_default(method_params(cfg.method, cfg.method_params))
    except Exception:  # unknown method or parameter, wrong type: keep what was given
        given = cfg.method_params
        return dict(given) if isinstance(given, dict) else {"?": repr(given)}


def identity(cfg: RunConfig, version: int | None = None) -> dict[str, Any]:
    """What the hash covers (see the module docstring). `version`: the method version a stored
    run ran with (default: this build's)."""
    d = _non_default(cfg)
    for k in (*NOT_IDENTITY, "method_params", "server_params", "dataset_params"):
        d.pop(k, None)
    d["method"] = cfg.method
    d["method_params"] = method_identity(cfg)
    d["method_version"] = version if version is not None else method_version(cfg.method)
    d.update(server_identity(cfg))
    if cfg.dataset_params and (own := dataset_identity(cfg)):
        d["dataset_params"] = own
    return d


def dataset_identity(cfg: RunConfig) -> dict[str, Any]:
    """The dataset's own settings that differ from their defaults (all given ones for a dataset
    this build lacks)."""
    from fedbench.data.registry import dataset_params  # the loaders: only for such a run

    try:
        return _non_default(dataset_params(cfg))
    except Exception:
        return dict(cfg.dataset_params)


def server_identity(cfg: RunConfig) -> dict[str, Any]:
    """The server optimizer's parameters that differ from their defaults, and its version once
    bumped past 1 (nothing for the built-in ones at their defaults: stored ids stay)."""
    d: dict[str, Any] = {}
    try:
        cls = server_opt_class(cfg.server_opt)
        params = _non_default(server_params(cfg.server_opt, cfg.server_params))
    except Exception:  # a server optimizer this build lacks: keep what was given
        cls, params = None, dict(cfg.server_params)
    if params:
        d["server_params"] = params
    if cls is not None and cls.version != 1:
        d["server_opt_version"] = cls.version
    return d


def config_hash(cfg: RunConfig, version: int | None = None) -> str:
    blob = json.dumps(identity(cfg, version), sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:12]


def run_id(cfg: RunConfig) -> str:
    """A run's name: method (with its server optimizer, method_label), dataset and seed for
    people, the config hash for identity."""
    return f"{method_label(cfg)}-{cfg.dataset}-s{cfg.seed}-{config_hash(cfg)}"


def method_label(cfg: RunConfig | dict) -> str:
    """The method as people name it: `fedavg`, or with the server optimizer that makes it
    another method, `fedavg+adam` (FedAdam), `fedavg+momentum` (FedAvgM). A RunConfig or its
    dict (run.json's config; fields it lacks are at their defaults)."""
    get = cfg.get if isinstance(cfg, dict) else lambda k, d=None: getattr(cfg, k, d)
    method, opt = get("method", "?"), get("server_opt", "sgd") or "sgd"
    if opt != "sgd":
        return f"{method}+{opt}"
    return f"{method}+momentum" if get("server_momentum", 0) else str(method)


# log10 of the best server learning rates Reddi et al. 2021 found per adaptive optimizer over
# their six tasks (App. D; google-research/federated optimization/hyperparameters.md), and on
# how many of the six it was at most 0.1
BEST_SERVER_LR = {"adagrad": (-1.5, 1.0, 4), "adam": (-2.5, 0.0, 4), "yogi": (-2.5, 0.0, 4)}


def server_lr_note(cfg: RunConfig) -> str | None:
    """One line when an adaptive server optimizer runs at server_lr = 1, the default meant
    for sgd (the aggregate itself): its step moves every weight by ~server_lr a round."""
    if cfg.server_opt not in BEST_SERVER_LR or cfg.server_lr != 1.0:
        return None
    low, high, below = BEST_SERVER_LR[cfg.server_opt]
    return (
        f"server_opt={cfg.server_opt} at the default server_lr=1 (meant for sgd): Reddi et al. "
        f"2021 (App. D) found its best server lr between 10^{low:g} and 10^{high:g}, at most 0.1 "
        f"on {below} of 6 tasks; set one, e.g. --set server_lr=0.01"
    )


def canonical_method_params(cfg: RunConfig) -> dict[str, Any]:
    """The method's parameters with its defaults filled in and types coerced, so that
    `mu=1`, `mu=1.0` and (fedprox's default) no mu at all name the same run."""
    try:
        return dataclasses.asdict(method_params(cfg.method, cfg.method_params))
    except (FedbenchError, TypeError):  # a method this build lacks: keep what was given
        return dict(cfg.method_params)
