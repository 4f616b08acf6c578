"""The `fedbench` command line: train, table, plot, presets."""

from __future__ import annotations

import time
from pathlib import Path

import click

from fedbench.errors import FedbenchError


def escape(text: str) -> str:
    """Text for rich's markup (paths and messages may hold [brackets])."""
    from rich.markup import escape as rich_escape

    return rich_escape(str(text))


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
        except BrokenPipeError:  # output piped into `head` and the like: not an error
            import os
            import sys

            sys.stderr = open(os.devnull, "w")  # noqa: SIM115 -- python flushes it at exit
            raise click.exceptions.Exit(0) from None
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
      fedbench sweep --table tau --dataset fmnist     # the runs Table VI needs, resumable
      fedbench table tau --dataset fmnist             # ours vs the paper's
      fedbench plot tau --dataset fmnist
      fedbench table summary --format md
      fedbench check --quick
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
    from fedbench.data import load_arrays, split_stats
    from fedbench.tables import console, rich_table

    overrides = parse_set(sets)
    if dataset:
        overrides["dataset"] = dataset
    if data_dir:
        overrides["data_dir"] = data_dir
    from fedbench.presets import get_preset

    cfg = apply_overrides(get_preset(preset or "default"), overrides).validate_data()
    _, train_y, _, test_y, parts, num_classes, info, _ = load_arrays(cfg)
    st = split_stats(train_y, parts, info)
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


# ---------------------------------------------------------------- shared options


def selection_options(f):
    """--dataset, --seeds, --preset, --set, --results: which runs a paper table refers to."""
    f = click.option(
        "--results",
        default="results",
        show_default=True,
        type=click.Path(),
        help="Results folder.",
    )(f)
    f = click.option(
        "--set",
        "sets",
        multiple=True,
        metavar="KEY=VALUE",
        help="Change a field of every run (e.g. rounds=30 for a quick look); repeatable.",
    )(f)
    f = click.option(
        "--preset", help="Run the table's cells on this preset instead of the paper's."
    )(f)
    f = click.option("--seeds", help="Comma-separated seeds (default: the table's).")(f)
    f = click.option("--dataset", help="One dataset of the table (default: all of them).")(f)
    return f


def make_selection(dataset, seeds, preset, sets, results):
    from fedbench.config import parse_set
    from fedbench.sweep import parse_list
    from fedbench.tables import Selection

    seed_list = parse_list(seeds, "--seeds", int)
    return Selection(
        dataset=dataset,
        seeds=tuple(seed_list) if seed_list is not None else None,
        preset=preset,
        sets=parse_set(sets),
        results=str(results),
    )


def list_specs(figures: bool) -> None:
    from rich.table import Table

    from fedbench.paper_tables import TABLES
    from fedbench.tables import console

    t = Table(title="figures (fedbench plot NAME)" if figures else "tables (fedbench table NAME)")
    for col in ("name", "source", "datasets", "what"):
        t.add_column(col)
    t.add_row(
        "curves" if figures else "summary",
        "–",
        "–",
        "every run's learning curve" if figures else "one line per run",
    )
    for name, spec in TABLES.items():
        if (figures and spec.plot is not None) or (not figures and spec.is_table):
            t.add_row(name, spec.source, ", ".join(spec.datasets), spec.title)
    console().print(t)


# ---------------------------------------------------------------- table


