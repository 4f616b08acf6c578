"""`fedbench reproduce`: every run a paper's tables need, cheapest complete table first, within a
budget; then the complete tables' files and the shipped store. The command parses and says;
fedbench.reproduce plans and runs (through the sweep's executors)."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import click

from fedbench.cli import options as opt
from fedbench.cli.common import (
    ListedHelp,
    OneLineError,
    check_folder,
    echo_lines,
    log_level,
    warn,
)
from fedbench.cli.sweep import executor_options, probe_seconds


def _paper_names() -> list[str]:
    from fedbench.reproduce.reproduction_plan import paper_tables

    return list(paper_tables())


@click.command(cls=ListedHelp, lists={"papers": _paper_names})
@click.argument("papers", nargs=-1)
@click.option("--all", "every", is_flag=True, help="Every paper's tables.")
@click.option("--tables", help="Only these tables, comma-separated (e.g. r90,temperature).")
@opt.dataset(help="Only this dataset of each table.")
@click.option("--scale", type=click.Choice(["paper", "cut", "quick"]), default="paper",
              show_default=True, help="paper: the paper's rounds, clients and seeds; cut: the "
              "committed tables' (their files' commands); quick: a minutes-long CI scale, runs in "
              "RESULTS/quick, never published.")  # fmt: skip
@click.option("--order", type=click.Choice(["cheapest", "listed"]), default="cheapest",
              show_default=True, help="cheapest: the table whose runs left take least first, so "
              "a budget leaves whole tables; listed: as the papers list them.")  # fmt: skip
@click.option("--budget", help="Time to spend, e.g. 30m, 2h: no run starts that cannot end in "
              "it; at its end runs stop at a round's end with a checkpoint (exit 75).")  # fmt: skip
@click.option("--until", help="Deadline HH:MM (local time), instead of --budget.")
@opt.results(help=None)
@click.option("--out", default="tables", show_default=True, type=click.Path(),
              help="Folder for the complete tables' Markdown, figures and REPORT.md (quick: "
              "RESULTS/quick/tables).")  # fmt: skip
@click.option("--publish/--no-publish", default=True, show_default=True, help="Add a complete "
              "table's runs to the shipped store (paper and cut scales).")  # fmt: skip
@executor_options
@click.option("--dry-run", is_flag=True, help="Show the plan and its expected time; run nothing.")
@opt.probe()
@opt.output
@opt.checkpoints
def reproduce(papers, **o):
    """A paper's tables at the paper's scale in one command: plan every run they need (runs
    shared between tables once; what RESULTS or the shipped store holds is done), show the
    plan and its expected time, run the cheapest complete table first within --budget, then
    write each complete table's Markdown, figure and REPORT entry and publish its runs.

    PAPERS: {papers}.

    \b
    Examples:
      fedbench reproduce fedprox --dry-run
      fedbench reproduce fedsoftmax --budget 30m
      fedbench reproduce sfl --tables sfl --dataset fmnist --jobs 2 --until 18:00
      fedbench reproduce --all --scale quick          # the paper-level CI regression run

    Exit codes: 0 every planned run done; 1 a run failed; 2 bad input; 75 the budget ended
    first (the runs stopped keep a checkpoint: run the same command again to go on); 130 / 143
    Ctrl-C / SIGTERM.
    """
    from fedbench.reproduce.reproduction_plan import build_plan, choose_tables
    from fedbench.reproduce.screen import plan_lines
    from fedbench.sweep import make_executor
    from fedbench.sweep.budget import Deadline, budget_seconds
    from fedbench.training.checkpoint import Policy

    level = log_level(o["quiet"], o["verbose"], o["log_level"])
    seconds = budget_seconds(o["budget"], o["until"])
    deadline = Deadline(seconds)
    check_folder(o["results"], "--results", claims=True)
    policy = Policy.from_env(o["checkpoint_rounds"], o["checkpoint_minutes"]).to_dict()
    executor = make_executor(o["executor"], o["jobs"], o["threads"], o["address"],
                             o["gpus_per_run"], o["cpus_per_run"], o["stack"], policy)  # fmt: skip
    specs = choose_tables(papers, o["every"], o["tables"], o["dataset"])
    rp = build_plan(specs, o["dataset"], o["scale"], o["results"], o["order"],
                    probe=(probe_seconds(o["probe"], o["dry_run"] or seconds is not None),
                           o["threads"]))  # fmt: skip
    warn("rerunning:", rp.plan.problems)
    if rp.todo and not o["dry_run"]:
        executor.prepare()
    echo_lines(plan_lines(rp, o["order"], o["jobs"]))
    if o["dry_run"]:
        return
    outcome = _run(rp, executor, deadline, o["jobs"], level)
    _afterwards(rp, o, outcome, papers)


def _run(rp, executor, deadline, jobs: int, level: str):
    """The units' runs under the deadline; a signal's stop exits as sweep's does."""
    from fedbench.reproduce.run_units import Outcome, run_units
    from fedbench.training import signals

    if not rp.todo:
        return Outcome()
    with signals.handling():
        try:
            return run_units(rp, executor, deadline, jobs, level)
        except KeyboardInterrupt as e:
            click.echo(
                f"interrupted ({signals.signal_name(e)}): the runs stopped are recorded "
                "interrupted; run the same command again to resume them",
                err=True,
            )
            e.reported = True
            raise


