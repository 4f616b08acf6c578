"""fedbench's Python API (re-exported as `fedbench.train` and `fedbench.load_runs`):

    import fedbench

    meta, rounds = fedbench.train(preset="fedprox-synthetic-1-1", method="fedprox", mu=0.1,
                                  rounds=20, plugins=["my_method.py"])
    runs, rounds = fedbench.load_runs("results", method="fedprox", where={"s": 0.5})

`train` is `fedbench train` without the terminal: the same config layering (preset, TOML file,
key=value overrides with the paper aliases and method parameters), validation, records in
results/<run_id>/ and "already done" rule (a finished run of the same identity and data is
returned as stored instead of being run again, unless overwrite=True). `load_runs` reads a
results folder as two DataFrames: one row per run, and one row per run and round with its
run_id. Neither needs the command line; `load_runs` never imports torch.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import fedbench.papers  # noqa: F401 -- an entry point: the paper presets and tables register
from fedbench import plugins as plugin_loader
from fedbench.config import RunConfig, config_from_dict
from fedbench.devices import check_threads
from fedbench.errors import FedbenchError


def train(
    config: Any = None,
    *,
    preset: str | None = None,
    results: str | Path = "results",
    overwrite: bool = False,
    plugins: Iterable[str] = (),
    threads: int | None = None,
    **overrides: Any,
):
    """Run one config and return (run.json as a dict, rounds as a DataFrame).

    config: a RunConfig, a dict of fields, or a TOML file's path (None: the preset alone);
    preset: a named setting (`fedbench presets`); overrides: config fields, paper aliases
    (N, K, E, B, P, s) or method parameters, as `--set` takes them (later layers win).
    plugins: files or modules to load first (besides FEDBENCH_PLUGINS and entry points)."""

    _check_flag("overwrite", overwrite)
    _check_threads(threads)
    folder = _folder("results", results)
    plugin_loader.load_all(_names("plugins", plugins))
    cfg = _config(config, preset, overrides)
    from fedbench.training import threads as thread_policy
    from fedbench.training.runner import RunExists
    from fedbench.training.runner import train as run_train

    thread_policy.configure(threads)
    try:
        return run_train(cfg, folder, overwrite=overwrite)
    except RunExists:
        return _stored(cfg, folder)


def _check_flag(name: str, value: Any) -> None:
    """True or False only: 'no' or 0 must not pass as a wish (as a CLI flag cannot)."""
    if not isinstance(value, bool):
        raise FedbenchError(f"{name} must be True or False, got {value!r}")


def _check_threads(threads: Any) -> None:
    if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int)
                                or threads < 1):  # fmt: skip
        raise FedbenchError(f"threads must be a whole number >= 1 or None, got {threads!r}")
    if threads is not None:
        check_threads(threads, "threads")


def _folder(what: str, value: Any) -> Path:
    if not isinstance(value, (str, Path)) or not str(value).strip():
        raise FedbenchError(f"{what} must be a folder's path, got {value!r}; e.g. {what}='results'")
    return Path(value)


def _names(what: str, values: Any) -> list[str]:
    """An iterable of texts (a single text is refused: it would be read letter by letter)."""
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise FedbenchError(f"{what} must be a list, got {values!r}; e.g. {what}=[{values!r}]")
    return [str(v) for v in values]


def _config(config: Any, preset: str | None, overrides: dict):
    from fedbench.assembly import apply_overrides, build_config, validate_config

    for what, value, example in (("preset", preset, "'default'"), ("config", config, "'run.toml'")):
        if isinstance(value, (str, Path)) and not str(value).strip():
            raise FedbenchError(f"{what} must not be empty, got {value!r}; e.g. {what}={example}")
    if isinstance(config, RunConfig):
        return validate_config(apply_overrides(config, overrides) if overrides else config)
    if isinstance(config, dict):
        return build_config(preset, None, {**config, **overrides})
    if config is not None and not isinstance(config, (str, Path)):
        raise FedbenchError(
            f"config must be a RunConfig, a dict of fields or a TOML path, got {config!r}"
        )
    return build_config(preset, str(config) if config is not None else None, overrides)


def _stored(cfg, results: Path):
    """The finished run of cfg's identity that made train() skip it: (meta, rounds)."""
    from fedbench.identity import config_hash
    from fedbench.results import RunIndex

    index = RunIndex(results, on_error="fail")
    rec = index.finished(config_hash(cfg))
    if rec is None:  # pragma: no cover -- RunExists said there is one
        raise FedbenchError(f"run of {cfg.method} on {cfg.dataset} vanished from {results}")
    return rec.meta, index.rounds(rec)


