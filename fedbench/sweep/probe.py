"""A probe: a few rounds of one run of each setting, timed on this machine now, before the plan's
estimate is said (`--probe SECONDS`, default PROBE_SECONDS; 0: none).

The store's rates were measured on another machine, or on this one at another load (the shipped
runs at loads 1-12 on 2 cores: one setting's runs 3-30x apart), and an older record does not say
which. A probe measures what a run of the setting takes here and now, at the runs' --threads,
under the load the machine has: a run is then its setup (data, model, the first round's warm-up,
writing) + rounds x a round + evaluations x an evaluation (each the mean after the first).
Settings are probed most expected time first while the probe's seconds last; the others' store
rates are scaled by the probed settings' ratio (their probed time over their store estimate:
`speed`). A probe runs in a temporary folder (never recorded), never downloads, and a probe that
fails leaves its setting to the store."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from fedbench.config import RunConfig
from fedbench.data.locate import no_download_env
from fedbench.identity import run_id
from fedbench.sweep.rates import Rates, rate_key

PROBE_SECONDS = 30.0  # the default --probe: about this long probing, in all
PROBE_ENV = "FEDBENCH_PROBE"  # the default's override (0: no probe; the tests set it)
ROUND_SECONDS = 5.0  # a probe runs about this long of rounds (quick rounds: more of them)
MIN_ROUNDS, MAX_ROUNDS = 3, 1000
AGAIN = 0.2  # the process's first probe runs again (warm) when it took under this share
_COLD = [True]  # no probe has run in this process yet


@dataclass
class Probe:
    """What one probe measured (seconds)."""

    setup: float  # the run's wall less its rounds and evaluations (_after_first)
    round: float  # a training round (the mean after the first)
    eval: float  # an evaluation (the mean after the first)
    rounds: int  # rounds probed
    wall: float  # the probe run's wall time

    def run_seconds(self, rounds: int, eval_every: int) -> float:
        """A run of `rounds` rounds: setup + rounds x a round + its evaluations x one (round 0,
        every eval_every-th and the last: fedbench.training.runner)."""
        every = max(1, eval_every or 1)
        evals = 1 + rounds // every + (1 if rounds % every else 0)
        return self.setup + rounds * self.round + evals * self.eval


def default_seconds() -> float:
    """--probe's default: $FEDBENCH_PROBE, else PROBE_SECONDS."""
    text = os.environ.get(PROBE_ENV, "").strip()
    try:
        return max(0.0, float(text)) if text else PROBE_SECONDS
    except ValueError:
        return PROBE_SECONDS


def probe_rounds(rates: Rates, cfg: RunConfig, device: str) -> int:
    """Rounds for about ROUND_SECONDS of rounds at the store's rate (MIN_ROUNDS where none);
    never more than the run's own."""
    found = rates.config_rate(cfg, device)
    want = MIN_ROUNDS if found is None else math.ceil(ROUND_SECONDS / max(found[0], 1e-3))
    return max(1, min(cfg.rounds, max(MIN_ROUNDS, min(MAX_ROUNDS, want))))


def probe_plan(rates: Rates, configs: list[RunConfig], device: str, seconds: float,
               threads: int | None = None) -> None:  # fmt: skip
    """Probe the configs' settings (the most expected time first) for about `seconds` in all:
    rates.probes, rates.speed, rates.probe_spent set (the module's docstring)."""
    if seconds <= 0 or not configs:
        return
    groups: dict[tuple, list[RunConfig]] = {}
    for cfg in configs:
        groups.setdefault(rate_key(cfg.to_dict()), []).append(cfg)
    ranked = sorted(groups.items(), key=lambda kv: -_static(rates, kv[1], device))
    began = time.monotonic()
    for key, cfgs in ranked:
        left = seconds - (time.monotonic() - began)
        rounds = probe_rounds(rates, cfgs[0], device)
        found = rates.config_rate(cfgs[0], device)
        if left <= 0 or (found is not None and found[0] * rounds > left):
            continue
        probe = first_probe(rates, cfgs[0], rounds, threads, seconds)
        if probe is not None:
            rates.probes[key] = probe
    rates.probe_spent = time.monotonic() - began
    rates.speed = speed(rates, groups, device)