@cli.command()
@click.argument("name", required=False)
@selection_options
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
    help="A run with a corrupt file: stop with its name, or skip it (its cell shows missing).",
)
@click.option(
    "--spread",
    type=click.Choice(["minmax", "ci95"]),
    help="Spread over seeds: min–max or 95% CI (default: the table's, as its paper).",
)
def table(name, dataset, seeds, preset, sets, results, fmt, out, on_error, spread):
    """A paper table from results: ours, the paper's and the difference per cell.

    NAME is a paper table (runtime, tau, best-acc, epochs, rho, devices, sampled,
    imbalance, sfl, quadratic, r90, smoothness, temperature, stragglers, dissimilarity,
    adaptive-mu, data-stats), `summary` (one line per run) or `report` (OUT/REPORT.md: every
    table with runs, its claims' verdicts, scale and commands). Without NAME: the list.
    Cells whose runs are missing say so, with the `fedbench sweep` command that fills them.

    \b
    Examples:
      fedbench table tau --dataset fmnist
      fedbench table tau --dataset fmnist --format md     # writes tables/tau_fmnist.md
      fedbench table stragglers --preset default --set rounds=20 --seeds 0
      fedbench table summary --format csv
      fedbench table report                             # writes tables/REPORT.md
    """
    if name is None:
        list_specs(figures=False)
        return
    if name == "summary":
        _table_summary(results, fmt, out, on_error)
        return
    if name == "report":
        _table_report(results, out, on_error)
        return
    from rich.console import Console

    from fedbench.paper_tables import get_table
    from fedbench.tables import (
        claim_lines,
        claims_summary,
        console,
        evaluate_table,
        header_lines,
        render_paper_table,
        rich_paper_table,
        table_file_name,
        table_notes,
    )

    spec = get_table(name)
    sel = make_selection(dataset, seeds, preset, sets, results)
    result = evaluate_table(spec, results, sel, on_error=on_error, spread=spread)
    err = Console(stderr=True)
    for p in result.problems:
        err.print(f"[yellow]skipped:[/] {escape(p)}", highlight=False, soft_wrap=True)
    if fmt == "rich":
        c = console()
        c.print(rich_paper_table(result))
        for line in table_notes(result):
            if not line.startswith("skipped: "):
                c.print(line, highlight=False, markup=False, soft_wrap=True)
        for line in claim_lines(result):
            c.print(line, highlight=False, markup=False, soft_wrap=True)
        return
    opts = " ".join(x for x in (f"--dataset {dataset}" if dataset else "", sel.options()) if x)
    cmd = f"fedbench table {name} {opts} --format {fmt}".replace("  ", " ")
    device = ", ".join(sorted(result.devices)) or "no runs"
    ext = {"md": "md", "csv": "csv", "latex": "tex"}[fmt]
    path = Path(out) / f"{table_file_name(result)}.{ext}"
    path.parent.mkdir(parents=True, exist_ok=True)
    header = [*header_lines(cmd, device), result.compute_line()]
    path.write_text(render_paper_table(result, fmt, header))
    click.echo(f"wrote {path}")
    for line in result.fill_commands():
        click.echo(f"missing runs; fill them with: {line}")
    if result.claims:
        click.echo(claims_summary(result))


def _table_report(results, out, on_error):
    """OUT/REPORT.md: every paper table with runs in RESULTS, its verdicts, scale, commands."""
    from fedbench.report import write_report
    from fedbench.tables import claims_summary

    path, entries = write_report(results, out, on_error)
    for e in entries:
        ds = e.result.selection.dataset or "all datasets"
        click.echo(f"{e.name} ({ds}): {claims_summary(e.result)}")
    click.echo(f"wrote {path}")


def _table_summary(results, fmt, out, on_error):
    from rich.console import Console

    from fedbench.results import load_summaries
    from fedbench.tables import SUMMARY_COLUMNS, console, header_lines, rich_table, write_table

    df, problems = load_summaries(Path(results), on_error=on_error)
    err = Console(stderr=True)
    for p in problems:
        err.print(f"[yellow]skipped:[/] {escape(p)}", highlight=False, soft_wrap=True)
    if df.empty:
        raise FedbenchError(f"no readable runs in {results}; run fedbench train first")
    df = df[SUMMARY_COLUMNS].sort_values(["dataset", "method", "method_params", "seed"])
    if fmt == "rich":
        console().print(rich_table(df, title=f"runs in {results}"))
        return
    cmd = "fedbench table summary" + (f" --results {results}" if results != "results" else "")
    path = write_table(df, "summary", fmt, Path(out), header_lines(cmd + f" --format {fmt}"))
    click.echo(f"wrote {path}")


# ---------------------------------------------------------------- plot


@cli.command()
@click.argument("name", required=False)
@selection_options
@click.option(
    "--out",
    type=click.Path(),
    help="Folder for the PNG and PDF (default tables/; for `curves`: the file path without "
    "extension, default tables/curves).",
)
@click.option(
    "--metric",
    default="test_acc",
    show_default=True,
    help="For `curves`: test_acc, test_loss, train_loss or local_loss.",
)
@click.option(
    "--on-error",
    type=click.Choice(["fail", "skip"]),
    default="fail",
    show_default=True,
    help="A run with a corrupt file: stop with its name, or leave it out.",
)
def plot(name, dataset, seeds, preset, sets, results, out, metric, on_error):
    """Figures like the papers' (PNG and PDF): learning curves with min–max bands over seeds,
    best-accuracy bars, rounds to target against a parameter, SFL's quadratic panels,
    FedSoftMax's participation heat map, FedProx's loss and dissimilarity panels.

    NAME is a paper table or figure (see `fedbench plot` without NAME), or `curves`
    (one line per run in results/).

    \b
    Examples:
      fedbench plot tau --dataset fmnist            # tables/tau_fmnist.png and .pdf
      fedbench plot stragglers --dataset synthetic-1-1 --out figures
      fedbench plot participation --dataset mnist
      fedbench plot curves --metric test_acc --out tables/curves
    """
    if name is None:
        list_specs(figures=True)
        return
    if name == "curves":
        from fedbench.plots import plot_curves

        for p in plot_curves(Path(results), Path(out or "tables/curves"), metric):
            click.echo(f"wrote {p}")
        return
    from fedbench.paper_tables import get_table
    from fedbench.plots import plot_spec
    from fedbench.tables import evaluate_table, table_file_name

    spec = get_table(name, figure=True)
    sel = make_selection(dataset, seeds, preset, sets, results)
    result = evaluate_table(spec, results, sel, on_error=on_error)
    paths = plot_spec(result, Path(out or "tables") / table_file_name(result))
    for p in paths:
        click.echo(f"wrote {p}")
    for line in result.fill_commands():
        click.echo(f"missing runs; fill them with: {line}")


