"""Measured rates: how long a round of a setting takes, from the finished runs in a results
folder and the shipped store, and an estimate of a list of configs on this device.

A rate is a finished run's wall time (start to end: data loading, training, evaluation) per
round, divided by its stack size (runs trained together in one pass share that time). A device
is the CPU model and instruction set (any thread count), or the GPU. A setting is what sets a
round's work (RATE_FIELDS); its rate is the median over its runs. A config's rate, first found:
1. here: its setting's runs on this device;
2. device: its setting's runs on another device, times that device's factor: the median ratio
   of this device's rate to that device's over the settings both have run (unscaled when they
   share none, and said so);
3. flops: the runs of the nearest setting of the same dataset and model (here, else on another
   device as in 2), times the ratio of their FLOPs a round (round_flops: resized inputs and the
   local steps counted).
A config with none of these (a dataset and model never run anywhere) has no estimate.

Basis: where the setting's runs recorded their CPU seconds (run.json cpu_seconds, issue 33), the
rate is their CPU seconds a round, converted to wall for this machine now: x max(1, load / cores)
on a CPU (a one-thread run waits for a core in proportion; load_factor), unconverted on a GPU.
Older runs carry only wall time, taken as measured, under the load the machine had then: scaling
those by the load now as well counted a busy machine twice (measured: the shipped FMNIST runs of
table sfl-fmnist-lr, 0.29 s a round under the campaign's load, ran at 0.15 s at load 3.5 and
0.38 s at load 9.6; x1.75 and x4.8 for the load now said 0.50 and 1.38 s).
fedbench.sweep.accuracy sets each shipped run's estimate beside its measured time."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from fedbench.config import RunConfig, config_from_dict

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
    "eval_local",
    "dtype",
    "method",
    # a round's work also grows with the devices' sizes (their number and partition) and the
    # slow devices' share of it (table tau's, stragglers)
    "num_clients",
    "partition",
    "hetero",
    "tau_max",
    "slow_work",
    "stragglers",
)
FAMILY = 2  # RATE_FIELDS[:FAMILY]: what a FLOPs scaling keeps (dataset and model)
METHOD = RATE_FIELDS.index("method")
_DEFAULTS = {f.name: f.default for f in dataclasses.fields(RunConfig)}
_THREADS = re.compile(r", \d+ threads?\)$")


def device_label(name: str | None) -> str:
    """A run.json device_name without its thread count: 'cpu (AMD EPYC, x86_64, AVX512)'."""
    return _THREADS.sub(")", name or "?")


def rate_key(config: dict) -> tuple:
    """The setting of a config dict; a field an older record lacks takes its default (a record
    without eval_local is a run without it)."""
    return tuple(str(config.get(f, _DEFAULTS.get(f))) for f in RATE_FIELDS)


def kin_key(cfg: RunConfig) -> str:
    """A config less its seeds: runs that differ only by seed are kin."""
    d = {k: v for k, v in cfg.to_dict().items() if k not in ("seed", "data_seed")}
    return json.dumps(d, sort_keys=True, default=str)


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


def run_cpu_rate(meta: dict) -> float | None:
    """CPU seconds per round of one finished run (cpu_seconds is already its share of a
    stack's), or None for a run that did not record them."""
    try:
        cpu = float(meta["cpu_seconds"])
        rounds = int(meta["summary"]["rounds_run"])
    except (KeyError, TypeError, ValueError):
        return None
    return cpu / rounds if rounds > 0 and cpu > 0 and math.isfinite(cpu) else None


def round_flops(cfg: RunConfig) -> float | None:
    """Approximate FLOPs of one round: K devices' local steps of B samples (6 x D a sample,
    forward and backward) and one evaluation of the test set (2 x D a sample, every
    eval_every rounds). A resized image counts its pixels: a conv net's D does not grow with
    them, its work does. None where the dataset's loader does not tell its sizes."""
    from fedbench.resources import data_shape, local_steps, model_dim

    try:
        shape = data_shape(cfg)
        if shape is None:
            return None
        d = float(model_dim(cfg, shape))
    except Exception:  # an estimate never stops a command: no figure instead
        return None
    pixels = 1.0
    if cfg.resize and len(shape.input_shape) == 3 and cfg.model not in ("mlp", "logreg"):
        pixels = (cfg.resize / shape.input_shape[1]) * (cfg.resize / shape.input_shape[2])
    train = 6.0 * d * cfg.clients_per_round * local_steps(cfg, shape) * cfg.batch_size
    test = 2.0 * d * shape.test / max(1, cfg.eval_every or 1)
    return pixels * (train + test)


@dataclass
class Estimate:
    """The seconds of the timed configs, and how each config's rate was found."""

    seconds: float = 0.0
    timed: int = 0
    how: Counter = field(default_factory=Counter)  # here / device / flops / unscaled
    used: dict = field(default_factory=dict)  # (device, setting) -> its runs, each used
    devices: set = field(default_factory=set)  # other devices whose runs were used
    untimed: list = field(default_factory=list)  # (dataset, model) with no comparable run
    load: str = ""  # this machine's load now, said (applied to CPU rates only)
    basis: Counter = field(default_factory=Counter)  # configs from cpu / wall rates
    speed: float = 1.0  # the unprobed settings' scale (fedbench.sweep.probe)
    probed: int = 0  # settings probed
    probe_spent: float = 0.0  # seconds the probes took
    targets: Counter = field(default_factory=Counter)  # runs stopping at a target: kin / full
    warmup: float = 0.0  # seconds a process's first run adds, once

    @property
    def runs(self) -> int:
        """The finished runs whose rates were used."""
        return sum(self.used.values())

    def source_text(self, where: str) -> str:
        words = {
            "here": "runs of the same settings on this device",
            "device": "the same settings on " + ", ".join(sorted(self.devices)) + " scaled by the "
            "devices' ratio over settings both ran",
            "unscaled": "the same settings on " + ", ".join(sorted(self.devices)) + " unscaled "
            "(no setting run on both devices to compare them)",
            "flops": "like settings (same dataset and model) scaled by FLOPs a round",
        }
        probed = self.how.get("probe", 0)
        parts = [f"{n} from {words[k]}" for k, n in self.how.most_common() if k != "probe"]
        if parts and probed and self.speed != 1.0:
            parts.append(f"those x{self.speed:.2f} (the probed settings' time here now over "
                         "their estimate from the store)")  # fmt: skip
        parts += [self.load] if parts and self.load else []
        rates = "wall-time rates"
        if self.basis["cpu"]:
            rule = "(wall = CPU x max(1, load / cores) now)"
            rates = f"CPU-time rates {rule}" if not self.basis["wall"] else (
                f"CPU-time rates for {self.basis['cpu']} runs {rule}, wall-time rates for the rest"
            )  # fmt: skip
        pieces = [self.probe_text(probed)] if probed else []
        if parts:
            pieces.append(f"from the {rates} of {self.runs} finished runs in {where}: "
                          + "; ".join(parts))  # fmt: skip
        return "; ".join(pieces + self.target_text())

    def probe_text(self, probed: int) -> str:
        warm = f"; a process's first run +{self.warmup:.1f} s" if self.warmup >= 0.05 else ""
        return (f"{probed} runs from a probe here now ({self.probed} settings, a few rounds "
                f"of one run each, timed: {self.probe_spent:.0f} s{warm})")  # fmt: skip

    def target_text(self) -> list[str]:
        """How the rounds of runs that stop at their target were counted."""
        out = []
        if self.targets["kin"]:
            out.append(f"{self.targets['kin']} runs stop at their target: their rounds are "
                       "the median their other seeds' runs ran")  # fmt: skip
        if self.targets["full"]:
            out.append(f"{self.targets['full']} runs may stop at their target sooner: counted "
                       "at their full rounds")  # fmt: skip
        return out

    def untimed_text(self) -> str:
        pairs = sorted({f"{m} on {d}" for d, m in self.untimed})
        return "nothing run of " + ", ".join(pairs)


class Rates:
    """Every finished run's rate, by device and setting (with one config dict per setting)."""

    def __init__(self) -> None:
        self.by_device: dict[str, dict[tuple, list[float]]] = defaultdict(lambda: defaultdict(list))
        self.configs: dict[tuple, dict] = {}
        # CPU seconds a round of the runs that recorded them (a run without has only its wall)
        self.cpu: dict[str, dict[tuple, list[float]]] = defaultdict(lambda: defaultdict(list))
        self._load: tuple[float, str, str] | None = None
        # rounds run by the runs that stop at their target, by config less its seeds (kin)
        self.target_rounds: dict[str, list[int]] = defaultdict(list)
        # fedbench.sweep.probe: {setting: Probe} measured here now, the unprobed settings'
        # scale (the probed ones' time here over their store estimate), the seconds it took
        self.probes: dict[tuple, object] = {}
        self.speed = 1.0
        self.probe_spent = 0.0
        self.warmup = 0.0  # a process's first run's extra setup (fedbench.sweep.probe)

    @classmethod
    def read(cls, results: Path | str, shipped: bool = True) -> Rates:
        from fedbench.results import RunIndex

        rates = cls()
        if not Path(results).is_dir() and not shipped:
            return rates
        # a damaged record has no rate; the plan has already said what it reruns
        index = RunIndex(results, on_error="skip", must_exist=False, shipped=shipped)
        for rec in index.records():
            rate = run_rate(rec.meta) if rec.status == "complete" else None
            if rate is not None:
                rates.add(device_label(rec.meta.get("device_name")), rec.config, rate,
                          run_cpu_rate(rec.meta))  # fmt: skip
                rates.add_target(rec.config, rec.meta)
        return rates

    def add_target(self, config: dict, meta: dict) -> None:
        """The rounds a finished run that stops at its target ran, under its kin's key."""
        if not config.get("stop_at_target"):
            return
        try:
            self.target_rounds[kin_key(config_from_dict(config))].append(
                int(meta["summary"]["rounds_run"])
            )
        except Exception:  # a record of an older or foreign config: no kin from it
            return

    def expected_rounds(self, cfg: RunConfig) -> int:
        """The rounds a run of cfg is expected to run: a run that stops at its target, the
        median of its kin's runs (other seeds) where the store has them; else its rounds."""
        kin = self.target_rounds.get(kin_key(cfg)) if cfg.stop_at_target else None
        return int(statistics.median(kin)) if kin else cfg.rounds

    def add(self, device: str, config: dict, rate: float, cpu: float | None = None) -> None:
        key = rate_key(config)
        self.by_device[device][key].append(rate)
        if cpu is not None:
            self.cpu[device][key].append(cpu)
        self.configs.setdefault(key, config)

    def median(self, device: str, key: tuple) -> float:
        """A setting's seconds a round on a device: its CPU rates x the load now where its runs
        recorded them, else its wall rates (the module's docstring)."""
        cpu = self.cpu.get(device, {}).get(key)
        if cpu:
            return statistics.median(cpu) * (self.load()[0] if device.startswith("cpu") else 1.0)
        return statistics.median(self.by_device[device][key])

    def basis(self, device: str | None, key: tuple) -> str:
        return "cpu" if self.cpu.get(device, {}).get(key) else "wall"

    def factor(self, device: str, other: str) -> float | None:
        """This device's rate over the other's, the median over the settings both ran."""
        here, there = self.by_device.get(device, {}), self.by_device.get(other, {})
        ratios = [statistics.median(here[k]) / statistics.median(there[k]) for k in here
                  if k in there]  # fmt: skip
        return statistics.median(ratios) if ratios else None

    def per_round(self, key: tuple, device: str) -> tuple[float, str, int, str | None] | None:
        """(seconds a round, how, runs used, their device) of a setting: steps 1-2."""
        if self.by_device.get(device, {}).get(key):
            found = self.by_device[device][key]
            return self.median(device, key), "here", len(found), device
        others = [(len(runs[key]), d) for d, runs in self.by_device.items() if runs.get(key)]
        if not others:
            return None
        _, other = max(others)
        found = self.by_device[other][key]
        factor = self.factor(device, other)
        how = "device" if factor is not None else "unscaled"
        return self.median(other, key) * (factor or 1.0), how, len(found), other

    def load(self) -> tuple[float, str, str]:
        """load_factor(), read once."""
        if self._load is None:
            self._load = load_factor()
        return self._load

    def config_rate(self, cfg: RunConfig, device: str):
        """(seconds a round, how, runs used, their device, their setting) of cfg, or None: at
        the load its runs ran under (the module's docstring)."""
        key = rate_key(cfg.to_dict())
        found = self.per_round(key, device)
        if found is not None:
            return (*found, key)
        flops = round_flops(cfg)
        like = [k for k in self.configs if k[:FAMILY] == key[:FAMILY]]
        if flops is None or not like:
            return None
        scored = []
        for k in like:
            theirs = _flops_of(self.configs[k])
            rate = self.per_round(k, device)
            if theirs and rate is not None:
                scored.append((_likeness(key, k, rate[1]), abs(math.log(flops / theirs)), k,
                               theirs, rate))  # fmt: skip
        if not scored:
            return None
        _, _, k, theirs, (sec, how, n, other) = min(scored, key=lambda s: s[:2])
        return sec * flops / theirs, "flops" if how == "here" else how, n, other, k

    def round_rate(self, cfg: RunConfig, device: str) -> float | None:
        """A round's seconds of cfg: its probe's (a round and an evaluation), else its rate
        scaled as the estimate scales it; None where it has neither."""
        probe = self.probes.get(rate_key(cfg.to_dict()))
        if probe is not None:
            return probe.round + probe.eval
        found = self.config_rate(cfg, device)
        return None if found is None else found[0] * self.speed

    def estimate(self, configs: list[RunConfig], device: str) -> Estimate:
        out = Estimate(speed=self.speed, probed=len(self.probes), probe_spent=self.probe_spent,
                       warmup=self.warmup)  # fmt: skip
        for cfg in configs:
            rounds = self.expected_rounds(cfg)
            if cfg.stop_at_target:
                out.targets["kin" if rounds != cfg.rounds else "full"] += 1
            probe = self.probes.get(rate_key(cfg.to_dict()))
            if probe is not None:
                out.seconds += probe.run_seconds(rounds, cfg.eval_every)
                out.timed += 1
                out.how["probe"] += 1
                continue
            found = self.config_rate(cfg, device)
            if found is None:
                out.untimed.append((cfg.dataset, cfg.model))
                continue
            sec, how, n, other, used = found
            out.seconds += rounds * sec * self.speed
            out.timed += 1
            out.how[how] += 1
            out.basis[self.basis(other, used)] += 1
            out.used[(other, used)] = n
            if other != device:
                out.devices.add(other)
        out.seconds += self.warmup if out.how["probe"] else 0.0
        if out.timed and device.startswith("cpu"):
            out.load = self.load()[1] if out.basis["wall"] else self.load()[2]
        return out


def _likeness(key: tuple, theirs: tuple, how: str) -> tuple:
    """How far a like setting is from key, most telling first: runs on this device, the same
    method (SFL's chain, SAM's second pass, FedDyn's terms cost more than their FLOPs say),
    the fewest other fields apart."""
    apart = sum(a != b for a, b in zip(key, theirs))
    return how != "here", key[METHOD] != theirs[METHOD], apart


def load_factor(load: float | None = None) -> tuple[float, str, str]:
    """(how much slower a one-thread run is now than on a quiet machine, said beside wall rates,
    said beside CPU rates): cores / load of the CPUs when the 1-minute load (or `load`) is above
    the cores (at load 9.9 on 2 cores FedProx's synthetic runs took 4.8x their quiet rate; this
    says 4.95x). Applied to CPU rates; beside wall rates only said (the module's docstring)."""
    try:
        load = os.getloadavg()[0] if load is None else load
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return 1.0, "", ""
    factor = max(1.0, load / max(1, cores))
    said = f"this machine's load now: {load:.1f} on {cores} cores"
    cpu = f"CPU seconds x{factor:.1f} for the load now ({load:.1f} on {cores} cores)"
    if factor < 1.05:
        return 1.0, "", cpu
    return factor, f"rates as measured under their runs' load ({said}, x{factor:.1f} a quiet " \
        "run's time)", cpu  # fmt: skip


_FLOPS: dict[str, float | None] = {}


def _flops_of(config: dict) -> float | None:
    """round_flops of a stored run's config (cached; None where it cannot be rebuilt)."""
    import json

    text = json.dumps(config, sort_keys=True, default=str)
    if text not in _FLOPS:
        try:
            _FLOPS[text] = round_flops(config_from_dict(config))
        except Exception:  # a record of an older or foreign config: no scaling from it
            _FLOPS[text] = None
    return _FLOPS[text]
