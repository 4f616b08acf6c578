"""Picking runs out of a results folder and telling them apart.

`RunFilter` is what `--dataset`, `--method`, `--seeds` and `--where FIELD=VALUE` select on
`table summary`, `plot curves` and `export`: a run is kept when each given field of its config
(a config field, a paper alias such as s or K, or a method parameter, defaults filled in) equals
one of the values given (`--where s=0.5,0.9`: either), and its status where `status` is given.
A field no run could have is refused before anything is read.

`varying_fields` says which identity fields differ within a set of runs, so that listings and
plot legends show them: three stragglers runs read `fedavg stragglers=0.5 s0`, not `fedavg s0`
three times.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from fedbench.config import ALIASES, FIELD_TYPES, config_from_dict
from fedbench.config_input import canonical_key, coerce_field, parse_param_text
from fedbench.errors import FedbenchError

STATUS = "status"  # run.json's status may be filtered on too


def _method_param_names() -> set[str]:
    from fedbench.methods import METHODS

    return {f for cls in METHODS.values() for f in cls.Params.__dataclass_fields__}


@dataclass
class RunFilter:
    """field -> allowed values (already of the field's type); empty: every run."""

    wanted: dict[str, list[Any]] = field(default_factory=dict)

    @staticmethod
    def parse(
        dataset: str | None = None,
        method: str | None = None,
        seeds: Iterable[int] | None = None,
        where: Iterable[str] = (),
    ) -> RunFilter:
        """The options' values -> a filter; a bad field or value is one line."""
        items = [(k, v) for k, v in (("dataset", dataset), ("method", method)) if v]
        if seeds is not None:
            items.append(("seed", ",".join(str(s) for s in seeds)))
        for text in where:
            key, sep, values = str(text).partition("=")
            if not sep or not key.strip() or not values.strip():
                raise FedbenchError(f"--where expects FIELD=VALUE[,VALUE...], got {text!r}")
            items.append((key.strip(), values))
        out = RunFilter()
        for key, values in items:
            name = STATUS if key == STATUS else canonical_key(ALIASES.get(key, key))
            if name in out.wanted:
                raise FedbenchError(f"{key} is filtered on twice; list its values in one --where")
            try:
                out.wanted[name] = [_value(name, v) for v in values.split(",") if v.strip()]
            except FedbenchError as e:
                raise FedbenchError(f"{key}={values}: {e}") from None
        return out

    def __bool__(self) -> bool:
        return bool(self.wanted)

    def keeps(self, meta: dict) -> bool:
        """Whether a run (its run.json) has every wanted field at one of the wanted values."""
        if not self.wanted:
            return True
        values = run_fields(meta)
        return all(values.get(k, _MISSING) in vs for k, vs in self.wanted.items())

    def describe(self) -> str:
        return " ".join(f"{k}={','.join(map(str, v))}" for k, v in self.wanted.items())

    def options(self) -> str:
        """The filter as --where options (a command that selects the same runs)."""
        return " ".join(f"--where {k}={','.join(map(str, v))}" for k, v in self.wanted.items())


_MISSING = object()


def _value(name: str, text: str) -> Any:
    """A --where value as the field's type (a method parameter: number, bool or text)."""
    text = text.strip()
    if name == STATUS:
        return text
    if name == "method":
        from fedbench.methods import method_class

        method_class(text)  # one line naming the methods there are
    if name in FIELD_TYPES:
        return coerce_field(name, text)
    if name not in _method_param_names():
        raise FedbenchError(
            f"{name} is not a config field (docs/usage.md, Configuration), a method parameter "
            "(see fedbench methods) or status"
        )
    value = parse_param_text(text)
    return float(value) if isinstance(value, int) and not isinstance(value, bool) else value


def run_fields(meta: dict) -> dict[str, Any]:
    """A run's config fields (defaults filled in), its method parameters (the method's
    defaults filled in, as numbers compare: 1 == 1.0) and its status, by name."""
    from fedbench.identity import canonical_method_params

    cfg = config_from_dict(meta.get("config") or {})
    out: dict[str, Any] = {k: v for k, v in cfg.to_dict().items() if k != "method_params"}
    for k, v in canonical_method_params(cfg).items():
        out.setdefault(k, v)
    out[STATUS] = meta.get("status")
    return out


# ---------------------------------------------------------------- telling runs apart

NEVER_SHOWN = ("data_dir", "device", "preset", "method_params", "method_version")


def identity_fields(meta: dict) -> dict[str, Any]:
    """What a run's identity holds (fedbench.identity): the fields and method parameters that
    differ from their defaults, the method's parameters flattened, as text."""
    from fedbench.identity import identity

    d = identity(config_from_dict(meta.get("config") or {}))
    out = {k: v for k, v in d.items() if k not in NEVER_SHOWN}
    out.update(d.get("method_params") or {})
    return {k: _text(v) for k, v in out.items()}


def _text(v: Any) -> str:
    return v if isinstance(v, str) else json.dumps(v, sort_keys=True, default=str)


def varying_fields(metas: list[dict], always: Iterable[str] = ()) -> list[str]:
    """The identity fields whose values differ among these runs (a field a run leaves at its
    default counts as that default), in config order then method parameters; `always` (e.g.
    method, seed) are left out: the caller shows them anyway."""
    rows = [identity_fields(m) for m in metas]
    keys = list(dict.fromkeys(k for r in rows for k in r))
    order = {k: i for i, k in enumerate(FIELD_TYPES)}
    keys.sort(key=lambda k: order.get(k, len(order)))
    skip = set(always)
    if "method" in skip:  # shown by the method's label, `fedavg+adam` (identity.method_label)
        skip.add("server_opt")
    return [k for k in keys if k not in skip and len({r.get(k, "") for r in rows}) > 1]


def run_label(meta: dict, shown: list[str]) -> str:
    """method (with its server optimizer), the shown fields as k=v, seed: `fedavg
    stragglers=0.5 s0`, `fedavg+adam server_lr=0.01 s0`."""
    from fedbench.identity import method_label

    cfg = meta.get("config") or {}
    parts = [method_label(cfg)]
    values = run_fields(meta)
    parts += [f"{k}={_short(values[k])}" for k in shown if values.get(k) is not None]
    return " ".join(parts + [f"s{cfg.get('seed')}"])


def sort_key(v: Any) -> tuple:
    """Numbers before text, numbers by value (seed 10 after seed 9), None last."""
    if isinstance(v, (int, float)) and not isinstance(v, bool) and v == v:
        return (0, float(v), "")
    return (1 if v is not None else 2, 0.0, str(v))


def run_order(meta: dict, shown: list[str]) -> tuple:
    """A run's place in a listing: method, the shown fields, seed."""
    values = run_fields(meta)
    return tuple(sort_key(values.get(k)) for k in ("method", *shown, "seed"))


def _short(v: Any) -> str:
    return f"{v:g}" if isinstance(v, float) else str(v)