def _afterwards(rp, o: dict, outcome, papers) -> None:
    """Each complete table's files and store; the closing summary; the exit code."""
    from fedbench.reproduce.run_units import refresh
    from fedbench.reproduce.screen import closing_lines
    from fedbench.sweep import summary_line
    from fedbench.sweep.budget import EXIT_BUDGET

    for report in outcome.reports:
        if report.outcomes:
            click.echo(summary_line(report))
    refresh(rp)
    _write_tables(rp, o)
    stopped = None
    if outcome.budget_ended:
        stopped = f"budget ended: {outcome.not_started} runs not started"
    echo_lines(closing_lines(rp, stopped, _command(papers, o)))
    if outcome.failed:
        first = outcome.failed[0]
        raise OneLineError(f"{len(outcome.failed)} run(s) failed, first {first.run_id}: "
                           f"{first.error} (the next call retries it)", 1)  # fmt: skip
    if outcome.budget_ended:
        sys.exit(EXIT_BUDGET)


def _write_tables(rp, o: dict) -> None:
    """Markdown and figure of every complete unit (never over a file made from more runs),
    REPORT.md, and (paper and cut scales) its runs into the shipped store."""
    from fedbench.cli.plot import _plot_figure
    from fedbench.cli.store import _publish_one
    from fedbench.cli.table import _paper_table, _table_report
    from fedbench.results.shipped_store import store_root

    done = [u for u in rp.units if u.complete]
    if not done:
        return
    quick = rp.scale == "quick"
    out = str(Path(rp.results) / "tables") if quick else o["out"]
    check_folder(out, "--out")
    root = store_root() if o["publish"] and not quick else None
    for u in done:
        sel = u.selection
        _paper_table(u.spec.name, u.spec, sel, "md", out, "skip", None, False, False)
        if u.spec.plot is not None:
            _plot_figure(u.spec.name, _figure_options(sel, out))
        if root is not None:
            seeds = ",".join(map(str, sel.seeds)) if sel.seeds is not None else None
            sets = tuple(f"{k}={v}" for k, v in sel.sets.items())
            what = (u.spec.name, u.dataset, seeds, sel.preset, sets, False)
            one = len(u.spec.datasets) == 1  # the store's group is named as the table's file
            group = u.spec.name if one else f"{u.spec.name}_{u.dataset}"
            _publish_one(root, group, what, str(rp.results), "skip")
    _table_report(str(rp.results), out, "skip", shipped=not quick)  # quick: its own runs only


def _figure_options(sel, out: str) -> dict:
    seeds = ",".join(map(str, sel.seeds)) if sel.seeds is not None else None
    return {"out": out, "results": sel.results, "calibrated": False, "dataset": sel.dataset,
            "seeds": seeds, "preset": sel.preset, "add_methods": (), "on_error": "skip",
            "strict": False, "sets": tuple(f"{k}={v}" for k, v in sel.sets.items())}  # fmt: skip


def _command(papers, o: dict) -> str:
    """The command that goes on where this one stopped."""
    words = ["fedbench", "reproduce", *papers]
    words += ["--all"] if o["every"] else []
    for flag in ("tables", "dataset", "budget", "until"):
        if o[flag]:
            words += [f"--{flag}", str(o[flag])]
    if o["scale"] != "paper":
        words += ["--scale", o["scale"]]
    if str(o["results"]) != "results":
        words += ["--results", str(o["results"])]
    if o["jobs"] != 1:
        words += ["--jobs", str(o["jobs"])]
    return shlex.join(words)


COMMANDS = [reproduce]
