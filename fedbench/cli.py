"""The `fedbench` command line: train, table, plot, presets."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import click

from fedbench.errors import FedbenchError


class FedbenchGroup(click.Group):
    """Turns every user mistake into one line (exit 2) and any other failure into one line
    (exit 1) unless --debug asks for the traceback."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except FedbenchError as e:
            raise OneLineError(str(e), 2) from None
        except (click.ClickException, click.exceptions.Exit, click.Abort, KeyboardInterrupt):
            raise
        except Exception as e:
            if (ctx.obj or {}).get("debug"):
                raise
            msg = f"{type(e).__name__}: {e}".splitlines()[0]
            raise OneLineError(f"{msg} (rerun with --debug for the traceback)", 1) from None


class OneLineError(click.ClickException):
    def __init__(self, message: str, code: int):
        super().__init__(message)
        self.exit_code = code


@click.group(cls=FedbenchGroup)
@click.option("--debug", is_flag=True, help="Show full tracebacks.")
@click.version_option(package_name="fedbench")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """Reproduce federated-learning papers' comparison tables on one batched engine.

    \b
    Examples:
      fedbench train                                  # FedAvg on Synthetic(1,1), no download
      fedbench train --preset fedlga-fmnist --method fedprox --set mu=0.1
      fedbench table summary --format md
      fedbench plot curves
    """
    ctx.ensure_object(dict)
    ctx.obj["debug"] = debug


# ---------------------------------------------------------------- train


