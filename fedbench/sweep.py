"""Sweeps: many runs from a grid (flags or a TOML file) or from a paper table, resumable.

Planning: every wanted config is looked up in results/ by its canonical config hash; finished
runs (complete or diverged, with a readable rounds.parquet) are skipped, runs a live process
elsewhere has claimed are left to it, everything else (never run, killed half way, failed
before) is run. Each run goes through fedbench.runner.train, which claims it (claims.py) and
writes its files atomically, so a killed sweep resumes by being started again and several
sweeps can share one results folder.

Executors: `inline` (this process, one run after another), `pool` (--jobs N spawned worker
processes, each with cores // N torch threads and, on a GPU machine, its own GPU), `ray`
(each run a Ray task on an existing cluster, writing to the shared results path).
"""

from __future__ import annotations

import itertools
import math
import os
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fedbench.config import ALIASES, FIELD_TYPES, RunConfig, build_config
from fedbench.errors import FedbenchError

# ---------------------------------------------------------------- parsing flags


def parse_list(text: str | None, what: str, conv: Callable[[str], Any] = str) -> list | None:
    """'a,b,c' -> [a, b, c]; None stays None."""
    if text is None:
        return None
    items = [t.strip() for t in str(text).split(",") if t.strip()]
    if not items:
        raise FedbenchError(f"{what} expects a comma-separated list, got {text!r}")
    try:
        return [conv(t) for t in items]
    except ValueError:
        raise FedbenchError(
            f"{what} expects a comma-separated list of numbers, got {text!r}"
        ) from None


def parse_grid(items: Iterable[str]) -> dict[str, list[str]]:
    """--grid KEY=V1,V2,... (repeatable) -> {KEY: [V1, V2, ...]}."""
    out: dict[str, list[str]] = {}
    for item in items:
        key, sep, values = item.partition("=")
        key = key.strip()
        vals = [v.strip() for v in values.split(",") if v.strip()]
        if not sep or not key or not vals:
            raise FedbenchError(f"--grid expects KEY=V1,V2,... (e.g. rho=0.1,0.5), got {item!r}")
        if key in out:
            raise FedbenchError(f"--grid {key} given twice; list all its values in one --grid")
        out[key] = vals
    return out


def method_param_names(method: str) -> set[str]:
    import dataclasses

    from fedbench.methods import method_class

    return {f.name for f in dataclasses.fields(method_class(method).Params)}


def _grid_key_applies(key: str, method: str, methods: list[str]) -> bool:
    """Whether a --grid key varies runs of `method`: config fields (and aliases) apply to every
    method, a method parameter only to the methods that have it."""
    if key in FIELD_TYPES or key in ALIASES:
        return True
    name = key[len("method.") :] if key.startswith("method.") else key
    if name in method_param_names(method):
        return True
    if not any(name in method_param_names(m) for m in methods):
        raise FedbenchError(
            f"unknown field {key!r} in --grid: not a config field (see README) nor a parameter "
            f"of {', '.join(methods)} (see fedbench methods)"
        )
    return False


def preset_for_dataset(dataset: str) -> str | None:
    """The preset a bare --dataset starts from: fedlga-<dataset> (the FedLGA setting) if there
    is one, else the only preset on that dataset; None: the default preset."""
    from fedbench.presets import PRESETS

    if f"fedlga-{dataset}" in PRESETS:
        return f"fedlga-{dataset}"
    on = [n for n, (_, v) in PRESETS.items() if v.get("dataset") == dataset]
    return on[0] if len(on) == 1 else None


