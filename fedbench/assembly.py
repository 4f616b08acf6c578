"""Assembling a run's config: preset -> TOML file -> `--set` -> method parameters -> validation.

The one module that knows configs, presets and methods together (fedbench.config knows only
fields; fedbench.identity turns an assembled config into its hash and run id).
"""

from __future__ import annotations

import dataclasses
from dataclasses import fields
from pathlib import Path
from typing import Any

from fedbench.config import (
    ALIASES,
    FIELD_TYPES,
    TYPE_WORDS,
    RunConfig,
)
from fedbench.config_input import (
    canonical_key,
    coerce_field,
    one_each,
    parse_param_text,
    read_toml,
)
from fedbench.errors import FedbenchError
from fedbench.methods import METHODS, check_param_value, method_class, method_params
from fedbench.methods.server_opt import check_server_opt, server_param_names
from fedbench.presets import PRESETS, get_preset


def validate_config(cfg: RunConfig) -> RunConfig:
    """Every field and the fields' combinations (RunConfig.validate_fields), the torch device,
    then the method's name and parameters; the first problem raises a one-line FedbenchError."""
    cfg.validate_fields()
    method_class(cfg.method)  # one line naming the methods there are
    if cfg.device != "auto":
        from fedbench.devices import check_device  # imports torch

        check_device(cfg.device)
    check_server_opt(cfg)
    if cfg.dataset_params:  # a dataset's own settings (the loaders load only for them)
        from fedbench.data.registry import dataset_params

        dataset_params(cfg)
    params = method_params(cfg.method, cfg.method_params)
    method_class(cfg.method).check_config(params, cfg)
    return cfg


def method_param(key: str, raw: Any) -> Any:
    """A method parameter's value, checked on its own; the key must be a parameter of some
    method (validate_config checks it against the run's method, which may be set later)."""
    if not any(key in {f.name for f in fields(m.Params)} for m in METHODS.values()):
        raise FedbenchError(
            f"unknown key {key!r}: not a config field (docs/usage.md, Configuration) nor a "
            "parameter of any method (see fedbench methods)"
        )
    value = parse_param_text(raw) if isinstance(raw, str) else raw
    check_param_value(key, value)
    return value


def typed_param(key: str, raw: Any) -> Any:
    """A server optimizer's or dataset's parameter, checked on its own (validate_config checks
    it against the run's server_opt or dataset, which may be set later)."""
    value = parse_param_text(raw) if isinstance(raw, str) else raw
    check_param_value(key, value)
    return value


# whose parameters a prefixed key names (server.NAME, data.NAME), and the config field they fill
PARAM_OWNERS = {"server": "server_params", "data": "dataset_params"}


def param_owner(name: str) -> str | None:
    """'server' or 'data' for a server optimizer's or a dataset's parameter: by its prefix, or
    a bare name that no method has and one of those has; None: a method's (or no one's)."""
    prefix, dot, _ = name.partition(".")
    if dot:
        return prefix if prefix in PARAM_OWNERS else None
    if any(name in {f.name for f in fields(m.Params)} for m in METHODS.values()):
        return None
    if name in server_param_names():
        return "server"
    from fedbench.data.registry import dataset_param_names  # the loaders: only for such a key

    return "data" if name in dataset_param_names() else None


def apply_overrides(cfg: RunConfig, overrides: dict[str, Any]) -> RunConfig:
    """Set fields by name (or paper alias), each value checked on its own; other keys are method
    parameters (method.NAME, a `method_params` table, or a bare NAME that some method has), or
    a server optimizer's or dataset's (server.NAME / data.NAME, a `server_params` /
    `dataset_params` table, or a bare NAME that one of them has)."""
    changes: dict[str, Any] = {}
    params: dict[str, Any] = {}  # method parameters given here
    typed: dict[str, dict[str, Any]] = {owner: {} for owner in PARAM_OWNERS}  # server, data
    tables = {table: owner for owner, table in PARAM_OWNERS.items()}
    for key, raw in overrides.items():
        name = ALIASES.get(key, key)
        owner = None if name in FIELD_TYPES else param_owner(name)
        if name in tables and isinstance(raw, dict):
            typed[tables[name]].update({k: typed_param(k, v) for k, v in raw.items()})
        elif owner is not None:
            typed[owner][name.partition(".")[2] or name] = typed_param(name, raw)
        elif name == "method_params":
            if not isinstance(raw, dict):
                raise FedbenchError(f"method_params expects {TYPE_WORDS['dict']}, got {raw!r}")
            params.update({k: method_param(k, v) for k, v in raw.items()})
        elif name in FIELD_TYPES:
            changes[name] = coerce_field(name, raw)
            if name == "method":
                method_class(changes[name])  # one line naming the methods there are
        else:
            params[canonical_key(name)] = method_param(canonical_key(name), raw)
    out = dataclasses.replace(cfg, **changes)
    # the old method's (server optimizer's, dataset's) parameters do not carry over to a new
    # one; those given here do
    kept = {} if out.method != cfg.method else cfg.method_params
    out.method_params = {**kept, **params}
    kept = {} if out.server_opt != cfg.server_opt else cfg.server_params
    out.server_params = {**kept, **typed["server"]}
    kept = {} if out.dataset != cfg.dataset else cfg.dataset_params
    out.dataset_params = {**kept, **typed["data"]}
    return out


def load_toml(path: str | Path) -> dict[str, Any]:
    """A TOML config file -> {key: value}; the entries of a [method] (name = the method) or
    [method_params] table become method.NAME keys."""
    items = []
    for k, v in read_toml(path, "config file").items():
        if k in ("method", "method_params") and isinstance(v, dict):
            for name, value in v.items():
                key = "method" if (k, name) == ("method", "name") else f"method.{name}"
                items.append((key, value, f"[{k}] {name}"))
        else:
            items.append((k, v, k))
    return one_each(items)


def build_config(
    preset: str | None = None,
    toml_path: str | None = None,
    overrides: dict[str, Any] | None = None,
    validate: bool = True,
) -> RunConfig:
    """preset, then TOML file, then key=value overrides (the command line): a later layer
    changes what an earlier one set; validated (unless asked not to)."""
    file_values: dict[str, Any] = {}
    try:
        if toml_path:
            file_values = load_toml(toml_path)
            preset = preset or file_values.pop("preset", None)
            file_values.pop("preset", None)  # the command line's --preset wins
        cfg = get_preset(preset or "default")
        cfg = apply_overrides(cfg, file_values)
    except FedbenchError as e:
        if toml_path and not str(e).startswith("config file "):
            raise FedbenchError(f"config file {toml_path}: {e}") from None
        raise
    if overrides:
        cfg = apply_overrides(cfg, overrides)
    return validate_config(cfg) if validate else cfg


def method_param_names(method: str) -> set[str]:
    """The parameter names of a method (the keys a sweep grid may route to it)."""
    return {f.name for f in fields(method_class(method).Params)}


def preset_for_dataset(dataset: str) -> str | None:
    """The preset a bare --dataset starts from: fedlga-<dataset> (the FedLGA setting) if there
    is one, else the only preset on that dataset; None: the default preset."""
    if f"fedlga-{dataset}" in PRESETS:
        return f"fedlga-{dataset}"
    on = [n for n, (_, v) in PRESETS.items() if v.get("dataset") == dataset]
    return on[0] if len(on) == 1 else None