def first_probe(rates: Rates, cfg: RunConfig, rounds: int, threads: int | None,
                seconds: float) -> Probe | None:  # fmt: skip
    """run_probe; the process's first, when quick, once more: its setup warm (the runs of a
    sweep after its first share the process), and the difference (imports, compiling, the
    first allocations) as rates.warmup, counted once (fedbench.sweep.rates.Estimate)."""
    cold = _COLD[0]
    probe = run_probe(cfg, rounds, threads)
    if probe is None or not cold:
        return probe
    _COLD[0] = False
    if probe.wall > AGAIN * seconds:
        return probe
    warm = run_probe(cfg, rounds, threads)
    if warm is None:
        return probe
    rates.warmup = max(0.0, probe.setup - warm.setup)
    return warm


def _static(rates: Rates, cfgs: list[RunConfig], device: str) -> float:
    """The configs' seconds from the store's rates (inf where unknown: probed first)."""
    guess = rates.estimate(cfgs, device)
    return guess.seconds if guess.timed == len(cfgs) else math.inf


def speed(rates: Rates, groups: dict, device: str) -> float:
    """The median over the probed settings of a run's probed time over its store estimate (1.0
    where none has both): what the unprobed settings' store rates are scaled by."""
    ratios = []
    for key, probe in rates.probes.items():
        cfg = groups[key][0] if key in groups else None
        found = rates.config_rate(cfg, device) if cfg is not None else None
        if found is not None and found[0] > 0:
            rounds = rates.expected_rounds(cfg)
            ratios.append(probe.run_seconds(rounds, cfg.eval_every) / (found[0] * rounds))
    return statistics.median(ratios) if ratios else 1.0


def run_probe(cfg: RunConfig, rounds: int, threads: int | None = None) -> Probe | None:
    """`rounds` rounds of cfg (no target stop) in a temporary folder, as a sweep runs it
    (fedbench.sweep.one_run), timed; None when it did not complete."""
    from fedbench.sweep.one_run import execute_run

    short = dataclasses.replace(cfg, rounds=rounds, stop_at_target=False)
    with tempfile.TemporaryDirectory(prefix="fedbench-probe-") as tmp, no_download_env():
        out = execute_run(short.to_dict(), tmp, False, threads)
        folder = Path(tmp) / run_id(short)
        if out["status"] != "complete" or not (folder / "run.json").is_file():
            return None
        meta = json.loads((folder / "run.json").read_text())
        return probe_of(out["seconds"], meta, _rounds_table(folder / "rounds.parquet"))


def _rounds_table(path: Path) -> list[dict]:
    import pandas as pd

    return pd.read_parquet(path, columns=["round", "round_seconds", "eval_seconds"]).to_dict(
        "records"
    )


def probe_of(wall: float, meta: dict, rows: list[dict]) -> Probe | None:
    """A Probe from a finished run's wall seconds (timed around it: run.json's times are whole
    seconds), its run.json and its rounds' rows (round, round_seconds, eval_seconds; round 0 is
    the first evaluation)."""
    rounds = int(meta["summary"]["rounds_run"])
    trains = [r["round_seconds"] for r in rows if r["round"] >= 1 and _number(r["round_seconds"])]
    evals = [r["eval_seconds"] for r in rows if _number(r.get("eval_seconds"))]
    if rounds <= 0 or wall <= 0 or not trains:
        return None
    one, each = _after_first(trains), _after_first(evals) if evals else 0.0
    setup = max(0.0, wall - rounds * one - len(evals) * each)
    return Probe(setup, one, each, rounds, wall)


def _after_first(seconds: list[float]) -> float:
    """The mean, the first left out when there are more (its warm-up counts as setup): a
    run's time is the sum of its rounds, and on a busy machine a few rounds wait long (the
    median would leave them out)."""
    rest = seconds[1:] or seconds
    return sum(rest) / len(rest)


def _number(x) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x)