def grid_configs(
    preset: str | None = None,
    config_file: str | None = None,
    methods: list[str] | None = None,
    dataset: str | None = None,
    seeds: list[int] | None = None,
    grid: dict[str, list] | None = None,
    sets: dict[str, Any] | None = None,
    method_grids: dict[str, dict[str, list]] | None = None,
) -> list[RunConfig]:
    """Every combination of methods x grid values x seeds on top of preset/file/sets.
    A grid key that is a method parameter varies only the methods that have it."""
    from fedbench.methods import method_class

    sets = dict(sets or {})
    if dataset and not preset:
        preset = preset_for_dataset(dataset)
    if dataset:
        sets["dataset"] = dataset
    base = build_config(preset, config_file, sets, validate=False)
    methods = methods or [base.method]
    for m in methods:
        method_class(m)  # one-line error for an unknown method
    seeds = seeds if seeds is not None else [base.seed]
    grid = grid or {}
    method_grids = method_grids or {}
    for m in method_grids:
        if m not in methods:
            raise FedbenchError(f"sweep file has a grid for method {m!r}, which is not in methods")
    out: list[RunConfig] = []
    for m in methods:
        keys = [k for k in grid if _grid_key_applies(k, m, methods)]
        own = method_grids.get(m, {})
        for k in own:
            if k not in method_param_names(m) and k not in FIELD_TYPES and k not in ALIASES:
                raise FedbenchError(f"unknown parameter {k!r} for method {m} in the sweep file")
        axes = [(k, grid[k]) for k in keys] + list(own.items())
        for combo in itertools.product(*(vals for _, vals in axes)):
            over = {**sets, "method": m, **{k: v for (k, _), v in zip(axes, combo)}}
            for seed in seeds:
                out.append(build_config(preset, config_file, {**over, "seed": seed}))
    return dedupe(out)


def dedupe(configs: Iterable[RunConfig]) -> list[RunConfig]:
    seen: set[str] = set()
    out = []
    for cfg in configs:
        key = cfg.config_hash()
        if key not in seen:
            seen.add(key)
            out.append(cfg)
    return out


def load_sweep_file(path: str | Path) -> dict[str, Any]:
    """A TOML sweep file -> keyword arguments of grid_configs. Example:

    preset = "fedlga-fmnist"
    methods = ["fedavg", "fedprox"]
    seeds = [0, 1, 2]
    [set]               # fixed fields for every run
    rounds = 100
    [grid]              # every combination
    rho = [0.1, 0.3, 0.5]
    [grid.fedprox]      # varied for one method only
    mu = [0.1, 0.5, 1.0]
    """
    from fedbench.config import read_toml

    p = Path(path)
    data = read_toml(p, "sweep file")
    known = {"preset", "config", "methods", "dataset", "seeds", "set", "grid"}
    unknown = sorted(set(data) - known)
    if unknown:
        raise FedbenchError(
            f"sweep file {p}: unknown key {unknown[0]!r}; keys: {', '.join(sorted(known))}"
        )
    try:
        return _sweep_file_values(data)
    except FedbenchError as e:
        raise FedbenchError(f"sweep file {p}: {e}") from None


def _sweep_file_values(data: dict[str, Any]) -> dict[str, Any]:
    """A sweep file's entries, each of the kind it must be, each field named once."""
    from fedbench.config import check_value, one_each

    def expect(ok: bool, key: str, what: str) -> None:
        if not ok:
            raise FedbenchError(f"{key} must be {what}, got {data.get(key)!r}")

    for key in ("preset", "config", "dataset"):
        expect(isinstance(data.get(key, ""), str), key, "text")
    methods = data.get("methods")
    if isinstance(methods, str):
        methods = [methods]
    expect(methods is None or _nonempty_list(methods, str), "methods", "a list of method names")
    seeds = data.get("seeds")
    expect(seeds is None or _nonempty_list(seeds, int), "seeds", "a list of integers, e.g. [0, 1]")
    for seed in seeds or ():
        check_value("seed", seed)
    for key in ("set", "grid"):
        expect(isinstance(data.get(key, {}), dict), key, "a table ([set] / [grid] section)")
    grid, method_grids = {}, {}
    for k, v in data.get("grid", {}).items():
        if isinstance(v, dict):
            method_grids[k] = {kk: _grid_values(f"grid.{k}.{kk}", vv) for kk, vv in v.items()}
        else:
            grid[k] = _grid_values(f"grid.{k}", v)
    sets = dict(data.get("set", {}))
    fixed = [(k, v, f"[set] {k}") for k, v in sets.items()]
    fixed += [(k, v, f"[grid] {k}") for k, v in grid.items()]
    fixed += [(k, data[f], f) for k, f in (("seed", "seeds"), ("method", "methods")) if f in data]
    if "dataset" in data:
        fixed.append(("dataset", data["dataset"], "dataset"))
    one_each(fixed)
    for m, own in method_grids.items():
        one_each(fixed + [(k, v, f"[grid.{m}] {k}") for k, v in own.items()])
    return {
        "preset": data.get("preset"),
        "config_file": data.get("config"),
        "methods": methods,
        "dataset": data.get("dataset"),
        "seeds": seeds,
        "grid": grid,
        "sets": sets,
        "method_grids": method_grids,
    }


