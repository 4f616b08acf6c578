"""A sweep end to end with progress: plan, execute, report."""

from __future__ import annotations

import logging
import math
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from fedbench.config import RunConfig
from fedbench.identity import run_id
from fedbench.sweep.executors import InlineExecutor, Outcome
from fedbench.sweep.progress import fmt_seconds, log, on_terminal, progress_seconds, round_line
from fedbench.sweep.todo import Plan

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
    level: str | None = None,
) -> SweepReport:
    """Run the plan's todo list with progress: on a terminal a live display of runs done /
    running / failed and ETA, else plain lines (a line per finished run, and the runs' rounds at
    a lower rate; fedbench.sweep.progress). level: warning (as quiet: nothing), info, debug.

    A stop (Ctrl-C, SIGTERM; fedbench.training.signals) ends it once its runs have recorded
    themselves interrupted: the KeyboardInterrupt is raised again with the report attached
    (its `report`)."""
    executor = executor or InlineExecutor()
    Path(results).mkdir(parents=True, exist_ok=True)
    report = SweepReport(plan)
    t0 = time.perf_counter()
    level = level or ("warning" if quiet else "info")
    display = _Bar(plan, label, executor) if level == "info" and on_terminal() else _Lines(plan)
    lock = threading.Lock()  # the callbacks run in several threads at once in a stack

    def on_start(cfg: RunConfig) -> None:
        with lock:
            display.start(cfg)

    def on_round(cfg: RunConfig, rec: dict) -> None:
        with lock:
            display.round(cfg, rec)

    def on_done(cfg: RunConfig, out: Outcome) -> None:
        with lock:
            report.outcomes.append(out)
            display.done(cfg, out)

    try:
        with display:
            executor.run(plan.todo, results, plan.repair, on_start, on_done, on_round)
    except KeyboardInterrupt as e:
        report.seconds = time.perf_counter() - t0
        e.report = report
        raise
    report.seconds = time.perf_counter() - t0
    recheck_busy(report, results)
    return report


class _Lines:
    """Off a terminal: a line per finished run (info), the runs' rounds at most every
    ROUND_LINE_FACTOR x FEDBENCH_PROGRESS_SECONDS over the whole sweep (info) and every round
    they report (debug), through the `fedbench.progress` logger."""

    ROUND_LINE_FACTOR = 3.0

    def __init__(self, plan: Plan):
        self.total, self.finished = len(plan.todo), 0
        self.t0 = time.monotonic()
        self.every = progress_seconds() * self.ROUND_LINE_FACTOR
        self.last_line = -math.inf
        self.runs: dict[str, tuple[float, int]] = {}  # run -> (time, round) of its first report

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        pass

    def start(self, cfg: RunConfig) -> None:
        log.debug("%s: started", run_id(cfg))

    def round(self, cfg: RunConfig, rec: dict) -> None:
        rid, now, r = run_id(cfg), time.monotonic(), int(rec["round"])
        t0, r0 = self.runs.setdefault(rid, (now, r))
        per_round = (now - t0) / (r - r0) if r > r0 else math.nan
        line = "  " + round_line(rid, rec, cfg.rounds, per_round)
        if now - self.last_line >= self.every and log.isEnabledFor(logging.INFO):
            log.info(line)
            self.last_line = now
        else:
            log.debug(line)

    def done(self, cfg: RunConfig, out: Outcome) -> None:
        self.finished += 1
        self.runs.pop(out.run_id, None)
        elapsed = time.monotonic() - self.t0
        eta = elapsed / self.finished * (self.total - self.finished)
        log.info(
            "[%d/%d] %s  ETA %s", self.finished, self.total, outcome_line(out), fmt_seconds(eta)
        )


def outcome_line(out: Outcome) -> str:
    """`run  status  best acc 0.8  25 rounds  12.3 s  resumed from 10  (error)`."""
    s = out.summary or {}
    parts = [out.run_id, out.status]
    if s.get("best_acc") is not None and s.get("best_acc") == s.get("best_acc"):
        parts.append(f"best acc {s['best_acc']:.4g}")
    if s.get("rounds_run") is not None:
        parts.append(f"{s['rounds_run']} rounds")
    parts.append(f"{out.seconds:.1f} s")
    parts += outcome_notes(out)
    if out.error:
        parts.append(f"({out.error})")
    return "  ".join(parts)


def outcome_notes(out: Outcome) -> list[str]:
    """What else happened to the run: resumed from a checkpoint, run again after its worker
    died."""
    notes = []
    if out.resumed:
        notes.append("resumed from round " + ", ".join(str(r) for r in out.resumed))
    if out.attempts > 1:
        notes.append(f"attempt {out.attempts} (its worker died)")
    return notes


