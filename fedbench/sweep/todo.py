"""Planning a sweep: every wanted config is looked up in results/ by its config hash; finished
runs are skipped, runs claimed by a live process elsewhere are left to it, the rest is run."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from fedbench.config import RunConfig
from fedbench.errors import FedbenchError
from fedbench.identity import config_hash, run_id

log = logging.getLogger(__name__)
READING = (
    "matching the runs to the data they were made on: each data setting is read once "
    "(remembered after; ~1 min the first time on a machine)"
)
# ---------------------------------------------------------------- planning


@dataclass
class Plan:
    todo: list[RunConfig] = field(default_factory=list)
    done: list[str] = field(default_factory=list)
    busy: list[str] = field(default_factory=list)
    repair: set[str] = field(default_factory=set)  # finished runs with unreadable rounds
    problems: list[str] = field(default_factory=list)
    unavailable: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # old-version records used, copies
    left: list[str] = field(default_factory=list)  # claimed elsewhere, then left unfinished
    said_reading: bool = False  # READING logged (once a plan)

    @property
    def total(self) -> int:
        return len(self.todo) + len(self.done) + len(self.busy)


def plan_sweep(
    configs: list[RunConfig],
    results: Path | str,
    on_error: str = "skip",
    strict: bool = False,
    shipped: bool = False,
) -> Plan:
    """Which configs are done, running elsewhere, or to run. Done: a finished record with the
    config's identity and readable rounds, on the data this config would load now (its data
    fingerprint, remembered per data files; fedbench.data.data_fingerprint). A damaged record
    is rerun (on_error="skip", the default; sweep --damaged rerun) or stops the plan with its
    name ("fail"; --damaged stop); strict=True refuses records written by another fedbench
    version. shipped=True: a run in the shipped store (fedbench.results.shipped_store) is done too,
    matched like a local one, when its group's rounds.parquet is sound (its footer, read once
    per group: Store.rounds_problem); a damaged group's runs are to run, said in one line."""
    from fedbench.results import FINISHED, RunIndex
    from fedbench.results.locks import claimed_elsewhere

    index = RunIndex(results, on_error=on_error, must_exist=False, strict=strict, shipped=shipped)
    index.skip_option = "--damaged rerun"  # sweep's name for on_error="skip" (it reruns them)
    plan = Plan(problems=list(index.problems))
    for cfg in configs:
        key = config_hash(cfg)
        n_problems = len(index.problems)
        if _done(index, cfg, key, plan) is not None:
            plan.done.append(run_id(cfg))
            continue
        if len(index.problems) > n_problems:  # finished, but its rounds.parquet is unreadable
            plan.problems += index.problems[n_problems:]  # (a store group's: said once)
            if any(r.status in FINISHED and not r.shipped for r in index.by_key.get(key, [])):
                plan.repair.add(run_id(cfg))  # a finished local run: rerun over it
        if claimed_elsewhere(results, run_id(cfg)):
            plan.busy.append(run_id(cfg))
        else:
            plan.todo.append(cfg)
    stood_in = [p for p in index.problems if p not in plan.problems]  # a local run used
    plan.notes = index.notes + [f"note: {p}; a local run of it is used" for p in stood_in]
    return plan


def _done(index, cfg: RunConfig, key: str, plan: Plan):
    """The finished record of cfg on the data it would load now, or None. A fingerprint not
    remembered loads the data (seconds each, minutes for a table the first time): said once
    a plan (plan.said_reading), as the command is otherwise silent meanwhile."""
    if index.finished(key) is None:
        return None
    if not any(index.fingerprints(key) - {None}):  # records from before fingerprints
        return index.finished(key)
    from fedbench.data import data_fingerprint

    try:
        fp = data_fingerprint(cfg, compute=False)
        if fp is None:
            if not plan.said_reading:
                log.info(READING)
                plan.said_reading = True
            fp = data_fingerprint(cfg)
    except FedbenchError:  # the data is not on this machine: the record is all there is
        return index.finished(key)
    return index.finished(key, fingerprint=fp)
