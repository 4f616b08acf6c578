"""Running a sweep's configs: the executors that schedule them (inline, a pool of spawned
processes, Ray tasks). One run: one_run.py (execute_run); runs trained as one stack: stacking.py."""

from __future__ import annotations

import functools
import logging
import os
import signal
import sys
from pathlib import Path

from fedbench.errors import FedbenchError
from fedbench.identity import run_id
from fedbench.plugins import ENV
from fedbench.sweep.one_run import (
    _WORKER,
    Outcome,
    ProgressSink,
    execute_run,
)
from fedbench.sweep.stacking import execute_stack, stack_groups
from fedbench.training import signals

log = logging.getLogger(__name__)


def _die_with_parent() -> None:
    """Linux: a worker gets SIGKILL when the sweep that started it dies (a killed sweep must not
    leave workers that keep claims alive)."""
    if sys.platform.startswith("linux"):
        import ctypes

        try:
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        except OSError:  # pragma: no cover
            pass


def _init_worker(slots, threads: int | None, budget: int, devices: list[str], progress) -> None:

    _die_with_parent()
    signals.install_for_worker()  # a stop ends its run at the round's end (or now: SIGUSR2)
    slot = slots.get()
    _WORKER["threads"], _WORKER["budget"], _WORKER["progress"] = threads, budget, progress
    if devices:
        _WORKER["device"] = devices[slot % len(devices)]


# ---------------------------------------------------------------- executors
class InlineExecutor:
    """One run (or one stack of runs, fedbench.training.stack) after another in this process
    (per-round progress available). stack: True stacks every group stack_key allows, False none,
    None (default) those where stacking pays (stack_pays)."""

    name = "inline"

    def __init__(
        self, threads: int | None = None, stack: bool | None = None, checkpoint: dict | None = None
    ):
        self.threads = threads
        self.stack = stack
        self.checkpoint = checkpoint  # Policy fields (fedbench.training.checkpoint), or None

    def prepare(self) -> None:
        """Nothing to start before the plan is shown."""

    def run(self, todo, results, repair, on_start, on_done, on_round=None) -> None:

        for group in stack_groups(list(todo), self.stack):
            signals.check()  # a stop asked for: start nothing more
            if len(group) > 1:
                execute_stack(
                    group,
                    str(results),
                    repair,
                    self.threads,
                    on_start,
                    on_done,
                    on_round,
                    self.checkpoint,
                )
                continue
            cfg = group[0]
            on_start(cfg)
            rid = run_id(cfg)
            rounds = functools.partial(on_round, cfg) if on_round else None
            d = execute_run(
                cfg.to_dict(), str(results), rid in repair, self.threads, None, rounds,
                self.checkpoint,
            )  # fmt: skip
            on_done(cfg, Outcome.from_dict(d))
        signals.check()


class PoolExecutor:
    """N spawned worker processes; each gets cores // N torch threads (or --threads) and, with
    GPUs and device=auto, GPU (worker slot mod GPUs). A worker that dies (segfault, out of
    memory) fails only the runs it was running; the pool is rebuilt for the rest. Workers send
    their runs' rounds back (ProgressSink); a stop (SIGINT, SIGTERM) is passed on to them, and
    the sweep waits for their runs to record themselves interrupted."""

    name = "pool"

    def __init__(self, jobs: int, threads: int | None = None, checkpoint: dict | None = None):
        self.jobs = jobs
        self.threads = threads  # else fedbench.training.threads chooses, within cores // jobs
        self.checkpoint = checkpoint
        from fedbench.training.threads import cpu_cores  # imports torch

        self.budget = max(1, cpu_cores() // jobs)

    def prepare(self) -> None:
        """The workers start with the sweep."""

    def _devices(self) -> list[str]:
        import torch

        n = torch.cuda.device_count() if torch.cuda.is_available() else 0
        return [f"cuda:{i}" for i in range(n)]

    def _pool(self, progress):
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
            initargs=(slots, self.threads, self.budget, self._devices(), progress),
        )

    def run(self, todo, results, repair, on_start, on_done, on_round=None) -> None:
        import multiprocessing as mp

        progress = mp.get_context("spawn").Queue()
        state = _PoolState(self, list(todo), str(results), repair, progress)
        by_id = {run_id(c): c for c in todo}
        try:
            with signals.checking(), signals.forwarding(state.send):
                while state.queue or state.running:
                    state.submit(on_start)
                    state.step(on_done)
                    _drain(progress, by_id, on_round)
            _drain(progress, by_id, on_round)
        finally:
            state.pool.shutdown(wait=True, cancel_futures=True)
            progress.close()
        if state.stop is not None:
            raise state.stop
        signals.check()