def _nonempty_list(v: Any, kind: type) -> bool:
    return isinstance(v, list) and bool(v) and all(type(x) is kind for x in v)


def _grid_values(key: str, v: Any) -> list:
    """A grid entry: a non-empty list of values (one value: a list of one)."""
    values = v if isinstance(v, list) else [v]
    if not values or any(isinstance(x, (list, dict)) for x in values):
        raise FedbenchError(f"{key} must be a non-empty list of values, e.g. [0.1, 0.5]")
    return values


def table_configs(spec, selection) -> tuple[list[RunConfig], dict[str, int]]:
    """The configs a paper table needs (every seed of every runs cell), and the cells that
    cannot be built here with why (e.g. a method this build lacks)."""
    from fedbench.tables import cell_config

    configs: list[RunConfig] = []
    unavailable: dict[str, int] = {}
    for cell in spec.cells(selection.dataset):
        if cell.kind != "runs":
            continue
        seeds = cell.seeds or (selection.seeds if selection.seeds is not None else spec.seeds)
        try:
            configs += [cell_config(cell, s, selection.preset, selection.sets) for s in seeds]
        except FedbenchError as e:
            unavailable[str(e)] = unavailable.get(str(e), 0) + 1
    return dedupe(configs), unavailable


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

    @property
    def total(self) -> int:
        return len(self.todo) + len(self.done) + len(self.busy)


def plan_sweep(
    configs: list[RunConfig], results: Path | str, on_error: str = "skip", strict: bool = False
) -> Plan:
    """Which configs are done, running elsewhere, or to run. Done: a finished record with the
    config's identity and readable rounds, on the data this config would load now (its data
    fingerprint, remembered per data files; fedbench.data.data_fingerprint). A damaged record
    is rerun (on_error="skip", the default) or stops the plan with its name ("fail");
    strict=True refuses records written by another fedbench version."""
    from fedbench.claims import claimed_elsewhere
    from fedbench.results import FINISHED, RunIndex

    index = RunIndex(results, on_error=on_error, must_exist=False, strict=strict)
    plan = Plan(problems=list(index.problems))
    for cfg in configs:
        key = cfg.config_hash()
        n_problems = len(index.problems)
        if _done(index, cfg, key) is not None:
            plan.done.append(cfg.run_id())
            continue
        if len(index.problems) > n_problems:  # finished, but its rounds.parquet is unreadable
            plan.problems += index.problems[n_problems:]
            rec = index.find(key)
            if rec is not None and rec.status in FINISHED:
                plan.repair.add(cfg.run_id())
        if claimed_elsewhere(results, cfg.run_id()):
            plan.busy.append(cfg.run_id())
        else:
            plan.todo.append(cfg)
    plan.notes = index.notes
    return plan


def _done(index, cfg: RunConfig, key: str):
    """The finished record of cfg on the data it would load now, or None."""
    if index.finished(key) is None:
        return None
    if not any(index.fingerprints(key) - {None}):  # records from before fingerprints
        return index.finished(key)
    from fedbench.data import data_fingerprint

    try:
        fp = data_fingerprint(cfg)
    except FedbenchError:  # the data is not on this machine: the record is all there is
        return index.finished(key)
    return index.finished(key, fingerprint=fp)


# ---------------------------------------------------------------- running one config


@dataclass
class Outcome:
    run_id: str
    status: str  # complete | diverged | failed | busy (claimed elsewhere) | done (by another)
    error: str | None = None
    seconds: float = 0.0
    summary: dict = field(default_factory=dict)

    @staticmethod
    def from_dict(d: dict) -> Outcome:
        return Outcome(**d)


_WORKER: dict[str, Any] = {}  # per-process settings of pool workers (threads, device)


