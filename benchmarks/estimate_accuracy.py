"""How near the expected time comes to the measured one: every finished run of the shipped store
(or RESULTS) estimated from the others, leaving it out, as `fedbench sweep` and `fedbench
reproduce` estimate (fedbench.sweep.accuracy); prints estimate / measured per run (median, range,
10-90 %, share within 30 %), by how the rate was found, and per store group (its runs' seconds
together). Where runs recorded cpu_seconds (issue 33), the same runs again on both bases: from
the others' wall rates, and from their CPU rates converted to wall at each run's own recorded
load (wall = CPU x max(1, load / cores), fedbench.sweep.rates), with how far that rule is from
each run's own wall / CPU.

Usage: python benchmarks/estimate_accuracy.py [--results RESULTS] [--min-seconds 30]
  --results: a results folder instead of the shipped store ($FEDBENCH_STORE or results/shipped)
  --min-seconds: only runs that took at least this long (the records' times are whole seconds)
"""

from __future__ import annotations

import argparse
import sys
import tempfile

from fedbench.results import RunIndex
from fedbench.sweep.accuracy import (
    by_group,
    finished,
    leave_one_out,
    load_of,
    spread,
    spread_text,
)
from fedbench.sweep.rates import run_cpu_rate, run_rate


def records(results: str | None) -> list:
    if results is None:  # the shipped store alone
        index = RunIndex(tempfile.mkdtemp(), on_error="skip", must_exist=False, shipped=True)
    else:
        index = RunIndex(results, on_error="skip", shipped=False)
    return list(index.records())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", default=None)
    ap.add_argument("--min-seconds", type=float, default=0.0)
    a = ap.parse_args(argv)
    runs = records(a.results)
    checks = [c for c in leave_one_out(runs) if c.measured >= a.min_seconds]
    print(f"estimate / measured, each run left out of the rates it is estimated from "
          f"(runs of at least {a.min_seconds:g} s)")  # fmt: skip
    print(f"  every run: {spread_text(spread([c.ratio for c in checks]))}")
    for how in sorted({c.how for c in checks}):
        print(f"  {how}: {spread_text(spread([c.ratio for c in checks if c.how == how]))}")
    groups = by_group(checks)
    print(f"  per group (its runs' seconds together): {spread_text(spread(list(groups.values())))}")
    for g, ratio in groups.items():
        print(f"    {g:34s} {ratio:.2f}")
    both_bases(runs, a.min_seconds)
    return 0


def both_bases(runs: list, min_seconds: float) -> None:
    """The runs that recorded cpu_seconds, estimated on each basis from one another."""
    with_cpu = [r for r in finished(runs) if run_cpu_rate(r.meta) is not None]
    if not with_cpu:
        print("  no run recorded cpu_seconds: no CPU-rate estimate to compare")
        return
    print(f"  the {len(with_cpu)} runs with cpu_seconds, from one another:")
    for basis in ("wall", "cpu"):
        checks = [c for c in leave_one_out(with_cpu, basis) if c.measured >= min_seconds]
        print(f"    {basis} rates: {spread_text(spread([c.ratio for c in checks]))}")
    rule = [run_cpu_rate(r.meta) * load_of(r.meta)[0] / run_rate(r.meta) for r in with_cpu]
    print(f"    the rule alone (CPU x max(1, load / cores) / wall, each run at its own load): "
          f"{spread_text(spread(rule))}")  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