# ---------------------------------------------------------------- sweep


@cli.command()
@click.option("--table", "table_name", help="Run what this paper table needs (see fedbench table).")
@click.option("--file", "sweep_file", type=click.Path(), help="TOML sweep file (see README).")
@click.option("--preset", help="Named paper setting the grid starts from.")
@click.option("--config", "config_file", type=click.Path(), help="TOML file of config fields.")
@click.option("--methods", help="Comma-separated methods, e.g. fedavg,fedprox.")
@click.option("--dataset", help="Dataset (with --table: which of the table's datasets).")
@click.option("--seeds", help="Comma-separated seeds, e.g. 0,1,2.")
@click.option(
    "--grid",
    "grids",
    multiple=True,
    metavar="KEY=V1,V2",
    help="Vary a config field or method parameter over values; repeatable (all combinations).",
)
@click.option(
    "--set",
    "sets",
    multiple=True,
    metavar="KEY=VALUE",
    help="Fix a config field or method parameter for every run; repeatable.",
)
@click.option("--results", default="results", show_default=True, type=click.Path())
@click.option(
    "--jobs",
    "-j",
    type=int,
    default=1,
    show_default=True,
    help="Runs at once on this machine (each gets cores/jobs threads, its own GPU).",
)
@click.option("--threads", type=int, help="torch threads per run (default: cores / jobs).")
@click.option(
    "--executor",
    type=click.Choice(["local", "ray"]),
    default="local",
    show_default=True,
    help="local: this machine; ray: tasks on a Ray cluster.",
)
@click.option("--address", help="Ray cluster address: auto (default) or HOST:PORT.")
@click.option("--gpus-per-run", type=float, default=0, show_default=True, help="Ray num_gpus.")
@click.option("--cpus-per-run", type=float, default=1, show_default=True, help="Ray num_cpus.")
@click.option("--dry-run", is_flag=True, help="List the runs that would run, run nothing.")
@click.option("--quiet", is_flag=True, help="No progress display.")
def sweep(
    table_name,
    sweep_file,
    preset,
    config_file,
    methods,
    dataset,
    seeds,
    grids,
    sets,
    results,
    jobs,
    threads,
    executor,
    address,
    gpus_per_run,
    cpus_per_run,
    dry_run,
    quiet,
):
    """Run a grid of configs, skipping the ones results/ already holds (resumable: start it
    again after a crash or kill; several sweeps may share one results folder).

    \b
    Examples:
      fedbench sweep --methods fedavg,fedprox --dataset fmnist --seeds 0,1,2 \\
                     --grid rho=0.1,0.3,0.5 --grid K=5,10,25
      fedbench sweep --table tau --dataset fmnist          # what `fedbench table tau` needs
      fedbench sweep --file sweep.toml --jobs 4
      fedbench sweep --table r90 --executor ray --address auto --gpus-per-run 0.25
    """
    from rich.console import Console

    from fedbench.config import parse_set
    from fedbench.sweep import (
        Plan,
        grid_configs,
        load_sweep_file,
        make_executor,
        parse_grid,
        parse_list,
        plan_sweep,
        run_sweep,
        summary_line,
        summary_table,
        table_configs,
    )
    from fedbench.tables import console

    executor_obj = make_executor(executor, jobs, threads, address, gpus_per_run, cpus_per_run)
    unavailable: dict[str, int] = {}
    if table_name:
        if sweep_file or methods or grids or config_file:
            raise FedbenchError(
                "--table chooses the runs itself; use --dataset, --seeds, --preset and --set "
                "with it, not --methods, --grid, --config or --file"
            )
        from fedbench.paper_tables import get_table

        spec = get_table(table_name, figure=True)
        sel = make_selection(dataset, seeds, preset, sets, results)
        configs, unavailable = table_configs(spec, sel)
        label = f"{table_name}" + (f" ({dataset})" if dataset else "")
    else:
        kw = load_sweep_file(sweep_file) if sweep_file else {}
        grid = {**kw.get("grid", {}), **parse_grid(grids)}
        configs = grid_configs(
            preset=preset or kw.get("preset"),
            config_file=config_file or kw.get("config_file"),
            methods=parse_list(methods, "--methods") or kw.get("methods"),
            dataset=dataset or kw.get("dataset"),
            seeds=parse_list(seeds, "--seeds", int) or kw.get("seeds"),
            grid=grid,
            sets={**kw.get("sets", {}), **parse_set(sets)},
            method_grids=kw.get("method_grids"),
        )
        label = "sweep"
    plan: Plan = plan_sweep(configs, Path(results))
    plan.unavailable = unavailable
    err = Console(stderr=True)
    for reason, n in unavailable.items():
        err.print(
            f"[yellow]unavailable ({n} cells):[/] {escape(reason)}", highlight=False, soft_wrap=True
        )
    for p in plan.problems:
        err.print(f"[yellow]rerunning:[/] {escape(p)}", highlight=False, soft_wrap=True)
    click.echo(
        f"{label}: {plan.total} runs; {len(plan.done)} already done, {len(plan.todo)} to run"
        + (f", {len(plan.busy)} running elsewhere" if plan.busy else "")
        + f" ({executor_obj.name}"
        + (f", {jobs} at once" if executor_obj.name == "pool" else "")
        + f") -> {results}"
    )
    if dry_run:
        for cfg in plan.todo:
            click.echo(f"  {cfg.run_id()}  {cfg.method} {cfg.method_params or ''}")
        return
    report = run_sweep(plan, results, executor_obj, quiet=quiet, label=label)
    if report.outcomes:
        console().print(summary_table(report))
    click.echo(summary_line(report))
    if report.failed:
        first = report.failed[0]
        raise OneLineError(
            f"{len(report.failed)} run(s) failed, first {first.run_id}: {first.error} "
            "(recorded in its run.json; the next sweep retries it)",
            1,
        )