def execute_run(
    cfg_dict: dict,
    results: str,
    overwrite: bool = False,
    threads: int | None = None,
    device: str | None = None,
    on_round: Callable[[dict], None] | None = None,
) -> dict:
    """Run one config here; never raises (an error becomes a "failed" outcome, which the
    runner has also written into the run's run.json). Returns Outcome fields as a dict so
    that it crosses process and Ray boundaries."""
    import dataclasses

    from fedbench.claims import RunBusy
    from fedbench.config import config_from_dict
    from fedbench.runner import RunExists, train

    t0 = time.perf_counter()
    cfg = config_from_dict(cfg_dict)
    from fedbench import threads as thread_policy

    thread_policy.configure(threads or _WORKER.get("threads"), _WORKER.get("budget"))
    device = device or _WORKER.get("device")
    if device and cfg.device == "auto":
        cfg = dataclasses.replace(cfg, device=device)
    out = Outcome(cfg.run_id(), "failed")
    try:
        meta, _ = train(cfg, results, overwrite=overwrite, on_round=on_round)
        out.status, out.summary = meta["status"], meta.get("summary", {})
    except RunBusy as e:
        out.status, out.error = "busy", str(e)
    except RunExists:
        out.status = "done"
    except Exception as e:
        out.error = (f"{type(e).__name__}: {e}".strip().splitlines() or ["error"])[0]
    out.seconds = time.perf_counter() - t0
    return dataclasses.asdict(out)


def _die_with_parent() -> None:
    """Linux: a worker gets SIGKILL when the sweep that started it dies (a killed sweep must not
    leave workers that keep claims alive)."""
    if sys.platform.startswith("linux"):
        import ctypes
        import signal

        try:
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        except OSError:  # pragma: no cover
            pass


def _init_worker(slots, threads: int | None, budget: int, devices: list[str]) -> None:
    _die_with_parent()
    slot = slots.get()
    _WORKER["threads"], _WORKER["budget"] = threads, budget
    if devices:
        _WORKER["device"] = devices[slot % len(devices)]


def cpu_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover
        return os.cpu_count() or 1


# ---------------------------------------------------------------- executors

OnStart = Callable[[RunConfig], None]
OnDone = Callable[[RunConfig, Outcome], None]


class InlineExecutor:
    """One run after another in this process (per-round progress available)."""

    name = "inline"

    def __init__(self, threads: int | None = None):
        self.threads = threads

    def run(self, todo, results, repair, on_start, on_done, on_round=None) -> None:
        for cfg in todo:
            on_start(cfg)
            rid = cfg.run_id()
            d = execute_run(
                cfg.to_dict(), str(results), rid in repair, self.threads, None, on_round
            )
            on_done(cfg, Outcome.from_dict(d))


