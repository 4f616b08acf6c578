"""What a sweep runs: the configs of a grid (flags or a TOML sweep file) or of a paper table."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from fedbench.assembly import build_config, method_param_names, param_owner, preset_for_dataset
from fedbench.config import ALIASES, FIELD_TYPES, RunConfig, check_value
from fedbench.config_input import one_each, read_toml
from fedbench.errors import FedbenchError
from fedbench.identity import config_hash
from fedbench.methods import method_class

# ---------------------------------------------------------------- parsing flags


def parse_list(text: str | None, what: str, conv: Callable[[str], Any] = str) -> list | None:
    """'a,b,c' -> [a, b, c]; None stays None."""
    if text is None:
        return None
    items = [t.strip() for t in str(text).split(",") if t.strip()]
    if not items:
        raise FedbenchError(f"{what} expects a comma-separated list, got {text!r}")
    try:
        return [conv(t) for t in items]
    except ValueError:
        raise FedbenchError(
            f"{what} expects a comma-separated list of numbers, got {text!r}"
        ) from None


def parse_grid(items: Iterable[str]) -> dict[str, list[str]]:
    """--grid KEY=V1,V2,... (repeatable) -> {KEY: [V1, V2, ...]}."""
    out: dict[str, list[str]] = {}
    for item in items:
        key, sep, values = item.partition("=")
        key = key.strip()
        vals = [v.strip() for v in values.split(",") if v.strip()]
        if not sep or not key or not vals:
            raise FedbenchError(f"--grid expects KEY=V1,V2,... (e.g. rho=0.1,0.5), got {item!r}")
        if key in out:
            raise FedbenchError(f"--grid {key} given twice; list all its values in one --grid")
        out[key] = vals
    return out


def _grid_key_applies(key: str, method: str, methods: list[str]) -> bool:
    """Whether a --grid key varies runs of `method`: config fields (and aliases) and server
    optimizer or dataset parameters apply to every method, a method parameter only to the
    methods that have it."""
    if key in FIELD_TYPES or key in ALIASES or param_owner(key) is not None:
        return True
    name = key[len("method.") :] if key.startswith("method.") else key
    if name in method_param_names(method):
        return True
    if not any(name in method_param_names(m) for m in methods):
        raise FedbenchError(
            f"unknown field {key!r} in --grid: not a config field (docs/usage.md, Configuration) "
            f"nor a parameter of {', '.join(methods)} (see fedbench methods)"
        )
    return False


def grid_configs(
    preset: str | None = None,
    config_file: str | None = None,
    methods: list[str] | None = None,
    dataset: str | None = None,
    seeds: list[int] | None = None,
    grid: dict[str, list] | None = None,
    sets: dict[str, Any] | None = None,
    method_grids: dict[str, dict[str, list]] | None = None,
) -> list[RunConfig]:
    """Every combination of methods x grid values x seeds on top of preset/file/sets.
    A grid key that is a method parameter varies only the methods that have it."""
    sets = dict(sets or {})
    if dataset and not preset:
        preset = preset_for_dataset(dataset)
    if dataset:
        sets["dataset"] = dataset
    base = build_config(preset, config_file, sets, validate=False)
    methods = methods or [base.method]
    for m in methods:
        method_class(m)  # one-line error for an unknown method
    seeds = seeds if seeds is not None else [base.seed]
    grid = grid or {}
    method_grids = method_grids or {}
    for m in method_grids:
        if m not in methods:
            raise FedbenchError(f"sweep file has a grid for method {m!r}, which is not in methods")
    axes_of = {m: _method_axes(m, methods, grid, method_grids.get(m, {})) for m in methods}
    check_cell_count(sum(_cells(axes) for axes in axes_of.values()) * len(seeds), "grid")
    out: list[RunConfig] = []
    for m, axes in axes_of.items():
        for combo in itertools.product(*(vals for _, vals in axes)):
            over = {**sets, "method": m, **{k: v for (k, _), v in zip(axes, combo)}}
            for seed in seeds:
                out.append(build_config(preset, config_file, {**over, "seed": seed}))
    return dedupe(out)


# The most runs one sweep plans, counted from the grid's sizes before any config is built:
# planning takes about a millisecond a run (10,000: seconds), and a grid of 10^6 cells would
# plan for minutes and gigabytes before running anything. Larger studies: several sweeps,
# which may share one results folder.
MAX_CELLS = 10_000


def check_cell_count(cells: int, what: str) -> None:
    """Refuse a sweep of more than MAX_CELLS runs, before expanding it."""
    if cells > MAX_CELLS:
        raise FedbenchError(
            f"the {what} has {cells:,} runs, over fedbench's cap of {MAX_CELLS:,} per sweep; "
            "split it into several sweeps (fewer values or seeds each; they may share one "
            "results folder)"
        )


def _method_axes(m: str, methods: list[str], grid: dict, own: dict) -> list[tuple[str, list]]:
    """(key, values) of every grid axis that varies runs of method m: the shared grid's keys
    that apply to it, then its own grid (a sweep file's [grid.<method>])."""
    keys = [k for k in grid if _grid_key_applies(k, m, methods)]
    for k in own:
        if k not in method_param_names(m) and k not in FIELD_TYPES and k not in ALIASES:
            raise FedbenchError(f"unknown parameter {k!r} for method {m} in the sweep file")
    return [(k, grid[k]) for k in keys] + list(own.items())


def _cells(axes: list[tuple[str, list]]) -> int:
    return math.prod(len(vals) for _, vals in axes)


def dedupe(configs: Iterable[RunConfig]) -> list[RunConfig]:
    seen: set[str] = set()
    out = []
    for cfg in configs:
        key = config_hash(cfg)
        if key not in seen:
            seen.add(key)
            out.append(cfg)
    return out


def load_sweep_file(path: str | Path) -> dict[str, Any]:
    """A TOML sweep file -> keyword arguments of grid_configs. Example:

    preset = "fedlga-fmnist"
    methods = ["fedavg", "fedprox"]
    seeds = [0, 1, 2]
    [set]               # fixed fields for every run
    rounds = 100
    [grid]              # every combination
    rho = [0.1, 0.3, 0.5]
    [grid.fedprox]      # varied for one method only
    mu = [0.1, 0.5, 1.0]
    """
    p = Path(path)
    data = read_toml(p, "sweep file")
    known = {"preset", "config", "methods", "dataset", "seeds", "set", "grid"}
    unknown = sorted(set(data) - known)
    if unknown:
        raise FedbenchError(
            f"sweep file {p}: unknown key {unknown[0]!r}; keys: {', '.join(sorted(known))}"
        )
    try:
        return _sweep_file_values(data)
    except FedbenchError as e:
        raise FedbenchError(f"sweep file {p}: {e}") from None


def _sweep_file_values(data: dict[str, Any]) -> dict[str, Any]:
    """A sweep file's entries, each of the kind it must be, each field named once."""

    def expect(ok: bool, key: str, what: str) -> None:
        if not ok:
            raise FedbenchError(f"{key} must be {what}, got {data.get(key)!r}")

    for key in ("preset", "config", "dataset"):
        expect(isinstance(data.get(key, ""), str), key, "text")
    methods = data.get("methods")
    if isinstance(methods, str):
        methods = [methods]
    expect(methods is None or _nonempty_list(methods, str), "methods", "a list of method names")
    seeds = data.get("seeds")
    expect(seeds is None or _nonempty_list(seeds, int), "seeds", "a list of integers, e.g. [0, 1]")
    for seed in seeds or ():
        check_value("seed", seed)
    for key in ("set", "grid"):
        expect(isinstance(data.get(key, {}), dict), key, "a table ([set] / [grid] section)")
    grid, method_grids = {}, {}
    for k, v in data.get("grid", {}).items():
        if isinstance(v, dict):
            method_grids[k] = {kk: _grid_values(f"grid.{k}.{kk}", vv) for kk, vv in v.items()}
        else:
            grid[k] = _grid_values(f"grid.{k}", v)
    sets = dict(data.get("set", {}))
    fixed = [(k, v, f"[set] {k}") for k, v in sets.items()]
    fixed += [(k, v, f"[grid] {k}") for k, v in grid.items()]
    fixed += [(k, data[f], f) for k, f in (("seed", "seeds"), ("method", "methods")) if f in data]
    if "dataset" in data:
        fixed.append(("dataset", data["dataset"], "dataset"))
    one_each(fixed)
    for m, own in method_grids.items():
        one_each(fixed + [(k, v, f"[grid.{m}] {k}") for k, v in own.items()])
    return {
        "preset": data.get("preset"),
        "config_file": data.get("config"),
        "methods": methods,
        "dataset": data.get("dataset"),
        "seeds": seeds,
        "grid": grid,
        "sets": sets,
        "method_grids": method_grids,
    }


def _nonempty_list(v: Any, kind: type) -> bool:
    return isinstance(v, list) and bool(v) and all(type(x) is kind for x in v)


def _grid_values(key: str, v: Any) -> list:
    """A grid entry: a non-empty list of values (one value: a list of one)."""
    values = v if isinstance(v, list) else [v]
    if not values or any(isinstance(x, (list, dict)) for x in values):
        raise FedbenchError(f"{key} must be a non-empty list of values, e.g. [0.1, 0.5]")
    return values


def table_configs(spec, selection, rows=None) -> tuple[list[RunConfig], dict[str, int]]:
    """The configs a paper table needs (every seed of every runs cell; with `rows`, of those
    rows only: `sweep --add-method` trains the added rows), and the cells that cannot be built
    here with why (e.g. a method this build lacks)."""
    from fedbench.tables import cell_config

    configs: list[RunConfig] = []
    unavailable: dict[str, int] = {}
    cells = [c for c in spec.cells(selection.dataset) if c.kind == "runs"]
    cells = [c for c in cells if rows is None or c.row in rows]
    default_seeds = selection.seeds if selection.seeds is not None else spec.seeds
    check_cell_count(sum(len(c.seeds or default_seeds) for c in cells), f"table {spec.name}")
    for cell in cells:
        seeds = cell.seeds or default_seeds
        try:
            configs += [cell_config(cell, s, selection.preset, selection.sets) for s in seeds]
        except FedbenchError as e:
            unavailable[str(e)] = unavailable.get(str(e), 0) + 1
    return dedupe(configs), unavailable
