"""Running a sweep's configs: one run in a worker (execute_run) and the executors that schedule
them (inline, a pool of spawned processes, Ray tasks)."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fedbench.config import RunConfig
from fedbench.errors import FedbenchError
from fedbench.identity import run_id

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

    from fedbench import plugins
    from fedbench.config import config_from_dict
    from fedbench.results.locks import RunBusy
    from fedbench.training.runner import RunExists, train

    t0 = time.perf_counter()
    try:  # a worker process or Ray task: the sweep's plugins (FEDBENCH_PLUGINS)
        plugins.load_all()
    except FedbenchError as e:
        return dataclasses.asdict(Outcome(run_id(config_from_dict(cfg_dict)), "failed", str(e)))
    cfg = config_from_dict(cfg_dict)
    from fedbench.training import threads as thread_policy

    thread_policy.configure(threads or _WORKER.get("threads"), _WORKER.get("budget"))
    device = device or _WORKER.get("device")
    if device and cfg.device == "auto":
        cfg = dataclasses.replace(cfg, device=device)
    out = Outcome(run_id(cfg), "failed")
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


# ------------------------------------------------------- stacked runs (fedbench.training.stack)

# Config fields that never change what a round's local step computes row by row (which runs
# a stack can merge is decided again at every round by fedbench.training.stack.merge_key, exactly;
# this key only picks who shares a stack): the seeds, the heterogeneity draws' parameters, how long
# a run lasts and what it evaluates, the preset's name. Everything else (data set and
# partition, model, K, E, B, lr and its decay, momentum, clipping, dtype, device, server
# step) must be equal. Method parameters are dropped only for methods whose local step is
# plain SGD or SCAFFOLD-style drift (the only ones merge_key merges): their parameters act
# on the server side or on the drift's value, never on the step's form.
STACK_FREE_FIELDS = (
    "seed",
    "data_seed",
    "rho",
    "tau_max",
    "stragglers",
    "straggler_epochs",
    "rounds",
    "stop_at_target",
    "target_acc",
    "eval_every",
    "eval_train",
    "preset",
)
# dispatch-bound models: a step of K rows costs what a step of R*K rows costs (through the torch
# loop); the FMNIST MLP's rounds are GEMM-bound and gain nothing (~1x, issue 11)
DISPATCH_BOUND_MODELS = ("logreg", "quadratic")


def _local_step_form(cfg: RunConfig) -> str | None:
    """ "plain" (SGD on the gradient), "drift" (a local step that reads none of the Params:
    SCAFFOLD's g + c - c_i), "other"
    (FedProx and the like: plain only at some parameters or states, which merge_key sees
    round by round), or None for a sequential method (SFL: never stacked)."""
    from fedbench.methods import build_method
    from fedbench.methods.base import Method

    m = build_method(cfg.method, cfg.method_params)  # before setup: read class attributes only
    if m.sequential:
        return None
    if type(m).local_step is Method.local_step:
        return "plain"
    return "drift" if m.local_step_params == () else "other"


def stack_key(cfg: RunConfig) -> tuple | None:
    """Runs with equal keys may train as one stack; None: this run trains alone."""
    import json

    form = _local_step_form(cfg)
    if cfg.augment or cfg.resize or form is None:
        return None
    drop = STACK_FREE_FIELDS + (("method_params",) if form in ("plain", "drift") else ())
    d = {k: v for k, v in cfg.to_dict().items() if k not in drop}
    return tuple(sorted((k, json.dumps(v, sort_keys=True)) for k, v in d.items()))


def stack_pays(cfg: RunConfig) -> bool:
    """Whether stacking is worth it by default (measured: benchmarks/stacked_sweep.py): small
    models whose rounds go through the torch loop (a GPU, or FEDBENCH_FASTPATH=0) with a local
    step that always merges. On CPU the compiled fast path already runs such rounds without
    dispatch (stacking: ~1x), and bigger models' rounds are bound by their GEMMs (~1x)."""
    from fedbench.devices import resolve_device
    from fedbench.training import fastpath

    if cfg.model not in DISPATCH_BOUND_MODELS or _local_step_form(cfg) not in ("plain", "drift"):
        return False
    # the fast path takes every plain or drift round of these models on CPU
    return not (fastpath.ENABLED and resolve_device(cfg.device).type == "cpu")


def stack_groups(
    todo: list[RunConfig], stack: bool | None, max_runs: int | None = None
) -> list[list[RunConfig]]:
    """The todo list as stacks, in todo order of their first run: runs with one stack_key
    together (at most max_runs, default fedbench.training.stack.MAX_RUNS), the rest alone. stack
    None: only where stack_pays; False: every run alone."""
    from fedbench.training.stack import MAX_RUNS

    cap = max_runs or MAX_RUNS
    groups: dict[object, list[list[RunConfig]]] = {}
    out: list[list[RunConfig]] = []
    for i, cfg in enumerate(todo):
        key = stack_key(cfg) if stack is not False else None
        if key is None or (stack is None and not stack_pays(cfg)):
            key = ("alone", i)
        chunks = groups.setdefault(key, [])
        if not chunks or len(chunks[-1]) >= cap:
            chunks.append([])
            out.append(chunks[-1])
        chunks[-1].append(cfg)
    return out


def execute_stack(
    cfgs: list[RunConfig],
    results: str,
    repair: set[str],
    threads: int | None,
    on_start: OnStart,
    on_done: OnDone,
    on_round: Callable[[dict], None] | None = None,
) -> None:
    """Run cfgs as one stack: one thread each, their rounds' local training merged
    (fedbench.training.stack). Each run is an ordinary execute_run (claim, folder, records)."""
    import threading

    from fedbench.training.stack import Stack

    stack = Stack(len(cfgs))
    errors: list[BaseException] = []  # from the callbacks (execute_run never raises)

    def one(cfg: RunConfig) -> None:
        try:
            with stack.member():
                on_start(cfg)
                rid = run_id(cfg)
                d = execute_run(cfg.to_dict(), results, rid in repair, threads, None, on_round)
                on_done(cfg, Outcome.from_dict(d))
        except BaseException as e:
            errors.append(e)

    for _ in cfgs:
        stack.join()
    workers = [threading.Thread(target=one, args=(cfg,), daemon=True) for cfg in cfgs]
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    if errors:
        raise errors[0]


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


# ---------------------------------------------------------------- executors

OnStart = Callable[[RunConfig], None]
OnDone = Callable[[RunConfig, Outcome], None]


class InlineExecutor:
    """One run (or one stack of runs, fedbench.training.stack) after another in this process
    (per-round progress available). stack: True stacks every group stack_key allows, False none,
    None (default) those where stacking pays (stack_pays)."""

    name = "inline"

    def __init__(self, threads: int | None = None, stack: bool | None = None):
        self.threads = threads
        self.stack = stack

    def run(self, todo, results, repair, on_start, on_done, on_round=None) -> None:
        for group in stack_groups(list(todo), self.stack):
            if len(group) > 1:
                execute_stack(
                    group, str(results), repair, self.threads, on_start, on_done, on_round
                )
                continue
            cfg = group[0]
            on_start(cfg)
            rid = run_id(cfg)
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
        self.threads = threads  # else fedbench.training.threads chooses, within cores // jobs
        from fedbench.training.threads import cpu_cores  # imports torch

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
                    rid = run_id(cfg)
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
                        rid = run_id(cfg)
                        attempts[rid] = attempts.get(rid, 0) + 1
                        if attempts[rid] >= 2:
                            on_done(cfg, Outcome(rid, "failed", "worker process died "
                                                 "(crash or out of memory)"))  # fmt: skip
                        else:
                            queue.insert(0, cfg)  # may have died with another run's worker
                if broken:
                    for cfg in running.values():
                        queue.insert(0, cfg)
                        attempts[run_id(cfg)] = attempts.get(run_id(cfg), 0) + 1
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
            from fedbench.plugins import ENV

            env = {"py_modules": [os.path.dirname(fedbench.__file__)]}
            if os.environ.get(ENV):  # the tasks load the sweep's plugins (at the same paths)
                env["env_vars"] = {ENV: os.environ[ENV]}
            try:
                ray.init(address=self.address or "auto", runtime_env=env, log_to_driver=False)
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
            ref = task.remote(cfg.to_dict(), results, run_id(cfg) in repair, threads)
            refs[ref] = cfg
        while refs:
            ready, _ = ray.wait(list(refs), num_returns=1)
            for ref in ready:
                cfg = refs.pop(ref)
                try:
                    out = Outcome.from_dict(ray.get(ref))
                except Exception as e:  # the task's worker died
                    first = (str(e).strip().splitlines() or [type(e).__name__])[0]
                    out = Outcome(run_id(cfg), "failed", f"Ray task failed: {first}")
                on_done(cfg, out)


def make_executor(
    executor: str = "local",
    jobs: int = 1,
    threads: int | None = None,
    address: str | None = None,
    gpus_per_run: float = 0,
    cpus_per_run: float = 1,
    stack: bool | None = None,
):
    """stack: stacked runs (fedbench.training.stack) in the inline executor only: pool workers and
    Ray tasks run one config each (stack: True there is refused)."""
    if jobs < 1:
        raise FedbenchError(f"--jobs must be >= 1, got {jobs}")
    if stack and (executor == "ray" or jobs > 1):
        raise FedbenchError("--stack runs in this process: use it without --jobs or --executor")
    if executor == "ray":
        return RayExecutor(address or "auto", gpus_per_run, cpus_per_run)
    if executor != "local":
        raise FedbenchError(f"unknown executor {executor!r}; choose local or ray")
    return InlineExecutor(threads, stack) if jobs == 1 else PoolExecutor(jobs, threads)