class PoolExecutor:
    """N spawned worker processes; each gets cores // N torch threads (or --threads) and, with
    GPUs and device=auto, GPU (worker slot mod GPUs). A worker that dies (segfault, out of
    memory) fails only the runs it was running; the pool is rebuilt for the rest."""

    name = "pool"

    def __init__(self, jobs: int, threads: int | None = None):
        self.jobs = jobs
        self.threads = threads  # else fedbench.threads chooses, within cores // jobs
        self.budget = max(1, cpu_cores() // jobs)

    def _devices(self) -> list[str]:
        import torch

        n = torch.cuda.device_count() if torch.cuda.is_available() else 0
        return [f"cuda:{i}" for i in range(n)]

    def _pool(self):
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor

        ctx = mp.get_context("spawn")
        slots = ctx.Queue()
        for i in range(self.jobs):
            slots.put(i)
        return ProcessPoolExecutor(
            self.jobs,
            mp_context=ctx,
            initializer=_init_worker,
            initargs=(slots, self.threads, self.budget, self._devices()),
        )

    def run(self, todo, results, repair, on_start, on_done, on_round=None) -> None:
        from concurrent.futures import FIRST_COMPLETED, wait
        from concurrent.futures.process import BrokenProcessPool

        queue = list(todo)
        attempts: dict[str, int] = {}
        pool = self._pool()
        running: dict = {}
        try:
            while queue or running:
                while queue and len(running) < self.jobs:
                    cfg = queue.pop(0)
                    rid = cfg.run_id()
                    if attempts.get(rid, 0) == 0:
                        on_start(cfg)
                    fut = pool.submit(execute_run, cfg.to_dict(), str(results), rid in repair)
                    running[fut] = cfg
                finished, _ = wait(running, return_when=FIRST_COMPLETED)
                broken = False
                for fut in finished:
                    cfg = running.pop(fut)
                    try:
                        on_done(cfg, Outcome.from_dict(fut.result()))
                    except BrokenProcessPool:
                        broken = True
                        rid = cfg.run_id()
                        attempts[rid] = attempts.get(rid, 0) + 1
                        if attempts[rid] >= 2:
                            on_done(cfg, Outcome(rid, "failed", "worker process died "
                                                 "(crash or out of memory)"))  # fmt: skip
                        else:
                            queue.insert(0, cfg)  # may have died with another run's worker
                if broken:
                    for cfg in running.values():
                        queue.insert(0, cfg)
                        attempts[cfg.run_id()] = attempts.get(cfg.run_id(), 0) + 1
                    running.clear()
                    pool.shutdown(wait=False, cancel_futures=True)
                    pool = self._pool()
        finally:
            pool.shutdown(wait=True, cancel_futures=True)


class RayExecutor:
    """Each run a Ray task (num_cpus / num_gpus per run) on an existing cluster, or on the Ray
    this process already started; results are written to the (shared) results path."""

    name = "ray"

    def __init__(self, address: str | None = "auto", num_gpus: float = 0, num_cpus: float = 1):
        self.address, self.num_gpus, self.num_cpus = address, num_gpus, num_cpus

    def _ray(self):
        try:
            import ray
        except ImportError:
            raise FedbenchError("--executor ray needs Ray: pip install 'fedbench[ray]'") from None
        if not ray.is_initialized():
            import fedbench

            try:
                ray.init(
                    address=self.address or "auto",
                    runtime_env={"py_modules": [os.path.dirname(fedbench.__file__)]},
                    log_to_driver=False,
                )
            except ConnectionError as e:
                raise FedbenchError(
                    f"no Ray cluster at {self.address or 'auto'} ({e}); start one "
                    "(ray start --head) or pass --address HOST:PORT"
                ) from None
        return ray

    def run(self, todo, results, repair, on_start, on_done, on_round=None) -> None:
        ray = self._ray()
        results = str(Path(results).resolve())
        threads = max(1, int(self.num_cpus))
        task = ray.remote(execute_run).options(num_cpus=self.num_cpus, num_gpus=self.num_gpus)
        refs = {}
        for cfg in todo:
            on_start(cfg)
            ref = task.remote(cfg.to_dict(), results, cfg.run_id() in repair, threads)
            refs[ref] = cfg
        while refs:
            ready, _ = ray.wait(list(refs), num_returns=1)
            for ref in ready:
                cfg = refs.pop(ref)
                try:
                    out = Outcome.from_dict(ray.get(ref))
                except Exception as e:  # the task's worker died
                    first = (str(e).strip().splitlines() or [type(e).__name__])[0]
                    out = Outcome(cfg.run_id(), "failed", f"Ray task failed: {first}")
                on_done(cfg, out)


def make_executor(
    executor: str = "local",
    jobs: int = 1,
    threads: int | None = None,
    address: str | None = None,
    gpus_per_run: float = 0,
    cpus_per_run: float = 1,
):
    if jobs < 1:
        raise FedbenchError(f"--jobs must be >= 1, got {jobs}")
    if executor == "ray":
        return RayExecutor(address or "auto", gpus_per_run, cpus_per_run)
    if executor != "local":
        raise FedbenchError(f"unknown executor {executor!r}; choose local or ray")
    return InlineExecutor(threads) if jobs == 1 else PoolExecutor(jobs, threads)


# ---------------------------------------------------------------- the sweep with progress


@dataclass
class SweepReport:
    plan: Plan
    outcomes: list[Outcome] = field(default_factory=list)
    seconds: float = 0.0

    def count(self, status: str) -> int:
        return sum(o.status == status for o in self.outcomes)

    @property
    def failed(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.status == "failed"]


def run_sweep(
    plan: Plan,
    results: Path | str,
    executor=None,
    quiet: bool = False,
    label: str = "sweep",
) -> SweepReport:
    """Run the plan's todo list, with a live display of runs done / running / failed and ETA."""
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    executor = executor or InlineExecutor()
    Path(results).mkdir(parents=True, exist_ok=True)
    report = SweepReport(plan)
    t0 = time.perf_counter()
    counts = {"running": 0, "failed": 0, "diverged": 0}
    progress = Progress(
        SpinnerColumn(),
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[info]}"),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        disable=quiet,
    )

    def info() -> str:
        return (
            f"running {counts['running']} · failed {counts['failed']} · "
            f"diverged {counts['diverged']}"
        )

    with progress:
        task = progress.add_task(label, total=len(plan.todo), info=info())
        run_task = None

        def on_start(cfg: RunConfig) -> None:
            nonlocal run_task
            counts["running"] += 1
            if isinstance(executor, InlineExecutor):
                if run_task is None:
                    run_task = progress.add_task("", total=cfg.rounds, info="")
                progress.reset(run_task, total=cfg.rounds, description=f"  {cfg.run_id()}")
            progress.update(task, info=info())

        def on_round(rec: dict) -> None:
            if run_task is not None:
                acc = rec.get("test_acc")
                progress.update(
                    run_task,
                    completed=rec["round"],
                    info="" if acc is None or math.isnan(acc) else f"acc {acc:.4f}",
                )

        def on_done(cfg: RunConfig, out: Outcome) -> None:
            counts["running"] -= 1
            if out.status in ("failed", "diverged"):
                counts[out.status] += 1
            report.outcomes.append(out)
            progress.update(task, advance=1, info=info())

        try:
            executor.run(plan.todo, results, plan.repair, on_start, on_done, on_round)
        finally:
            if run_task is not None:
                progress.remove_task(run_task)
    report.seconds = time.perf_counter() - t0
    recheck_busy(report, results)
    return report