class _PoolState:
    """A pool run's moving parts: what is queued, running, retried; the stop if one came."""

    def __init__(self, executor: PoolExecutor, queue, results: str, repair, progress):
        self.ex, self.queue, self.results, self.repair = executor, queue, results, repair
        self.progress = progress
        self.pool = executor._pool(progress)
        self.running: dict = {}
        self.attempts: dict[str, int] = {}
        self.stop: KeyboardInterrupt | None = None

    def send(self, signum: int) -> None:
        """Pass a stop on to the workers (fedbench.training.signals.forwarding)."""
        for pid in list(getattr(self.pool, "_processes", None) or {}):
            os.kill(pid, signum)

    def submit(self, on_start) -> None:

        if signals.requested() is not None:
            self.queue.clear()  # start nothing more; the runs going on stop at their round's end
        while self.queue and len(self.running) < self.ex.jobs:
            cfg = self.queue.pop(0)
            rid = run_id(cfg)
            if self.attempts.get(rid, 0) == 0:
                on_start(cfg)
            args = (cfg.to_dict(), self.results, rid in self.repair)
            fut = self.pool.submit(execute_run, *args, None, None, None, self.ex.checkpoint)
            self.running[fut] = cfg

    def step(self, on_done) -> None:
        """Wait (a short while) for runs to end and report them; rebuild a broken pool."""
        from concurrent.futures import FIRST_COMPLETED, wait
        from concurrent.futures.process import BrokenProcessPool

        try:
            finished, _ = wait(self.running, timeout=0.5, return_when=FIRST_COMPLETED)
        except KeyboardInterrupt as e:  # stop now: the workers were told too; wait for them
            self.stop = self.stop or e
            return
        broken = False
        for fut in finished:
            cfg = self.running.pop(fut)
            try:
                out = Outcome.from_dict(fut.result())
            except BrokenProcessPool:
                broken = True
                out = self._retry(cfg)
            if out is not None:
                out.attempts = max(out.attempts, self.attempts.get(out.run_id, 0) + 1)
                on_done(cfg, out)
        if broken:
            for cfg in self.running.values():
                self.queue.insert(0, cfg)
                self.attempts[run_id(cfg)] = self.attempts.get(run_id(cfg), 0) + 1
            self.running.clear()
            self.pool.shutdown(wait=False, cancel_futures=True)
            self.pool = self.ex._pool(self.progress)

    def _retry(self, cfg) -> Outcome | None:
        """A run whose worker died: run once more (it resumes from its checkpoint), or fail."""
        rid = run_id(cfg)
        self.attempts[rid] = self.attempts.get(rid, 0) + 1
        if self.attempts[rid] >= 2:
            died = "worker process died (crash or out of memory)"
            return Outcome(rid, "failed", died, attempts=self.attempts[rid])
        log.warning("%s: its worker process died; running it again (attempt 2)", rid)
        self.queue.insert(0, cfg)  # may have died with another run's worker
        return None


def _drain(progress, by_id: dict, on_round) -> None:
    """Pass the rounds workers sent (ProgressSink) to on_round(cfg, record)."""
    import queue

    while True:
        try:
            rid, rec = progress.get_nowait()
        except (queue.Empty, OSError, ValueError, EOFError):
            return
        if on_round is not None and rid in by_id:
            on_round(by_id[rid], rec)