def load_runs(
    results: str | Path = "results",
    shipped: bool = True,
    *,
    dataset: str | None = None,
    method: str | None = None,
    where: dict[str, Any] | Iterable[str] | None = None,
    plugins: Iterable[str] = (),
    on_error: str = "skip",
    table: str | None = None,
):
    """(runs, rounds) DataFrames of a results folder's runs, as `fedbench table summary`
    reads them (one record per run, copies once). runs: one row per run (run_id, status,
    every config field, method parameters as `param.NAME`, summary, data fingerprint,
    device, versions, plugins); rounds: every rounds.parquet with its run_id first.
    dataset / method / where select runs as `--dataset` / `--method` / `--where` do (where:
    {"s": 0.5} or ["s=0.5"]). table: only the runs that paper table uses (on `dataset`, as
    `fedbench table NAME --dataset D` picks them: fedbench.tables.selection). shipped: also
    the runs of the shipped store (results/shipped, fedbench.results.shipped_store; a run both there
    and in `results` is read once, from the store); the runs' `source` column says which
    ("shipped" or "results"). on_error: "skip" leaves out a damaged or hostile record
    (fedbench.safe_read) with a warning naming its file, "fail" raises a FedbenchError naming
    it."""
    import pandas as pd

    from fedbench.results import RunIndex
    from fedbench.run_filter import RunFilter

    _check_load_args(results, shipped, dataset, method, on_error)
    plugin_loader.load_all(_names("plugins", plugins))
    texts = [f"{k}={v}" for k, v in where.items()] if isinstance(where, dict) else \
        _names("where", where or ())  # fmt: skip
    # with a table, dataset names its variant (synthetic-iid), which the table's cells select
    flt = RunFilter.parse(None if table else dataset, method, None, texts)
    index = RunIndex(Path(results), on_error=on_error, must_exist=not shipped, shipped=shipped)
    used = _table_runs(table, dataset, results, index, on_error) if table else None
    rows, frames = [], []
    for key in index.by_key:
        for rec in index.runs(key):
            if used is not None and rec.run_dir not in used:
                continue
            if not flt.keeps(rec.meta) or not index.rounds_ok(rec, report=True):
                continue
            rounds = index.rounds(rec)
            if rounds is None:
                continue
            rows.append(_run_row(rec))
            # the CLI's rounds.parquet (and the store) carry run_id already: one, first
            rounds = rounds.drop(columns=["run_id"], errors="ignore")
            rounds.insert(0, "run_id", rows[-1]["run_id"])
            frames.append(rounds)
    for problem in index.problems:  # left out: said, never silent
        warnings.warn(f"skipped: {problem}", stacklevel=3)
    runs = pd.DataFrame(rows)
    rounds_all = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    return runs, rounds_all


def _check_load_args(results, shipped, dataset, method, on_error: str) -> None:
    """load_runs' arguments checked as the CLI checks its options: one line naming the fix."""
    _check_flag("shipped", shipped)
    _folder("results", results)
    for name, value in (("dataset", dataset), ("method", method)):
        if value is not None and not isinstance(value, str):
            raise FedbenchError(f"{name} must be a name or None, got {value!r}; e.g. {name}='a,b'")
    if on_error not in ("skip", "fail"):
        raise FedbenchError(f"on_error must be 'skip' or 'fail', got {on_error!r}")


def _table_runs(table: str, dataset, results, index, on_error: str) -> set:
    """The run folders of the records a paper table uses (fedbench.tables.selection)."""
    from fedbench.tables import get_table
    from fedbench.tables.selection import make_selection, table_records

    spec = get_table(table)
    if dataset is not None:
        spec.variants(dataset)  # one line for a dataset the table lacks
    sel = make_selection(dataset, None, None, (), results)
    return {rec.run_dir for rec in table_records(spec, sel, index, on_error)}


def _run_row(rec) -> dict:
    """One run as a flat row: identity, status, config, method parameters, summary, data,
    device and versions (nested values as JSON text)."""
    from fedbench.identity import canonical_method_params, config_hash

    meta = rec.meta
    cfg = config_from_dict(rec.config)
    row: dict[str, Any] = {"run_id": rec.run_id, "config_hash": config_hash(cfg),
                           "status": rec.status,
                           "source": "shipped" if rec.shipped else "results"}  # fmt: skip
    row.update({k: v for k, v in cfg.to_dict().items() if k != "method_params"})
    row.update({f"param.{k}": v for k, v in canonical_method_params(cfg).items()})
    row.update(rec.summary)
    row["data_fingerprint"] = rec.fingerprint
    for key in ("device", "device_name", "fedbench_version", "torch_version", "method_version",
                "started", "ended"):  # fmt: skip
        row[key] = meta.get(key)
    row["plugins"] = json.dumps(meta.get("plugins") or [], sort_keys=True)
    return row