def summary_table(report: SweepReport, limit: int = 40):
    """The final summary: every run this sweep ran (only failed/diverged ones when many)."""
    from rich.table import Table

    from fedbench.tables import fmt_cell

    outs = report.outcomes
    if len(outs) > limit:
        outs = [o for o in outs if o.status not in ("complete", "done")]
    table = Table(title="runs of this sweep" if outs is report.outcomes else "runs not complete")
    for col in ("run", "status", "best acc", "rounds to target", "wall s", "error"):
        table.add_column(col, justify="right" if col in ("best acc", "wall s") else "left")
    for o in outs:
        s = o.summary or {}
        table.add_row(
            o.run_id,
            o.status,
            fmt_cell(s.get("best_acc")),
            fmt_cell(s.get("rounds_to_target")),
            f"{o.seconds:.1f}",
            o.error or "",
        )
    return table


def recheck_busy(report: SweepReport, results: Path | str) -> None:
    """Reread the claims of the runs that were running elsewhere (at planning, or when this
    sweep tried to claim them), so that a summary printed after everything finished does not
    say "running elsewhere": a run still claimed stays busy, a finished one counts as already
    done, one whose claim is gone unfinished (that sweep failed or was killed) is `left`."""
    from fedbench.claims import claimed_elsewhere

    plan = report.plan
    ids = plan.busy + [o.run_id for o in report.outcomes if o.status == "busy"]
    report.outcomes = [o for o in report.outcomes if o.status != "busy"]
    plan.busy = []
    for rid in dict.fromkeys(ids):
        if claimed_elsewhere(results, rid):
            plan.busy.append(rid)
        elif _finished_folder(results, rid):
            plan.done.append(rid)
        else:
            plan.left.append(rid)


def _finished_folder(results: Path | str, run_id: str) -> bool:
    from fedbench.results import FINISHED, RunIndex

    index = RunIndex(results, on_error="skip", must_exist=False, prefix=run_id)
    return any(r.status in FINISHED and index.rounds_ok(r) for r in index.records())


def summary_line(report: SweepReport) -> str:
    p = report.plan
    parts = [
        f"{len(report.outcomes)} run(s) in {report.seconds:.1f} s: "
        f"{report.count('complete')} complete, {report.count('diverged')} diverged, "
        f"{report.count('failed')} failed"
    ]
    others = report.count("busy") + len(p.busy)
    if p.done or report.count("done"):
        parts.append(f"{len(p.done) + report.count('done')} already done")
    if others:
        parts.append(f"{others} running elsewhere (run the sweep again later)")
    if p.left:
        parts.append(f"{len(p.left)} left unfinished elsewhere (run the sweep again)")
    if p.unavailable:
        parts.append(f"{sum(p.unavailable.values())} cell(s) unavailable")
    return "; ".join(parts)
