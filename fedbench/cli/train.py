"""`fedbench train`: one federated training, with a progress bar and a summary table."""

from __future__ import annotations

import time
from contextlib import contextmanager
from pathlib import Path

import click

from fedbench.cli import common
from fedbench.cli import options as opt
from fedbench.cli.common import ListedHelp, check_folder, command_line


def method_names() -> list[str]:
    from fedbench.methods import METHODS

    return list(METHODS)


@click.command(cls=ListedHelp, lists={"methods": method_names})
@opt.preset()
@opt.config_file()
@click.option("--method", help="The method (see `fedbench methods`).")
@click.option("--rounds", type=int, help="Communication rounds.")
@click.option("--seed", type=int, help="Seed of everything random in the run.")
@opt.data_dir()
@click.option("--device", help="auto (cuda if available), cpu, cuda, cuda:N.")
@opt.sets(
    help="Any config field (or paper alias N, K, E, B, P, s) or method parameter "
    "(mu, alpha, beta, ...); repeatable."
)
@opt.results(help=None)
@click.option("--overwrite", is_flag=True, help="Run again even if this config already ran.")
@opt.output
@opt.checkpoints
@opt.threads()
def train(preset, config_file, method, rounds, seed, data_dir, device, sets, results, overwrite,
          quiet, verbose, log_level, checkpoint_rounds, checkpoint_minutes, threads):  # fmt: skip
    """Run one federated training and record it under results/<run_id>/.

    METHOD is one of: {methods}. Method parameters (mu, alpha, beta, r, T, lambda, eta_g,
    ...) are set with --set NAME=VALUE; `fedbench methods` lists each method's parameters
    and defaults.

    A run killed or interrupted (Ctrl-C: exit 130; SIGTERM: exit 143, recorded `interrupted`)
    resumes from its last checkpoint when the same command runs again.

    \b
    Examples:
      fedbench train
      fedbench train --preset fedlga-fmnist --method fedavg --rounds 30 --seed 0
      fedbench train --preset fedprox-synthetic --method fedprox --set mu=1 --set s=0.9
      fedbench train --config examples/run.toml --set lr=0.03
      fedbench train --preset fedlga-fmnist > log 2>&1   # a progress line every 10 s
    """
    from fedbench.assembly import build_config
    from fedbench.devices import tf32_requested
    from fedbench.identity import server_lr_note
    from fedbench.resources import check_memory
    from fedbench.training import signals
    from fedbench.training import threads as thread_policy
    from fedbench.training.checkpoint import Policy

    level = common.log_level(quiet, verbose, log_level)
    flags = {
        "method": method,
        "rounds": rounds,
        "seed": seed,
        "data_dir": data_dir,
        "device": device,
    }
    cfg = build_config(preset, config_file, command_line(sets, flags))
    check_folder(results, "--results", claims=True)
    common.warn("warning:", filter(None, [server_lr_note(cfg)]))
    check_memory(cfg)
    policy = Policy.from_env(checkpoint_rounds, checkpoint_minutes)
    tf32_requested()  # a bad FEDBENCH_TF32: one line before any work
    thread_policy.configure(threads)
    with signals.handling():
        _train_with_progress(cfg, Path(results), overwrite, level, policy)


def _bar():
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("acc {task.fields[acc]}  loss {task.fields[loss]}  {task.fields[spr]} s/round"),
        TimeRemainingColumn(),
        console=Console(stderr=True),
    )


@contextmanager
def _display(cfg, level: str):
    """on_round for the run: the live bar on a terminal at the default level, else plain
    lines (fedbench.sweep.progress; none at level warning)."""
    from fedbench.identity import run_id
    from fedbench.sweep import progress
    from fedbench.tables import fmt_cell

    if level != "info" or not progress.on_terminal():
        yield progress.RoundLines(run_id(cfg), cfg.rounds)
        return
    bar, state = _bar(), {"last_acc": "–"}
    with bar:
        task = bar.add_task(
            f"{cfg.method} {cfg.dataset}", total=cfg.rounds, acc="–", loss="–", spr="–"
        )

        def on_round(rec: dict) -> None:
            if "test_acc" in rec:
                state["last_acc"] = f"{rec['test_acc']:.4f}"
            loss = rec.get("local_loss", rec.get("test_loss"))
            bar.update(
                task,
                completed=rec["round"],
                acc=state["last_acc"],
                loss=fmt_cell(loss),
                spr=f"{rec['round_seconds']:.2f}",
            )

        yield on_round


