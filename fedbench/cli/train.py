"""`fedbench train`: one federated training, with a progress bar and a summary table."""

from __future__ import annotations

import time
from pathlib import Path

import click

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
@opt.quiet(help="No progress bar.")
@opt.threads()
def train(
    preset,
    config_file,
    method,
    rounds,
    seed,
    data_dir,
    device,
    sets,
    results,
    overwrite,
    quiet,
    threads,
):
    """Run one federated training and record it under results/<run_id>/.

    METHOD is one of: {methods}. Method parameters (mu, alpha, beta, r, T, lambda, eta_g,
    ...) are set with --set NAME=VALUE; `fedbench methods` lists each method's parameters
    and defaults.

    \b
    Examples:
      fedbench train
      fedbench train --preset fedlga-fmnist --method fedavg --rounds 30 --seed 0
      fedbench train --preset fedprox-synthetic --method fedprox --set mu=1 --set s=0.9
      fedbench train --config my_run.toml --set lr=0.03
    """
    from fedbench.assembly import build_config
    from fedbench.resources import check_memory
    from fedbench.training import threads as thread_policy

    flags = {
        "method": method,
        "rounds": rounds,
        "seed": seed,
        "data_dir": data_dir,
        "device": device,
    }
    cfg = build_config(preset, config_file, command_line(sets, flags))
    check_folder(results, "--results", claims=True)
    check_memory(cfg)
    thread_policy.configure(threads)
    _train_with_progress(cfg, Path(results), overwrite, quiet)


def _progress(quiet: bool):
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
        disable=quiet,
    )


def _train_with_progress(cfg, results: Path, overwrite: bool, quiet: bool) -> None:
    from fedbench.data import data_fingerprint
    from fedbench.tables import fmt_cell
    from fedbench.training.engine import Engine
    from fedbench.training.runner import check_not_done
    from fedbench.training.runner import train as run_train

    fp = data_fingerprint(cfg, compute=False)  # known if this data was loaded before
    if fp is not None:
        check_not_done(cfg, results, overwrite, fp)  # before loading anything
    engine = Engine(cfg)  # loads the data: errors surface before the progress bar
    check_not_done(cfg, results, overwrite, engine.data.info.get("fingerprint"))

    progress = _progress(quiet)
    state = {"last_acc": "–"}
    with progress:
        task = progress.add_task(
            f"{cfg.method} {cfg.dataset}", total=cfg.rounds, acc="–", loss="–", spr="–"
        )

        def on_round(rec: dict) -> None:
            if "test_acc" in rec:
                state["last_acc"] = f"{rec['test_acc']:.4f}"
            loss = rec.get("local_loss", rec.get("test_loss"))
            progress.update(
                task,
                completed=rec["round"],
                acc=state["last_acc"],
                loss=fmt_cell(loss),
                spr=f"{rec['round_seconds']:.2f}",
            )

        t0 = time.perf_counter()
        meta, _ = run_train(cfg, results, overwrite=overwrite, on_round=on_round, engine=engine)
    _print_run(cfg, meta, results, time.perf_counter() - t0)


def _print_run(cfg, meta: dict, results: Path, wall_seconds: float) -> None:
    from rich.table import Table

    from fedbench.tables import console, fmt_cell

    s = meta["summary"]
    table = Table(title=f"run {meta['run_id']} ({meta['status']})", show_header=False)
    rows = [
        ("method", f"{cfg.method} {cfg.method_params or ''}"),
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
