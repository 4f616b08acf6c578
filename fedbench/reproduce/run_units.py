"""Running a reproduction's plan: unit after unit (cheapest complete table first), each unit's
runs one sweep (fedbench.sweep.run_sweep: its executors, checkpoints and signal handling),
within a deadline (fedbench.sweep.budget): a run starts only when its expected time ends before
the deadline, and at the deadline the runs going on stop at a round's end with a checkpoint."""

from __future__ import annotations

from dataclasses import dataclass, field

from fedbench.identity import run_id
from fedbench.reproduce.reproduction_plan import ReproPlan, Unit


@dataclass
class Outcome:
    """What a reproduction did: the sweeps' reports, whether the budget ended it, runs left."""

    reports: list = field(default_factory=list)
    budget_ended: bool = False
    not_started: int = 0  # runs the deadline left for next time

    @property
    def failed(self) -> list:
        return [o for r in self.reports for o in r.failed]


def fitting(configs: list, rates, device: str, left: float, jobs: int) -> list:
    """The longest prefix of configs whose expected time (spread over `jobs`) ends within
    `left` seconds (as the plan estimates it: probes, expected rounds); a config with no
    estimate is taken while any time is left."""
    taken, spent = [], 0.0
    for cfg in configs:
        guess = rates.estimate([cfg], device) if rates is not None else None
        cost = guess.seconds / jobs if guess is not None and guess.timed else 0.0
        if taken and guess is not None and guess.how["probe"]:
            cost -= guess.warmup / jobs  # a process's first run's, counted once
        if spent + cost > left or left <= 0:
            break
        taken.append(cfg)
        spent += cost
    return taken


def run_units(rp: ReproPlan, executor, deadline, jobs: int, level: str) -> Outcome:
    """Each unit's own runs as sweeps, in the plan's order. A stop from the deadline ends the
    loop (budget_ended); a signal's stop is raised again. A unit whose runs do not all fit the
    time left runs the runs that fit (fitted again as they end), and no unit after it starts."""
    from fedbench.reproduce.reproduction_plan import round_seconds

    out = Outcome()
    deadline.arm(round_seconds(rp))
    try:
        for unit in rp.runnable:
            if not _run_fitting(rp, unit, executor, deadline, jobs, level, out):
                out.budget_ended = True  # the rest would not end in time
                break
    except KeyboardInterrupt:
        if not deadline.expired:
            raise
        out.budget_ended = True
    finally:
        deadline.disarm()
    out.not_started = len(rp.todo) - sum(len(r.outcomes) for r in out.reports)
    return out


def _run_fitting(rp: ReproPlan, unit: Unit, executor, deadline, jobs: int, level: str,
                 out: Outcome) -> bool:  # fmt: skip
    """A unit's runs, as many at a time as the time left fits, fitted again after each batch
    (runs quicker than their estimate leave time for more); False when a run is left that
    would not end in time."""
    left = list(unit.own)
    while left:
        runs = fitting(left, rp.rates, rp.device, deadline.left(), jobs)
        if not runs:
            return False
        _run_unit(rp, unit, runs, executor, level, out)
        left = left[len(runs) :]
    return True


def _run_unit(rp: ReproPlan, unit: Unit, runs: list, executor, level: str, out: Outcome):
    from fedbench.sweep import Plan, run_sweep

    plan = Plan(todo=runs, repair={r for r in rp.plan.repair if r in _ids(runs)})
    try:
        out.reports.append(run_sweep(plan, rp.results, executor, label=unit.name, level=level))
    except KeyboardInterrupt as e:
        out.reports.append(getattr(e, "report", None) or _empty(plan))
        raise


def _ids(configs) -> set[str]:
    return {run_id(c) for c in configs}


def _empty(plan):
    from fedbench.sweep import SweepReport

    return SweepReport(plan)


def refresh(rp: ReproPlan, on_error: str = "skip") -> None:
    """Each unit's done / to do again, from the results folder (after running)."""
    from fedbench.sweep import plan_sweep

    for u in rp.units:
        if u.missing or not u.configs:
            continue
        plan = plan_sweep(u.configs, rp.results, on_error=on_error, shipped=rp.shipped)
        u.todo, u.busy = list(plan.todo), len(plan.busy)
        u.done = len(plan.done)


def finished_units(rp: ReproPlan) -> list[Unit]:
    return [u for u in rp.units if u.complete]
