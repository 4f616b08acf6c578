"""How near the expected time comes to the measured one (issue 33): every finished run of a
store is estimated from the others, leaving it out (fedbench.sweep.rates, as a sweep or a
reproduction estimates it), and its estimate is set beside its recorded wall seconds.

A run "of a shipped kind" is one whose setting (rates.RATE_FIELDS) other runs on the same
device have: the case `fedbench reproduce` meets for the runs a store lacks. What spreads the
ratios is the machine's load while each run ran (older records do not carry it; docs/usage.md,
"The estimate"), and the records' times in whole seconds for runs of a few seconds. Runs that
recorded cpu_seconds can be checked on the CPU basis too (leave_one_out(basis="cpu"))."""

from __future__ import annotations

import dataclasses
import statistics
from dataclasses import dataclass

from fedbench.config import config_from_dict
from fedbench.sweep.rates import (
    Rates,
    device_label,
    load_factor,
    rate_key,
    run_cpu_rate,
    run_rate,
)

WITHIN = 0.30  # the bound on estimate / measured - 1


@dataclass
class Check:
    group: str
    run_id: str
    how: str  # here / device / flops / unscaled (rates.Rates.config_rate)
    estimated: float  # seconds
    measured: float  # seconds

    @property
    def ratio(self) -> float:
        return self.estimated / self.measured


def finished(records) -> list:
    """The complete runs with a wall time, each run once (a run shared by groups is one run)."""
    out: dict[str, object] = {}
    for rec in records:
        if rec.status == "complete" and run_rate(rec.meta) is not None:
            out.setdefault(rec.run_id, rec)
    return list(out.values())


def leave_one_out(records, basis: str = "wall") -> list[Check]:
    """Each run's estimate from every other run (its own rate left out). basis "wall": from the
    wall rates as measured (no load now: records compared with records); "cpu": only the runs
    that recorded cpu_seconds, from the CPU rates of the others (wall rates where a setting has
    none), converted to wall at the run's own recorded load (the mean of load_start and
    load_end, standing for "the load now")."""
    runs = finished(records)
    if basis == "cpu":
        runs = [r for r in runs if run_cpu_rate(r.meta) is not None]
    rates = Rates()
    for rec in runs:
        cpu = run_cpu_rate(rec.meta) if basis == "cpu" else None
        rates.add(device_label(rec.meta.get("device_name")), rec.config, run_rate(rec.meta), cpu)
    checks = []
    for rec in runs:
        rates._load = load_of(rec.meta) if basis == "cpu" else (1.0, "", "")
        device, key, own = device_label(rec.meta.get("device_name")), rate_key(rec.config), \
            run_rate(rec.meta)  # fmt: skip
        found, cpus = rates.by_device[device][key], rates.cpu[device][key]
        own_cpu = run_cpu_rate(rec.meta) if basis == "cpu" else None
        found.remove(own)
        if own_cpu is not None:
            cpus.remove(own_cpu)
        rounds = int(rec.meta["summary"]["rounds_run"])
        cfg = dataclasses.replace(config_from_dict(rec.config), rounds=rounds)
        guess = rates.config_rate(cfg, device) if found else _without(rates, device, key, cfg)
        found.append(own)
        if own_cpu is not None:
            cpus.append(own_cpu)
        if guess is not None:
            checks.append(Check(rec.group or "", rec.run_id, guess[1], guess[0] * rounds,
                                own * rounds))  # fmt: skip
    return checks


def load_of(meta: dict) -> tuple[float, str, str]:
    """load_factor at the load a run recorded (1.0 where it recorded none)."""
    loads = [x for x in (meta.get("load_start"), meta.get("load_end")) if x is not None]
    return load_factor(sum(loads) / len(loads)) if loads else (1.0, "", "")


def _without(rates: Rates, device: str, key: tuple, cfg):
    """config_rate with the setting's only run left out (its list removed meanwhile)."""
    runs, cpus = rates.by_device[device].pop(key), rates.cpu[device].pop(key, [])
    try:
        return rates.config_rate(cfg, device)
    finally:
        rates.by_device[device][key] = runs
        if cpus:
            rates.cpu[device][key] = cpus


def by_group(checks: list[Check]) -> dict[str, float]:
    """{group: its runs' estimated seconds over their measured seconds}."""
    est: dict[str, float] = {}
    meas: dict[str, float] = {}
    for c in checks:
        est[c.group] = est.get(c.group, 0.0) + c.estimated
        meas[c.group] = meas.get(c.group, 0.0) + c.measured
    return {g: est[g] / meas[g] for g in sorted(est)}


def spread(ratios: list[float]) -> dict:
    """n, median, range, 10th-90th percentiles and the share within WITHIN of estimate /
    measured."""
    r = sorted(ratios)
    if not r:
        return {"n": 0}
    return {
        "n": len(r),
        "median": statistics.median(r),
        "min": r[0],
        "max": r[-1],
        "p10": r[len(r) // 10],
        "p90": r[(9 * len(r)) // 10],
        "within": sum(abs(x - 1) <= WITHIN for x in r) / len(r),
    }


def spread_text(s: dict) -> str:
    if not s["n"]:
        return "none"
    return (
        f"n {s['n']}: median {s['median']:.2f}, range {s['min']:.2f}-{s['max']:.2f}, "
        f"10-90 % {s['p10']:.2f}-{s['p90']:.2f}, within 30 %: {100 * s['within']:.0f} %"
    )
