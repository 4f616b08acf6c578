"""Sweeps: many runs from a grid (flags or a TOML file) or from a paper table, resumable.

Planning: every wanted config is looked up in results/ by its canonical config hash; finished
runs (complete or diverged, with a readable rounds.parquet) are skipped, runs a live process
elsewhere has claimed are left to it, everything else (never run, killed half way, failed
before) is run. Each run goes through fedbench.training.runner.train, which claims it (claims.py)
and writes its files atomically, so a killed sweep resumes by being started again and several
sweeps can share one results folder.

Executors: `inline` (this process, one run after another), `pool` (--jobs N spawned worker
processes, each with cores // N torch threads and, on a GPU machine, its own GPU), `ray`
(each run a Ray task on an existing cluster, writing to the shared results path).

The parts: grid.py (what to run), todo.py (what is left to run), executors.py (running
it: one_run.py one run, stacking.py runs trained as one stack), run.py (the whole
sweep with progress and its report).
"""

from fedbench.sweep.executors import InlineExecutor, PoolExecutor, RayExecutor, make_executor
from fedbench.sweep.grid import (
    dedupe,
    grid_configs,
    load_sweep_file,
    parse_grid,
    parse_list,
    table_configs,
)
from fedbench.sweep.one_run import OnDone, OnStart, Outcome, execute_run
from fedbench.sweep.run import (
    SweepReport,
    recheck_busy,
    run_sweep,
    summary_line,
    summary_table,
)
from fedbench.sweep.todo import Plan, plan_sweep

__all__ = [
    "InlineExecutor",
    "OnDone",
    "OnStart",
    "Outcome",
    "Plan",
    "PoolExecutor",
    "RayExecutor",
    "SweepReport",
    "dedupe",
    "execute_run",
    "grid_configs",
    "load_sweep_file",
    "make_executor",
    "parse_grid",
    "parse_list",
    "plan_sweep",
    "recheck_busy",
    "run_sweep",
    "summary_line",
    "summary_table",
    "table_configs",
]
