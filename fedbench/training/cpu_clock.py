"""A run's CPU seconds and the machine's load beside its wall time (issue 33): wall time on a
shared machine is mostly waiting for a core, so an estimate from wall rates follows the load
the runs met; CPU seconds do not (fedbench.sweep.rates converts them to wall for the load now).

cpu_seconds is the process's CPU time (time.process_time: every thread, the plan-building helper
thread included) over the same span as started..ended (data loading, rounds, evaluation), split
evenly over a stack's runs (they train as threads of one process); null for a resumed run (its
earlier attempts' CPU time is not kept). load_start and load_end are the 1-minute load average."""

from __future__ import annotations

import os
import time


def load_now() -> float | None:
    """The 1-minute load average, or None where the system has none."""
    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):
        return None


def start() -> tuple[float, float | None]:
    """(process CPU seconds, load) at a run's start."""
    return time.process_time(), load_now()


def finish(begun: tuple[float, float | None], stack_size, resumed: bool) -> dict:
    """run.json's cpu_seconds, load_start and load_end of a run begun at `begun`."""
    cpu0, load0 = begun
    stack = max(1, int(stack_size or 1))
    cpu = None if resumed else round((time.process_time() - cpu0) / stack, 3)
    return {"cpu_seconds": cpu, "load_start": load0, "load_end": load_now()}