@cli.command()
@click.option("--preset", help="Named paper setting (see `fedbench presets`).")
@click.option("--config", "config_file", type=click.Path(), help="TOML file of config fields.")
@click.option("--method", help="fedavg, fedprox, ... (see README's methods table).")
@click.option("--rounds", type=int, help="Communication rounds.")
@click.option("--seed", type=int, help="Seed of everything random in the run.")
@click.option("--data-dir", help="Folder holding the dataset files.")
@click.option("--device", help="auto (cuda if available), cpu, cuda, cuda:N.")
@click.option(
    "--set",
    "sets",
    multiple=True,
    metavar="KEY=VALUE",
    help="Any config field (or paper alias N, K, E, B, P, s) or method parameter "
    "(mu, alpha, beta, ...); repeatable.",
)
@click.option("--results", default="results", show_default=True, type=click.Path())
@click.option("--overwrite", is_flag=True, help="Run again even if this config already ran.")
@click.option("--quiet", is_flag=True, help="No progress bar.")
@click.option("--threads", type=int, help="torch CPU threads (default: torch's choice).")
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

    Method parameters (mu, alpha, beta, r, T, lambda, eta_g, ...) are set with
    --set NAME=VALUE; `fedbench methods` lists each method's parameters and defaults.

    \b
    Examples:
      fedbench train
      fedbench train --preset fedlga-fmnist --method fedavg --rounds 30 --seed 0
      fedbench train --preset fedprox-synthetic --method fedprox --set mu=1 --set s=0.9
      fedbench train --config my_run.toml --set lr=0.03
    """
    from fedbench.config import build_config, parse_set

    overrides = parse_set(sets)
    for key, val in (
        ("method", method),
        ("rounds", rounds),
        ("seed", seed),
        ("data_dir", data_dir),
        ("device", device),
    ):
        if val is not None:
            overrides[key] = str(val)
    cfg = build_config(preset, config_file, overrides)
    if threads:
        import torch

        torch.set_num_threads(threads)
    _train_with_progress(cfg, Path(results), overwrite, quiet)


def _train_with_progress(cfg, results: Path, overwrite: bool, quiet: bool) -> None:
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    from fedbench.engine import Engine
    from fedbench.runner import check_not_done
    from fedbench.runner import train as run_train
    from fedbench.tables import console, fmt_cell

    check_not_done(cfg, results, overwrite)  # before loading anything
    engine = Engine(cfg)  # loads the data: errors surface before the progress bar

    progress = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("acc {task.fields[acc]}  loss {task.fields[loss]}  {task.fields[spr]} s/round"),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        disable=quiet,
    )
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
    s = meta["summary"]
    from rich.table import Table

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
        ("wall time", f"{time.perf_counter() - t0:.1f} s"),
        ("records", str(results / meta["run_id"])),
    ]
    for k, v in rows:
        table.add_row(k, v)
    console().print(table)


# ---------------------------------------------------------------- methods


@cli.command()
@click.option("--format", "fmt", type=click.Choice(["rich", "md"]), default="rich")
def methods(fmt):
    """List the methods, their parameters (names from the papers) and defaults.

    \b
    Example:
      fedbench train --preset fedlga-fmnist --method fedprox --set mu=0.1
    """
    import pandas as pd

    from fedbench.methods import describe_methods
    from fedbench.tables import console, rich_table

    df = pd.DataFrame(describe_methods())
    if fmt == "md":
        from tabulate import tabulate

        click.echo(tabulate(df, headers="keys", tablefmt="github", showindex=False))
    else:
        console().print(rich_table(df, title="methods (set parameters with --set NAME=VALUE)"))


# ---------------------------------------------------------------- presets


@cli.command()
def presets():
    """List the named paper settings and where they come from."""
    from rich.console import Console
    from rich.table import Table

    from fedbench.presets import PRESETS

    table = Table(title="presets")
    table.add_column("name")
    table.add_column("source")
    for name, (source, _) in PRESETS.items():
        table.add_row(name, source)
    Console().print(table)


# ---------------------------------------------------------------- data


@cli.group()
def data():
    """Datasets and partitions."""


@data.command("stats")
@click.argument("dataset", required=False)
@click.option("--preset", help="Take the dataset and partition of a preset.")
@click.option("--data-dir", help="Folder holding the dataset files.")
@click.option(
    "--set",
    "sets",
    multiple=True,
    metavar="KEY=VALUE",
    help="Partition fields: partition, N, P, dirichlet_alpha, xi, num_shards, data_seed, ...",
)
@click.option("--format", "fmt", type=click.Choice(["rich", "md"]), default="rich")
def data_stats(dataset, preset, data_dir, sets, fmt):
    """Per-device statistics of a dataset's split, like FedProx's Table 1.

    \b
    Examples:
      fedbench data stats --preset fedprox-mnist
      fedbench data stats mnist --set partition=pclass --set N=50 --set P=2
      fedbench data stats cifar10 --set partition=exdir --set N=500 --set P=1 \\
          --set dirichlet_alpha=10 --format md
    """
    import pandas as pd

    from fedbench.config import apply_overrides, parse_set
    from fedbench.data import load_arrays
    from fedbench.data.partition import partition_stats
    from fedbench.tables import console, rich_table

    overrides = parse_set(sets)
    if dataset:
        overrides["dataset"] = dataset
    if data_dir:
        overrides["data_dir"] = data_dir
    from fedbench.presets import get_preset

    cfg = apply_overrides(get_preset(preset or "default"), overrides).validate_data()
    _, train_y, _, test_y, parts, num_classes, info, _ = load_arrays(cfg)
    st = partition_stats(train_y, parts)
    df = pd.DataFrame(
        [
            {
                "dataset": cfg.dataset,
                "devices": st["devices"],
                "samples": st["samples"],
                "mean/device": round(st["mean_per_device"], 1),
                "stdev/device": round(st["std_per_device"], 1),
                "min": st["min_per_device"],
                "max": st["max_per_device"],
                "classes/device": round(st["classes_per_device_mean"], 2),
                "test samples": len(test_y),
            }
        ]
    )
    if fmt == "md":
        from tabulate import tabulate

        click.echo(f"{info['description']}\n")
        click.echo(tabulate(df, headers="keys", tablefmt="github", showindex=False))
    else:
        console().print(rich_table(df, title=info["description"]))


# ---------------------------------------------------------------- table


@cli.group()
def table():
    """Tables from results (terminal, or md/csv/latex files under tables/)."""


@table.command("summary")
@click.option("--results", default="results", show_default=True, type=click.Path())
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["rich", "md", "csv", "latex"]),
    default="rich",
    show_default=True,
)
@click.option(
    "--out",
    default="tables",
    show_default=True,
    type=click.Path(),
    help="Folder for md/csv/latex files.",
)
@click.option(
    "--on-error",
    type=click.Choice(["fail", "skip"]),
    default="fail",
    show_default=True,
    help="What to do with a run whose files are corrupt.",
)
def table_summary(results, fmt, out, on_error):
    """Per-run summary: best accuracy, rounds and seconds to target, s/round.

    \b
    Examples:
      fedbench table summary
      fedbench table summary --results results --format md   # writes tables/summary.md
    """
    from rich.console import Console

    from fedbench.results import load_summaries
    from fedbench.tables import SUMMARY_COLUMNS, console, header_lines, rich_table, write_table

    df, problems = load_summaries(Path(results), on_error=on_error)
    err = Console(stderr=True)
    for p in problems:
        err.print(f"[yellow]skipped:[/] {p}")
    if df.empty:
        raise FedbenchError(f"no readable runs in {results}; run fedbench train first")
    df = df[SUMMARY_COLUMNS].sort_values(["dataset", "method", "method_params", "seed"])
    if fmt == "rich":
        console().print(rich_table(df, title=f"runs in {results}"))
        return
    cmd = (
        "fedbench table summary " + " ".join(sys.argv[3:])
        if len(sys.argv) > 3
        else "fedbench table summary"
    )
    path = write_table(df, "summary", fmt, Path(out), header_lines(cmd))
    click.echo(f"wrote {path}")


# ---------------------------------------------------------------- plot


@cli.group()
def plot():
    """Figures from results (PNG and PDF)."""


@plot.command("curves")
@click.option("--results", default="results", show_default=True, type=click.Path())
@click.option(
    "--metric",
    default="test_acc",
    show_default=True,
    help="test_acc, test_loss, train_loss or local_loss.",
)
@click.option(
    "--out",
    default="tables/curves",
    show_default=True,
    type=click.Path(),
    help="Output path without extension.",
)
def plot_curves_cmd(results, metric, out):
    """Learning curves, one line per run.

    \b
    Example:
      fedbench plot curves --results results --metric test_acc --out tables/curves
    """
    from fedbench.plots import plot_curves

    for p in plot_curves(Path(results), Path(out), metric):
        click.echo(f"wrote {p}")


def main() -> None:
    cli(obj={})


if __name__ == "__main__":
    main()
