"""A sweep's compute, said before it runs: runs x rounds x model (its FLOPs, resized inputs
counted), and the time it should take on this device at the measured rates of finished runs in
the results folder and the shipped store (fedbench.sweep.rates says how a rate is found: the same
setting here, the same setting on another device scaled, or a like setting scaled by FLOPs)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from fedbench.config import RunConfig
from fedbench.devices import device_name, resolve_device
from fedbench.sweep.probe import default_seconds, probe_plan
from fedbench.sweep.rates import RATE_FIELDS, Rates, device_label, rate_key, run_rate

__all__ = ["RATE_FIELDS", "device_label", "rate_key", "run_rate"]


def measured_rates(results: Path, device: str, shipped=False) -> dict[tuple, list[float]]:
    """{setting: wall seconds per round of each finished run on `device`} in results (and the
    shipped store, with shipped=True)."""
    return Rates.read(results, shipped).by_device.get(device, {})


def this_device(cfg: RunConfig) -> str:
    """The device a run of cfg would use, as device_label names it."""

    return device_label(device_name(resolve_device(cfg.device)))


def model_line(configs: list[RunConfig]) -> str:
    """runs x rounds x model (D parameters, inputs resized) on a dataset, for each such group,
    and the FLOPs of the whole (fedbench.sweep.rates.round_flops) where every config has one."""
    from fedbench.resources import data_shape, model_dim
    from fedbench.sweep.rates import round_flops

    groups: dict[str, int] = defaultdict(int)
    flops = 0.0
    for cfg in configs:
        shape = data_shape(cfg)
        size = f"D {model_dim(cfg, shape):,}" if shape is not None else ""
        px = f"inputs resized to {cfg.resize} px" if cfg.resize else ""
        what = ", ".join(x for x in (size, px) if x)
        groups[
            f"{cfg.rounds} rounds of {cfg.model}{f' ({what})' if what else ''} on {cfg.dataset}"
        ] += 1
        per_round = round_flops(cfg) if flops is not None else None
        flops = None if per_round is None else flops + per_round * cfg.rounds
    parts = [f"{n} runs x {what}" for what, n in groups.items()]
    more = f"; and {len(parts) - 3} more settings" if len(parts) > 3 else ""
    total = f" (~{flops:.2g} FLOP)" if flops else ""
    return (
        f"compute: {sum(groups.values())} runs, {sum(c.rounds for c in configs):,} rounds{total}: "
        + ("; ".join(parts[:3]) + more)
    )


def plan_estimate(configs: list[RunConfig], results: Path, shipped: bool = True,
                  probe: float | None = None, threads: int | None = None):  # fmt: skip
    """(the configs' Estimate on this device, whether the shipped store was read), as
    time_line says it: the rates of results (and the store), a probe here first."""
    from fedbench.results.shipped_store import store_root

    device = this_device(configs[0])
    shipped = shipped and store_root() is not None
    rates = Rates.read(results, shipped)
    probe_plan(rates, configs, device, default_seconds() if probe is None else probe, threads)
    return rates.estimate(configs, device), shipped


def time_line(configs: list[RunConfig], results: Path, jobs: int, shipped: bool = True,
              probe: float | None = None, threads: int | None = None) -> str:  # fmt: skip
    """The expected time of the configs on this device, and where its rates come from
    (fedbench.sweep.rates: runs here, on another device scaled, or scaled by FLOPs; a probe of
    about `probe` seconds here now first, fedbench.sweep.probe: None its default, 0 none)."""
    if not configs:
        return "expected time: nothing to run"
    device = this_device(configs[0])
    guess, shipped = plan_estimate(configs, results, shipped, probe, threads)
    where = f"{results}" + (" and the shipped store" if shipped else "")
    if not guess.timed:
        return (
            f"expected time: unknown (no finished run comparable to these settings on any "
            f"device in {where} yet: each finished run gives its setting's rate)"
        )
    untimed = len(configs) - guess.timed
    return (
        f"expected time: {_duration(guess.seconds / jobs)}"
        + (f" for {guess.timed} of {len(configs)} runs" if untimed else "")
        + f" on {device}, {guess.source_text(where)}"
        + (
            f"; {untimed} runs have no comparable run yet ({guess.untimed_text()})"
            if untimed
            else ""
        )
    )


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
