"""Running one config of a sweep here (in this process, a pool worker or a Ray task): its
outcome as a dict that crosses process boundaries, and its rounds sent back to the sweep."""

from __future__ import annotations

import math
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fedbench import plugins
from fedbench.config import RunConfig, config_from_dict
from fedbench.errors import FedbenchError
from fedbench.identity import run_id
from fedbench.training import signals


@dataclass
class Outcome:
    run_id: str
    # complete | diverged | failed | interrupted (a signal stopped it; it resumes) | busy
    # (claimed elsewhere) | done (by another)
    status: str
    error: str | None = None
    seconds: float = 0.0
    summary: dict = field(default_factory=dict)
    resumed: list = field(default_factory=list)  # rounds it resumed from (run.json's resumed)
    attempts: int = 1  # > 1: its worker died and it was run again
    recorded: bool = True  # False: its run.json could not say how it ended (a full disk)

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
    checkpoint: dict | None = None,
) -> dict:
    """Run one config here; never raises (an error becomes a "failed" outcome, which the
    runner has also written into the run's run.json; a signal's stop an "interrupted" one, and
    the stop stays requested so that the sweep starts nothing more). Returns Outcome fields as
    a dict so that it crosses process and Ray boundaries. checkpoint: the Policy's fields
    (fedbench.training.checkpoint; None: this process's environment)."""
    import dataclasses

    from fedbench.results.locks import RunBusy
    from fedbench.training import threads as thread_policy
    from fedbench.training.checkpoint import Policy
    from fedbench.training.runner import RunExists, train

    t0 = time.perf_counter()
    try:  # a worker process or Ray task: the sweep's plugins (FEDBENCH_PLUGINS)
        plugins.load_all()
    except FedbenchError as e:
        return dataclasses.asdict(Outcome(run_id(config_from_dict(cfg_dict)), "failed", str(e)))
    cfg = config_from_dict(cfg_dict)
    thread_policy.configure(threads or _WORKER.get("threads"), _WORKER.get("budget"))
    device = device or _WORKER.get("device")
    if device and cfg.device == "auto":
        cfg = dataclasses.replace(cfg, device=device)
    out = Outcome(run_id(cfg), "failed")
    if on_round is None and "progress" in _WORKER:  # a pool worker: rounds to the sweep
        on_round = ProgressSink(_WORKER["progress"], out.run_id, cfg.rounds)
    try:
        signals.check()  # stopped before it began: not even claimed
        policy = Policy(**checkpoint) if checkpoint else Policy.from_env()
        meta, _ = train(cfg, results, overwrite, on_round=on_round, checkpoint=policy)
        out.status, out.summary = meta["status"], meta.get("summary", {})
        out.resumed = list(meta.get("resumed") or [])
    except RunBusy as e:
        out.status, out.error = "busy", str(e)
    except RunExists:
        out.status = "done"
    except KeyboardInterrupt as e:
        out.status, out.error = "interrupted", f"interrupted ({signals.signal_name(e)})"
        signals.request(getattr(e, "signum", signal.SIGINT))
    except Exception as e:
        out.error = (f"{type(e).__name__}: {e}".strip().splitlines() or ["error"])[0]
        out.recorded = getattr(e, "recorded", False)  # set only where its run.json was written
    out.seconds = time.perf_counter() - t0
    return dataclasses.asdict(out)


PROGRESS_KEYS = ("round", "test_acc", "local_loss", "dist_to_opt", "round_seconds")


class ProgressSink:
    """on_round of a run in another process (pool worker, Ray task): its rounds' main numbers
    put on a queue the sweep reads, at most one every `every` seconds (and the last round)."""

    def __init__(self, queue, run_id: str, rounds: int, every: float = 1.0):
        self.queue, self.run_id, self.rounds, self.every = queue, run_id, rounds, every
        self.last = -math.inf

    def __call__(self, rec: dict) -> None:
        now = time.monotonic()
        if now - self.last < self.every and rec.get("round") != self.rounds:
            return
        self.last = now
        small = {k: rec[k] for k in PROGRESS_KEYS if k in rec}
        try:
            self.queue.put((self.run_id, small))
        except Exception:  # progress is a courtesy: never fail a run for it
            pass


# what an executor calls back with
OnStart = Callable[[RunConfig], None]
OnDone = Callable[[RunConfig, Outcome], None]
OnRound = Callable[[RunConfig, dict], None]  # a run's round record (or its main numbers)