class RayExecutor:
    """Each run a Ray task (num_cpus / num_gpus per run), writing to the (shared) results path.
    Where: the Ray this process already started; else the cluster at `address` (HOST:PORT, or
    "auto": the one `ray start` made on this machine) when one is named; else a private local
    Ray started for this sweep and stopped after it (never someone else's cluster). A task
    whose worker died is run once more (it resumes from its checkpoint); the sweep's output
    and summary say so. Runs send their rounds back through a Ray queue (ProgressSink)."""

    name = "ray"

    def __init__(
        self,
        address: str | None = None,
        num_gpus: float = 0,
        num_cpus: float = 1,
        checkpoint: dict | None = None,
        retries: int = 1,
    ):
        self.address, self.num_gpus, self.num_cpus = address, num_gpus, num_cpus
        self.checkpoint, self.retries = checkpoint, retries
        self.started = False  # this executor started the (private) Ray, and stops it

    def prepare(self) -> None:
        """Start or join Ray now (its errors before the sweep prints its plan)."""
        self._ray()

    def _ray(self):
        try:
            import ray
        except ImportError:
            raise FedbenchError("--executor ray needs Ray: pip install 'fedbench[ray]'") from None
        if ray.is_initialized():
            return ray

        package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # fedbench/
        env = {"py_modules": [package]}
        if os.environ.get(ENV):  # the tasks load the sweep's plugins (at the same paths)
            env["env_vars"] = {ENV: os.environ[ENV]}
        where = f"the Ray cluster at {self.address}" if self.address else "a private local Ray"
        try:
            ray.init(
                address=self.address or "local",
                runtime_env=env,
                log_to_driver=False,
                **({} if self.address else {"include_dashboard": False}),
            )
        except Exception as e:
            raise FedbenchError(_ray_failure(f"could not start or join {where}", e)) from None
        self.started = not self.address
        return ray

    def run(self, todo, results, repair, on_start, on_done, on_round=None) -> None:

        ray = self._ray()
        signals.reassert()  # ray.init installs its own SIGTERM handler
        try:
            self._run(ray, list(todo), str(Path(results).resolve()), repair, on_start, on_done,
                      on_round)  # fmt: skip
        finally:
            if self.started:
                ray.shutdown()
                self.started = False

    def _run(self, ray, todo, results, repair, on_start, on_done, on_round) -> None:
        from ray.util.queue import Queue

        progress = Queue()
        threads = max(1, int(self.num_cpus))
        task = ray.remote(execute_run).options(
            num_cpus=self.num_cpus, num_gpus=self.num_gpus, max_retries=0
        )

        def submit(cfg, attempt: int):
            rid = run_id(cfg)
            sink = ProgressSink(progress, rid, cfg.rounds)
            args = (cfg.to_dict(), results, rid in repair, threads, None, sink, self.checkpoint)
            refs[task.remote(*args)] = (cfg, attempt)

        refs: dict = {}
        for cfg in todo:
            on_start(cfg)
            submit(cfg, 1)
        by_id = {run_id(c): c for c in todo}
        with signals.checking():
            while refs:
                if signals.requested() is not None:
                    for ref in refs:
                        ray.cancel(ref)  # KeyboardInterrupt in the task: recorded interrupted
                ready, _ = ray.wait(list(refs), num_returns=1, timeout=1.0)
                _drain(progress, by_id, on_round)
                for ref in ready:
                    cfg, attempt = refs.pop(ref)
                    out = self._outcome(ray, ref, cfg, attempt)
                    if out is None:
                        submit(cfg, attempt + 1)
                    else:
                        on_done(cfg, out)
        _drain(progress, by_id, on_round)
        signals.check()

    def _outcome(self, ray, ref, cfg, attempt: int) -> Outcome | None:
        """The task's outcome; None when its worker died and it is to run again."""

        try:
            out = Outcome.from_dict(ray.get(ref))
        except Exception as e:  # the task never returned: its worker died, or it was cancelled
            rid = run_id(cfg)
            if signals.requested() is not None:
                return Outcome(rid, "interrupted", "cancelled by the stop", attempts=attempt)
            if attempt <= self.retries:
                log.warning("%s", _ray_failure(f"{rid}: its Ray worker died; running it again "
                                               f"(attempt {attempt + 1})", e))  # fmt: skip
                return None
            out = Outcome(rid, "failed", _ray_failure("Ray task failed", e), attempts=attempt)
        out.attempts = attempt
        return out


def _ray_failure(what: str, e: BaseException) -> str:
    """One line of what failed, with Ray's whole message (every line of it, joined)."""
    text = " | ".join(line.strip() for line in str(e).strip().splitlines() if line.strip())
    return f"{what}: {type(e).__name__}: {text}" if text else f"{what}: {type(e).__name__}"


def make_executor(
    executor: str = "local",
    jobs: int = 1,
    threads: int | None = None,
    address: str | None = None,
    gpus_per_run: float = 0,
    cpus_per_run: float = 1,
    stack: bool | None = None,
    checkpoint: dict | None = None,
):
    """stack: stacked runs (fedbench.training.stack) in the inline executor only: pool workers and
    Ray tasks run one config each (stack: True there is refused). address: a Ray cluster (None:
    a private local Ray). checkpoint: the runs' checkpoint Policy fields (None: from the
    environment of the process that trains)."""
    if jobs < 1:
        raise FedbenchError(f"--jobs must be >= 1, got {jobs}")
    if stack and (executor == "ray" or jobs > 1):
        raise FedbenchError("--stack runs in this process: use it without --jobs or --executor")
    if address is not None and executor != "ray":
        raise FedbenchError("--address names a Ray cluster: use it with --executor ray")
    if executor == "ray":
        return RayExecutor(address, gpus_per_run, cpus_per_run, checkpoint)
    if executor != "local":
        raise FedbenchError(f"unknown executor {executor!r}; choose local or ray")
    if jobs == 1:
        return InlineExecutor(threads, stack, checkpoint)
    return PoolExecutor(jobs, threads, checkpoint)
