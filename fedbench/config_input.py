"""What a user gives, read into config field values: `--set key=value` and TOML files, each
field once a source (under any of its names: paper aliases, `method.` prefixes), a text value
coerced to its field's type and checked (fedbench.config.check_value). Torch-free, like config."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from fedbench.config import ALIASES, TYPE_WORDS, check_value, field_kind, has_kind
from fedbench.errors import FedbenchError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def coerce_field(key: str, raw: Any) -> Any:
    """A CLI string or TOML value -> the field's type, checked on its own (check_value)."""
    kind, optional = field_kind(key)
    value = _parse_field(key, kind, optional, raw) if isinstance(raw, str) else raw
    if kind == "float" and has_kind(value, "int"):
        value = float(value)
    check_value(key, value)
    return value


def _parse_field(key: str, kind: str, optional: bool, raw: str) -> Any:
    text = raw.strip()
    if optional and text.lower() in ("none", "null", ""):
        return None
    try:
        if kind == "bool":
            if text.lower() in ("1", "true", "yes", "on"):
                return True
            if text.lower() in ("0", "false", "no", "off"):
                return False
            raise ValueError
        if kind == "int":
            return int(text)
        if kind == "float":
            return float(text)
    except ValueError:
        raise FedbenchError(f"{key} expects {TYPE_WORDS[kind]}, got {raw!r}") from None
    return text if kind == "str" else raw


def parse_param_text(text: str) -> Any:
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


def canonical_key(key: str) -> str:
    """The field or parameter a key names: paper aliases resolved, `method.` (`server.`,
    `data.`: a server optimizer's, a dataset's parameter) dropped."""
    name = ALIASES.get(key, key)
    owner, dot, bare = name.partition(".")
    return bare if dot and owner in ("method", "server", "data") else name


def one_each(items: Iterable[tuple[str, Any, str]]) -> dict[str, Any]:
    """(key, value, how it was given) of one source (the command line, one TOML file) ->
    {key: value}. A field or method parameter given twice there, under any of its names, is an
    error even when the values agree: which one counts is never guessed."""
    out: dict[str, Any] = {}
    seen: dict[str, str] = {}
    for key, value, how in items:
        name = canonical_key(key)
        if name in seen:
            raise FedbenchError(f"{name} is given twice ({seen[name]} and {how}); give it once")
        seen[name] = how
        out[key] = value
    return out


def layer(lower: dict[str, Any], upper: dict[str, Any]) -> dict[str, Any]:
    """Two sources' key=values, the upper one (e.g. the command line over a file) replacing
    the lower one's value of the same field under any of its names."""
    names = {canonical_key(k) for k in upper}
    return {**{k: v for k, v in lower.items() if canonical_key(k) not in names}, **upper}


def parse_set(items: tuple[str, ...] | list[str]) -> dict[str, str]:
    """--set KEY=VALUE items -> {KEY: VALUE}; each field once (one_each)."""
    pairs = []
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise FedbenchError(f"--set expects key=value, got {item!r}")
        pairs.append((key.strip(), value, f"--set {item}"))
    return one_each(pairs)


def read_toml(path: str | Path, what: str) -> dict[str, Any]:
    """A user's TOML file; a missing, unreadable, binary or malformed one is one line naming
    it."""
    p = Path(path)
    if not p.is_file():
        raise FedbenchError(f"{what} {p} " + ("is not a file" if p.exists() else "not found"))
    try:
        text = p.read_bytes().decode("utf-8-sig")
    except OSError as e:
        raise FedbenchError(f"{what} {p}: cannot read it ({e.strerror})") from None
    except UnicodeDecodeError:
        raise FedbenchError(
            f"{what} {p} is not UTF-8 text (binary, or UTF-16?); save it as UTF-8 TOML"
        ) from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise FedbenchError(f"{what} {p} is not valid TOML: {e}") from None