def _train_with_progress(cfg, results: Path, overwrite: bool, level: str, policy) -> None:
    from fedbench.data import data_fingerprint
    from fedbench.identity import run_id
    from fedbench.sweep.progress import log
    from fedbench.training.engine import Engine
    from fedbench.training.runner import check_not_done
    from fedbench.training.runner import train as run_train

    # One full "already done?" read of results/: before loading anything when the data's
    # fingerprint is known (loaded before), else right after loading (the runner checks again,
    # cheaply, only the run's own folders under its claim).
    fp = data_fingerprint(cfg, compute=False)
    if fp is not None:
        check_not_done(cfg, results, overwrite, fp)
    t_load = time.perf_counter()
    engine = Engine(cfg)  # loads the data: errors surface before the progress bar
    if fp is None:
        check_not_done(cfg, results, overwrite, engine.data.info.get("fingerprint"))
    log.info(
        "%s: %s on %s, %d rounds -> %s (data loaded in %.1f s)",
        run_id(cfg), cfg.method, cfg.dataset, cfg.rounds, results, time.perf_counter() - t_load,
    )  # fmt: skip
    t0 = time.perf_counter()
    try:
        with _display(cfg, level) as on_round:
            meta, _ = run_train(
                cfg, results, overwrite, on_round=on_round, engine=engine, checkpoint=policy
            )
    except KeyboardInterrupt as e:
        _say_interrupted(cfg, results, e)
        raise
    _print_run(cfg, meta, results, time.perf_counter() - t0)


def _say_interrupted(cfg, results: Path, e: KeyboardInterrupt) -> None:
    """Where the interrupted run stands and how it goes on (one line on stderr)."""
    from fedbench.identity import run_id
    from fedbench.safe_read import read_json
    from fedbench.training import signals

    try:
        meta = read_json(results / run_id(cfg) / "run.json")
    except (OSError, ValueError):
        meta = {}
    kept = meta.get("checkpoint_round") if isinstance(meta, dict) else None
    where = f"from round {kept}" if kept else "from round 0 (no checkpoint yet)"
    click.echo(
        f"interrupted ({signals.signal_name(e)}): run {run_id(cfg)} is recorded as "
        f"interrupted; the same command resumes it {where}",
        err=True,
    )
    e.reported = True


def _print_run(cfg, meta: dict, results: Path, wall_seconds: float) -> None:
    from rich.table import Table

    from fedbench.identity import method_label
    from fedbench.tables import console, fmt_cell

    s = meta["summary"]
    table = Table(title=f"run {meta['run_id']} ({meta['status']})", show_header=False)
    rows = [
        ("method", f"{method_label(cfg)} {cfg.method_params or ''}"),  # fedavg+adam
        ("data", meta["data"]["description"]),
        ("device", meta["device_name"]),
        ("rounds", str(s["rounds_run"])),
        ("best / final test acc", f"{fmt_cell(s['best_acc'])} / {fmt_cell(s['final_acc'])}"),
        ("target", fmt_cell(s["target_acc"])),
        ("rounds to target", fmt_cell(s["rounds_to_target"])),
        ("seconds to target", fmt_cell(s["seconds_to_target"])),
        ("mean s/round (training)", fmt_cell(s["mean_round_seconds"])),
        ("wall time", f"{wall_seconds:.1f} s"),
        ("records", str(results / meta["run_id"])),
    ]
    for k, v in rows:
        table.add_row(k, v)
    console().print(table)


COMMANDS = [train]