# ---------------------------------------------------------------- check


@cli.command()
@click.option("--quick", is_flag=True, help="The CI subset (seconds): synthetic checks only.")
@click.option("--only", help="Comma-separated check names (see the table it prints).")
@click.option(
    "--results", type=click.Path(), help="Read the check runs from here instead of rerunning."
)
@click.option(
    "--reference", default="results/reference/check.json", show_default=True, type=click.Path()
)
@click.option("--update", is_flag=True, help="Write the measured numbers as the new reference.")
@click.option(
    "--acc-tol",
    type=float,
    default=0.02,
    show_default=True,
    help="Allowed absolute change of best/final test accuracy.",
)
@click.option(
    "--rounds-tol",
    type=float,
    default=0.10,
    show_default=True,
    help="Allowed relative increase of rounds to target (at least one round).",
)
@click.option(
    "--speed-factor",
    type=float,
    default=3.0,
    show_default=True,
    help="Allowed slow-down of s/round (same device kind only).",
)
@click.option("--no-timing", is_flag=True, help="Do not compare s/round.")
@click.option("--threads", type=int, default=1, show_default=True, help="torch threads.")
def check(
    quick, only, results, reference, update, acc_tol, rounds_tol, speed_factor, no_timing, threads
):
    """Regression check: rerun a small fixed set of configs and compare them with the stored
    reference; exits 1 with a table of what regressed.

    \b
    Examples:
      fedbench check --quick                   # CI: two synthetic configs, seconds
      fedbench check                           # all checks (Fashion-MNIST one if installed)
      fedbench check --update                  # accept the current numbers as the reference
      fedbench check --results runs/ --no-timing
    """
    from fedbench.check import (
        CHECKS,
        QUICK,
        Tolerances,
        check_configs,
        compare,
        describe,
        load_reference,
        measure,
        regressions,
        rows_table,
        write_reference,
    )
    from fedbench.sweep import parse_list
    from fedbench.tables import console

    names = parse_list(only, "--only") or list(QUICK if quick else CHECKS)
    unknown = [n for n in names if n not in CHECKS]
    if unknown:
        raise FedbenchError(f"unknown check {unknown[0]!r}; choose from: {', '.join(CHECKS)}")
    configs = check_configs(names)
    ref_path = Path(reference)
    if not update:
        ref = load_reference(ref_path)  # before running anything
    measured = measure(configs, Path(results) if results else None, threads)
    if update:
        write_reference(ref_path, measured, configs)
        ref = load_reference(ref_path)
    rows = compare(measured, ref, Tolerances(acc_tol, rounds_tol, speed_factor, not no_timing))
    console().print(rows_table(rows))
    bad = regressions(rows)
    if update:
        click.echo(f"wrote {ref_path}")
    elif bad:
        raise OneLineError(
            f"{len(bad)} regression(s): "
            + "; ".join(describe(r) for r in bad[:3])
            + (" ..." if len(bad) > 3 else ""),
            1,
        )
    else:
        click.echo(f"ok: {len(names)} check(s) within tolerance of {ref_path}")


def main() -> None:
    cli(obj={})


if __name__ == "__main__":
    main()
