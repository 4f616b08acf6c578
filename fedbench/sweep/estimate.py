"""A sweep's compute, said before it runs: runs x rounds x model, and the time it should take on
this device at the rates of finished runs of the same setting in the results folder.

A rate is a finished run's wall time (start to end: data loading, training, evaluation) per
round, divided by its stack size (runs trained together in one pass share that time), from runs
on this device: the same CPU model and instruction set (any thread count), or the same GPU. A
setting is what sets a round's work (RATE_FIELDS); its rate is the median over its runs. A run
with no such rate is counted and left out of the time."""

from __future__ import annotations

import re
import statistics
from collections import defaultdict
from datetime import datetime
from pathlib import Path

from fedbench.config import RunConfig

RATE_FIELDS = (
    "dataset",
    "model",
    "hidden",
    "resize",
    "clients_per_round",
    "batch_size",
    "local_steps",
    "local_epochs",
    "eval_every",
    "eval_train",
    "dtype",
    "method",
)
_THREADS = re.compile(r", \d+ threads?\)$")


def device_label(name: str | None) -> str:
    """A run.json device_name without its thread count: 'cpu (AMD EPYC, x86_64, AVX512)'."""
    return _THREADS.sub(")", name or "?")


def rate_key(config: dict) -> tuple:
    return tuple(str(config.get(f)) for f in RATE_FIELDS)


def run_rate(meta: dict) -> float | None:
    """Wall seconds per round of one finished run (see the module's docstring), or None."""
    try:
        wall = datetime.fromisoformat(meta["ended"]) - datetime.fromisoformat(meta["started"])
        rounds = int(meta["summary"]["rounds_run"])
        stack = max(1, int(meta.get("stack_size") or 1))
    except (KeyError, TypeError, ValueError):
        return None
    if rounds <= 0 or wall.total_seconds() <= 0:
        return None
    return wall.total_seconds() / rounds / stack


def measured_rates(results: Path, device: str) -> dict[tuple, list[float]]:
    """{setting: wall seconds per round of each finished run on `device`} in results."""
    from fedbench.results import RunIndex

    rates: dict[tuple, list[float]] = defaultdict(list)
    if not Path(results).is_dir():
        return rates
    # a damaged record has no rate; the plan has already said what it reruns
    for rec in RunIndex(results, on_error="skip", must_exist=False).records():
        if rec.status != "complete" or device_label(rec.meta.get("device_name")) != device:
            continue
        rate = run_rate(rec.meta)
        if rate is not None:
            rates[rate_key(rec.config)].append(rate)
    return rates


def this_device(cfg: RunConfig) -> str:
    """The device a run of cfg would use, as device_label names it."""
    from fedbench.devices import device_name, resolve_device

    return device_label(device_name(resolve_device(cfg.device)))


def model_line(configs: list[RunConfig]) -> str:
    """runs x rounds x model (D parameters) on a dataset, for each such group."""
    from fedbench.resources import data_shape, model_dim

    groups: dict[str, int] = defaultdict(int)
    for cfg in configs:
        shape = data_shape(cfg)
        size = f" (D {model_dim(cfg, shape):,})" if shape is not None else ""
        groups[f"{cfg.rounds} rounds of {cfg.model}{size} on {cfg.dataset}"] += 1
    parts = [f"{n} runs x {what}" for what, n in groups.items()]
    more = f"; and {len(parts) - 3} more settings" if len(parts) > 3 else ""
    return f"compute: {sum(groups.values())} runs, {sum(c.rounds for c in configs):,} rounds: " + (
        "; ".join(parts[:3]) + more
    )


def time_line(configs: list[RunConfig], results: Path, jobs: int) -> str:
    """The expected time of the configs on this device, and where its rate comes from."""
    if not configs:
        return "expected time: nothing to run"
    device = this_device(configs[0])
    rates = measured_rates(results, device)
    seconds, timed, used = 0.0, 0, set()
    for cfg in configs:
        key = rate_key(cfg.to_dict())
        if rates.get(key):
            seconds += cfg.rounds * statistics.median(rates[key])
            timed += 1
            used.add(key)
    sources = sum(len(rates[key]) for key in used)
    if not timed:
        return (
            f"expected time: unknown (no finished run of these settings on {device} in "
            f"{results} yet: each finished run gives its setting's rate)"
        )
    untimed = len(configs) - timed
    return (
        f"expected time: {_duration(seconds / jobs)}"
        + (f" for {timed} of {len(configs)} runs" if untimed else "")
        + f" on {device}, at the wall-time rates of {sources} finished "
        + ("run" if sources == 1 else "runs")
        + f" of the same settings in {results}"
        + (f"; {untimed} runs have no measured rate here yet" if untimed else "")
    )


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