class _Bar:
    """On a terminal: rich's live display (runs done, running, failed, ETA; the current run's
    rounds for the inline executor)."""

    def __init__(self, plan: Plan, label: str, executor):
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

        self.counts = {"running": 0, "failed": 0, "diverged": 0, "interrupted": 0}
        self.inline = isinstance(executor, InlineExecutor)
        self.progress = Progress(
            SpinnerColumn(),
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[info]}"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=Console(stderr=True),
        )
        self.task = self.progress.add_task(label, total=len(plan.todo), info=self.info())
        self.run_task = None

    def info(self) -> str:
        c = self.counts
        extra = f" · interrupted {c['interrupted']}" if c["interrupted"] else ""
        return f"running {c['running']} · failed {c['failed']} · diverged {c['diverged']}{extra}"

    def __enter__(self):
        self.progress.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        if self.run_task is not None:
            self.progress.remove_task(self.run_task)
        self.progress.__exit__(*exc)

    def start(self, cfg: RunConfig) -> None:
        self.counts["running"] += 1
        if self.inline:
            if self.run_task is None:
                self.run_task = self.progress.add_task("", total=cfg.rounds, info="")
            self.progress.reset(self.run_task, total=cfg.rounds, description=f"  {run_id(cfg)}")
        self.progress.update(self.task, info=self.info())

    def round(self, cfg: RunConfig, rec: dict) -> None:
        if self.run_task is not None:
            acc = rec.get("test_acc")
            info = "" if acc is None or math.isnan(acc) else f"acc {acc:.4f}"
            self.progress.update(self.run_task, completed=rec["round"], info=info)

    def done(self, cfg: RunConfig, out: Outcome) -> None:
        self.counts["running"] -= 1
        if out.status in self.counts:
            self.counts[out.status] += 1
        if out.attempts > 1 or out.status == "interrupted":
            self.progress.console.print(outcome_line(out), highlight=False)
        self.progress.update(self.task, advance=1, info=self.info())


def summary_table(report: SweepReport, limit: int = 40):
    """The final summary: every run this sweep ran (only failed/diverged ones when many)."""
    from rich.table import Table

    from fedbench.tables import fmt_cell

    outs = report.outcomes
    if len(outs) > limit:
        outs = [o for o in outs if o.status not in ("complete", "done")]
    table = Table(title="runs of this sweep" if outs is report.outcomes else "runs not complete")
    shown, values = _varying(report.plan.todo, [o.run_id for o in outs])
    columns = ("run", *shown, "status", "best acc", "rounds to target", "wall s", "notes", "error")
    for col in columns:
        table.add_column(col, justify="right" if col in ("best acc", "wall s") else "left")
    for o in outs:
        s = o.summary or {}
        table.add_row(
            o.run_id,
            *values.get(o.run_id, [""] * len(shown)),
            o.status,
            fmt_cell(s.get("best_acc")),
            fmt_cell(s.get("rounds_to_target")),
            f"{o.seconds:.1f}",
            "; ".join(outcome_notes(o)),
            o.error or "",
        )
    return table


def _varying(todo: list[RunConfig], ids: list[str]) -> tuple[list[str], dict[str, list[str]]]:
    """The config fields and method parameters that differ among these runs (by run id), and
    each run's values of them, as text: what tells the closing table's rows apart."""
    from fedbench.run_filter import run_fields, varying_fields

    by_id = {run_id(cfg): {"config": cfg.to_dict()} for cfg in todo}
    metas = [by_id[i] for i in dict.fromkeys(ids) if i in by_id]
    shown = varying_fields(metas, always=("method", "seed", "dataset"))
    values = {}
    for rid in dict.fromkeys(ids):
        if rid not in by_id:
            continue
        fields = run_fields(by_id[rid])
        values[rid] = ["–" if fields.get(k) is None else f"{fields[k]}" for k in shown]
    return shown, values


def recheck_busy(report: SweepReport, results: Path | str) -> None:
    """Reread the claims of the runs that were running elsewhere (at planning, or when this
    sweep tried to claim them), so that a summary printed after everything finished does not
    say "running elsewhere": a run still claimed stays busy, a finished one counts as already
    done, one whose claim is gone unfinished (that sweep failed or was killed) is `left`."""
    from fedbench.results.locks import claimed_elsewhere

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
        + (f", {report.count('interrupted')} interrupted" if report.count("interrupted") else "")
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
