"""A sweep end to end with progress: plan, execute, report."""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from fedbench.config import RunConfig
from fedbench.identity import run_id
from fedbench.sweep.execute import InlineExecutor, Outcome
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

    # the callbacks run in several threads at once when the inline executor stacks runs
    lock = threading.Lock()
    with progress:
        task = progress.add_task(label, total=len(plan.todo), info=info())
        run_task = None

        def on_start(cfg: RunConfig) -> None:
            nonlocal run_task
            with lock:
                counts["running"] += 1
                if isinstance(executor, InlineExecutor):
                    if run_task is None:
                        run_task = progress.add_task("", total=cfg.rounds, info="")
                    progress.reset(run_task, total=cfg.rounds, description=f"  {run_id(cfg)}")
                progress.update(task, info=info())

        def on_round(rec: dict) -> None:
            with lock:
                if run_task is not None:
                    acc = rec.get("test_acc")
                    progress.update(
                        run_task,
                        completed=rec["round"],
                        info="" if acc is None or math.isnan(acc) else f"acc {acc:.4f}",
                    )

        def on_done(cfg: RunConfig, out: Outcome) -> None:
            with lock:
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
    shown, values = _varying(report.plan.todo, [o.run_id for o in outs])
    for col in ("run", *shown, "status", "best acc", "rounds to target", "wall s", "error"):
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
