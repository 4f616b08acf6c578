"""The `fedbench` command line: train, table, plot, presets."""

from __future__ import annotations

import math
import time
from pathlib import Path

import click

from fedbench.errors import FedbenchError
from fedbench.identity import run_id


def escape(text: str) -> str:
    """Text for rich's markup (paths and messages may hold [brackets])."""
    from rich.markup import escape as rich_escape

    return rich_escape(str(text))


class FedbenchGroup(click.Group):
    """Turns every user mistake (a FedbenchError, a bad option, a file the system cannot read
    or write) into one line, exit 2, and any other failure into one line, exit 1, unless
    --debug asks for the traceback."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:  # the group's own options (fedbench --nosuch)
            return super().parse_args(ctx, args)
        except HELP_ERRORS:
            raise
        except click.UsageError as e:
            raise _one_line_usage(e) from None

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except FedbenchError as e:
            raise OneLineError(str(e), 2) from None
        except HELP_ERRORS:
            raise
        except click.UsageError as e:
            raise _one_line_usage(e) from None
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
            if isinstance(e, OSError) and e.filename:  # the system refused one of the user's files
                raise OneLineError(f"{e.filename}: {e.strerror or e}", 2) from None
            msg = f"{type(e).__name__}: {e}".strip().splitlines()[0]
            raise OneLineError(f"{msg} (rerun with --debug for the traceback)", 1) from None


# a group run without a command prints its help: no mistake to put on one line
HELP_ERRORS = getattr(click.exceptions, "NoArgsIsHelpError", ())


def _one_line_usage(e: click.UsageError) -> OneLineError:
    """click's usage error (usage, hint and error on three lines) as one line."""
    where = e.ctx.command_path if e.ctx else "fedbench"
    return OneLineError(f"{e.format_message()} (see {where} --help)", 2)


class OneLineError(click.ClickException):
    def __init__(self, message: str, code: int):
        super().__init__(" ".join(str(message).splitlines()))  # one line, whatever it holds
        self.exit_code = code


def check_folder(path: str | Path | None, option: str, claims: bool = False) -> None:
    """A folder option (made if missing): neither it nor a folder above it may be a file;
    with claims, its .claims folder (run claims) must not be a file either."""
    if path is None:
        return
    p = Path(path)
    for q in (p, *p.parents):
        if q.exists() and not q.is_dir():
            above = "" if q == p else f" (it is inside {q})"
            raise FedbenchError(
                f"{option} {path} cannot be a folder: {q} is a file{above}; give a folder"
            )
    claims_dir = p / ".claims"
    if claims and claims_dir.exists() and not claims_dir.is_dir():
        raise FedbenchError(
            f"{claims_dir} is a file; fedbench keeps run claims in that folder: move the file away"
        )


def check_seeds(seeds) -> None:
    from fedbench.config import check_value

    for s in seeds or ():
        check_value("seed", s)


THREADS = click.IntRange(min=1)


class NonNegative(click.FloatRange):
    """A finite number >= 0 (click's FloatRange lets nan and inf through)."""

    def __init__(self):
        super().__init__(min=0)

    def convert(self, value, param, ctx):
        rv = super().convert(value, param, ctx)
        if not math.isfinite(rv):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return rv


FINITE_NON_NEGATIVE = NonNegative()


def command_line(sets, flags: dict, options: dict | None = None) -> dict:
    """--set items and the fields that flags (--rounds, --seed, ...) set, as one source: a
    field given twice on the command line, even with one value, is an error (one_each).
    options: a field's flag where it is not --FIELD (e.g. seed: --seeds)."""
    from fedbench.config import one_each, parse_set

    items = [(k, v, f"--set {k}={v}") for k, v in parse_set(sets).items()]
    for key, val in flags.items():
        if val is not None:
            flag = (options or {}).get(key, f"--{key.replace('_', '-')}")
            items.append((key, str(val), f"{flag} {val}"))
    return one_each(items)


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
@click.option(
    "--threads",
    type=THREADS,
    help="torch CPU threads (default: 1 for small models, else all cores).",
)
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
    from fedbench.assembly import build_config

    flags = {
        "method": method,
        "rounds": rounds,
        "seed": seed,
        "data_dir": data_dir,
        "device": device,
    }
    overrides = command_line(sets, flags)
    cfg = build_config(preset, config_file, overrides)
    check_folder(results, "--results", claims=True)
    from fedbench import threads as thread_policy

    thread_policy.configure(threads)
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

    from fedbench.data import data_fingerprint
    from fedbench.engine import Engine
    from fedbench.runner import check_not_done
    from fedbench.runner import train as run_train
    from fedbench.tables import console, fmt_cell

    fp = data_fingerprint(cfg, compute=False)  # known if this data was loaded before
    if fp is not None:
        check_not_done(cfg, results, overwrite, fp)  # before loading anything
    engine = Engine(cfg)  # loads the data: errors surface before the progress bar
    check_not_done(cfg, results, overwrite, engine.data.info.get("fingerprint"))

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

    from fedbench.assembly import apply_overrides
    from fedbench.data import load_arrays, split_stats
    from fedbench.presets import get_preset
    from fedbench.tables import console, rich_table

    overrides = command_line(sets, {"dataset": dataset, "data_dir": data_dir})

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


@data.command("get")
@click.argument("names", nargs=-1, required=True, metavar="NAME...")
@click.option(
    "--data-dir", help="Folder to put the datasets in (default: the cache, ~/.cache/fedbench)."
)
@click.option(
    "--url",
    help="Folder URL holding the dataset's files (a mirror); default: the publishers' URLs, "
    "or $FEDBENCH_MIRROR/NAME/.",
)
@click.option("--quiet", is_flag=True, help="No progress bar.")
def data_get(names, data_dir, url, quiet):
    """Download, verify (published md5) and unpack datasets where fedbench finds them.

    NAME: mnist, fmnist, cifar10, cifar100, cinic10; for femnist, shakespeare and sent140
    (built by LEAF's scripts) it prints the steps. An interrupted download resumes on rerun.

    \b
    Examples:
      fedbench data get mnist cifar10
      fedbench data get cinic10 --data-dir /data/fl
      fedbench data get cifar10 --url http://mirror.example/cifar10/
    """
    from fedbench.data import download
    from fedbench.data.locate import cache_root

    unknown = [n for n in names if n not in download.datasets()]
    if unknown:
        raise FedbenchError(
            f"unknown dataset {unknown[0]!r}; choose from: {', '.join(download.datasets())}"
        )
    root = Path(data_dir) if data_dir else cache_root()
    for name in names:
        if name in download.LEAF_STEPS:
            click.echo(download.leaf_steps(name, root))
            continue
        folder, fetched = download.fetch(name, root, url, quiet)
        if fetched:
            click.echo(f"{name}: downloaded, md5 verified, in {folder}")
        else:
            rec = download.provenance(folder)
            how = f"verified {rec.get('verified')}" if isinstance(rec, dict) else "not by fedbench"
            click.echo(f"{name}: already in {folder} ({how}); nothing downloaded")


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
    """The runs a paper table refers to; every key, value, seed and preset checked here, so
    that a typo stops with one line instead of leaving every cell n/a."""
    from fedbench.assembly import apply_overrides
    from fedbench.config import RunConfig
    from fedbench.presets import get_preset
    from fedbench.sweep import parse_list
    from fedbench.tables import Selection

    seed_list = parse_list(seeds, "--seeds", int)
    check_seeds(seed_list)
    if preset:
        get_preset(preset)
    overrides = command_line(sets, {})
    apply_overrides(RunConfig(), overrides)  # each key known, each value valid on its own
    check_folder(results, "--results")
    return Selection(
        dataset=dataset,
        seeds=tuple(seed_list) if seed_list is not None else None,
        preset=preset,
        sets=overrides,
        results=str(results),
    )


def calibrated_option(f):
    return click.option(
        "--calibrated",
        is_flag=True,
        help="At the value `fedbench calibrate` fitted for this table and dataset.",
    )(f)


def apply_calibration(spec, sel, calibrated: bool):
    """(selection, header line): unchanged without --calibrated."""
    if not calibrated:
        return sel, None
    from fedbench.calibrate import calibrated_selection

    return calibrated_selection(spec, sel)


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
@click.option(
    "--strict",
    is_flag=True,
    help="Refuse runs written by another fedbench version (default: use them, with a note).",
)
@calibrated_option
def table(
    name, dataset, seeds, preset, sets, results, fmt, out, on_error, spread, strict, calibrated
):
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
    if fmt != "rich":
        check_folder(out, "--out")
    if name == "summary":
        check_folder(results, "--results")
        _table_summary(results, fmt, out, on_error, strict)
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
    fit_sel, fit_line = apply_calibration(spec, sel, calibrated)
    result = evaluate_table(spec, results, fit_sel, on_error=on_error, spread=spread, strict=strict)
    err = Console(stderr=True)
    for p in result.problems:
        err.print(f"[yellow]skipped:[/] {escape(p)}", highlight=False, soft_wrap=True)
    if fmt == "rich":
        c = console()
        if fit_line:
            c.print(fit_line, highlight=False, markup=False, soft_wrap=True)
        c.print(rich_paper_table(result))
        for line in table_notes(result):
            if not line.startswith("skipped: "):
                c.print(line, highlight=False, markup=False, soft_wrap=True)
        for line in claim_lines(result):
            c.print(line, highlight=False, markup=False, soft_wrap=True)
        return
    opts = " ".join(x for x in (f"--dataset {dataset}" if dataset else "", sel.options()) if x)
    cmd = f"fedbench table {name} {opts} --format {fmt}".replace("  ", " ")
    cmd += " --calibrated" if calibrated else ""
    device = ", ".join(sorted(result.devices)) or "no runs"
    ext = {"md": "md", "csv": "csv", "latex": "tex"}[fmt]
    path = Path(out) / f"{table_file_name(result)}{'_calibrated' if calibrated else ''}.{ext}"
    path.parent.mkdir(parents=True, exist_ok=True)
    header = [*header_lines(cmd, device), result.compute_line(), *([fit_line] if fit_line else [])]
    path.write_text(render_paper_table(result, fmt, header))
    click.echo(f"wrote {path}")
    for line in result.fill_commands():
        click.echo(f"missing runs; fill them with: {line}")
    for line in result.notes:
        click.echo(line)
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


def _table_summary(results, fmt, out, on_error, strict=False):
    from rich.console import Console

    from fedbench.results import RunIndex, summary_frame
    from fedbench.tables import SUMMARY_COLUMNS, console, header_lines, rich_table, write_table

    index = RunIndex(Path(results), on_error=on_error, strict=strict)
    df = summary_frame(index)
    err = Console(stderr=True)
    for p in index.problems:
        err.print(f"[yellow]skipped:[/] {escape(p)}", highlight=False, soft_wrap=True)
    if df.empty:
        raise FedbenchError(f"no readable runs in {results}; run fedbench train first")
    df = df[SUMMARY_COLUMNS].sort_values(["dataset", "method", "method_params", "seed"])
    if fmt == "rich":
        console().print(rich_table(df, title=f"runs in {results}"))
    else:
        cmd = "fedbench table summary" + (f" --results {results}" if results != "results" else "")
        path = write_table(df, "summary", fmt, Path(out), header_lines(cmd + f" --format {fmt}"))
        click.echo(f"wrote {path}")
    for line in index.notes:
        click.echo(line)


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
@click.option(
    "--strict",
    is_flag=True,
    help="Refuse runs written by another fedbench version (default: use them, with a note).",
)
@calibrated_option
def plot(name, dataset, seeds, preset, sets, results, out, metric, on_error, strict, calibrated):
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
    if name == "curves":  # --out is a file name without extension
        check_folder(results, "--results")
        check_folder(Path(out or "tables/curves").parent, "--out's folder")
        from fedbench.plots import plot_curves

        paths, notes = plot_curves(
            Path(results), Path(out or "tables/curves"), metric, on_error, strict
        )
        for p in paths:
            click.echo(f"wrote {p}")
        for line in notes:
            click.echo(line)
        return
    from fedbench.paper_tables import get_table
    from fedbench.plots import plot_spec
    from fedbench.tables import evaluate_table, table_file_name

    check_folder(out or "tables", "--out")
    spec = get_table(name, figure=True)
    sel = make_selection(dataset, seeds, preset, sets, results)
    sel, fit_line = apply_calibration(spec, sel, calibrated)
    if fit_line:
        click.echo(fit_line)
    result = evaluate_table(spec, results, sel, on_error=on_error, strict=strict)
    stem = table_file_name(result) + ("_calibrated" if calibrated else "")
    paths = plot_spec(result, Path(out or "tables") / stem)
    for p in paths:
        click.echo(f"wrote {p}")
    for line in [f"skipped: {p}" for p in result.problems] + result.notes:
        click.echo(line)
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
@click.option(
    "--threads",
    type=THREADS,
    help="torch threads per run (default: 1 for small models, else cores / jobs).",
)
@click.option(
    "--executor",
    type=click.Choice(["local", "ray"]),
    default="local",
    show_default=True,
    help="local: this machine; ray: tasks on a Ray cluster.",
)
@click.option("--address", help="Ray cluster address: auto (default) or HOST:PORT.")
@click.option(
    "--gpus-per-run", type=FINITE_NON_NEGATIVE, default=0, show_default=True, help="Ray num_gpus."
)
@click.option(
    "--cpus-per-run", type=FINITE_NON_NEGATIVE, default=1, show_default=True, help="Ray num_cpus."
)
@click.option("--dry-run", is_flag=True, help="List the runs that would run, run nothing.")
@click.option("--quiet", is_flag=True, help="No progress display.")
@click.option(
    "--on-error",
    type=click.Choice(["fail", "skip"]),
    default="skip",
    show_default=True,
    help="A run with a damaged file: rerun it (skip its record), or stop with its name.",
)
@click.option(
    "--strict",
    is_flag=True,
    help="Refuse runs written by another fedbench version (default: use them, with a note).",
)
@calibrated_option
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
    on_error,
    strict,
    calibrated,
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

    from fedbench.sweep import (
        Plan,
        grid_configs,
        load_sweep_file,
        make_executor,
        plan_sweep,
        run_sweep,
        summary_line,
        summary_table,
        table_configs,
    )
    from fedbench.tables import console

    executor_obj = make_executor(executor, jobs, threads, address, gpus_per_run, cpus_per_run)
    check_folder(results, "--results", claims=True)
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
        sel, fit_line = apply_calibration(spec, sel, calibrated)
        if fit_line:
            click.echo(fit_line)
        configs, unavailable = table_configs(spec, sel)
        label = f"{table_name}" + (f" ({dataset})" if dataset else "")
    else:
        if calibrated:
            raise FedbenchError("--calibrated goes with --table (the fit belongs to a table)")
        kw = load_sweep_file(sweep_file) if sweep_file else {}
        grid_args = sweep_grid_args(kw, sets, grids, dataset, seeds, methods)
        configs = grid_configs(
            preset=preset or kw.get("preset"),
            config_file=config_file or kw.get("config_file"),
            **grid_args,
        )
        label = "sweep"
    plan: Plan = plan_sweep(configs, Path(results), on_error=on_error, strict=strict)
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
            click.echo(f"  {run_id(cfg)}  {cfg.method} {cfg.method_params or ''}")
        for line in plan.notes:
            click.echo(line)
        return
    report = run_sweep(plan, results, executor_obj, quiet=quiet, label=label)
    if report.outcomes:
        console().print(summary_table(report))
    click.echo(summary_line(report))
    for line in plan.notes:
        click.echo(line)
    if report.failed:
        first = report.failed[0]
        raise OneLineError(
            f"{len(report.failed)} run(s) failed, first {first.run_id}: {first.error} "
            "(recorded in its run.json; the next sweep retries it)",
            1,
        )


def sweep_grid_args(kw: dict, sets, grids, dataset, seeds, methods) -> dict:
    """grid_configs' methods, dataset, seeds, grid, sets and method grids from a sweep file's
    values (kw) and the command line, which overrides them; then each field is fixed
    (--set, [set]), varied (--grid, [grid]) or listed (seeds, methods) once."""
    from fedbench.config import layer, one_each, parse_set
    from fedbench.sweep import parse_grid, parse_list

    cli_sets, cli_grid = parse_set(sets), parse_grid(grids)
    command_line(sets, {"dataset": dataset})
    grid = layer(kw.get("grid", {}), cli_grid)
    all_sets = layer(kw.get("sets", {}), cli_sets)
    seed_list = parse_list(seeds, "--seeds", int) or kw.get("seeds")
    check_seeds(seed_list)
    method_list = parse_list(methods, "--methods") or kw.get("methods")
    given = [
        (k, v, f"{'--set' if k in cli_sets else '[set]'} {k}={v}") for k, v in all_sets.items()
    ]
    given += [(k, v, f"{'--grid' if k in cli_grid else '[grid]'} {k}") for k, v in grid.items()]
    if seed_list:
        given.append(("seed", seed_list, "--seeds" if seeds else "the file's seeds"))
    if method_list:
        given.append(("method", method_list, "--methods" if methods else "the file's methods"))
    one_each(given)
    return {
        "methods": method_list,
        "dataset": dataset or kw.get("dataset"),
        "seeds": seed_list,
        "grid": grid,
        "sets": all_sets,
        "method_grids": kw.get("method_grids"),
    }


# ---------------------------------------------------------------- calibrate


@cli.command()
@click.option("--table", "table_name", required=True, help="The paper table (see fedbench table).")
@click.option("--anchor", required=True, help="The anchor cell's method or row, e.g. fedavg.")
@click.option("--param", default="lr", show_default=True, help="The parameter to fit (> 0).")
@click.option("--col", help="The anchor's column, where its row has several runs cells.")
@click.option("--target", type=float, help="The value to match (default: the paper's).")
@click.option("--start", type=float, help="First value tried (default: the anchor's own).")
@click.option("--step", type=float, default=10.0, show_default=True, help="Bracketing factor.")
@click.option(
    "--rtol",
    type=float,
    default=0.05,
    show_default=True,
    help="Stop when the bracket is within a factor 1 + rtol.",
)
@click.option(
    "--tol", type=float, default=0.0, show_default=True, help="Stop at |metric - target| <= tol."
)
@click.option("--max-points", type=int, default=12, show_default=True, help="Values tried, most.")
@click.option(
    "--direction",
    type=click.Choice(["auto", "up", "down"]),
    default="auto",
    show_default=True,
    help="Which way to bracket from the start value.",
)
@selection_options
@click.option("--jobs", "-j", type=int, default=1, show_default=True, help="Seeds run at once.")
@click.option("--threads", type=int, help="torch CPU threads per run.")
@click.option("--quiet", is_flag=True, help="No progress display.")
def calibrate(
    table_name,
    anchor,
    param,
    col,
    target,
    start,
    step,
    rtol,
    tol,
    max_points,
    direction,
    dataset,
    seeds,
    preset,
    sets,
    results,
    jobs,
    threads,
    quiet,
):
    """Fit a parameter the paper leaves unstated so that one anchor cell matches the paper:
    log-scale bracket, then bisection; every point is normal runs in results/ (resumable,
    reused). Saves results/calibration/TABLE-DATASET.json for sweep/table/plot --calibrated.

    \b
    Examples:
      fedbench calibrate --table tau --dataset fmnist --anchor fedavg --param lr --threads 1
      fedbench sweep --table tau --dataset fmnist --calibrated
      fedbench table tau --dataset fmnist --calibrated
    """
    from fedbench.calibrate import calibrate as fit_param
    from fedbench.paper_tables import get_table
    from fedbench.sweep import make_executor

    spec = get_table(table_name)
    sel = make_selection(dataset, seeds, preset, sets, results)
    fit = fit_param(
        spec,
        sel,
        anchor,
        param,
        col=col,
        target=target,
        start=start,
        executor=make_executor("local", jobs, threads),
        quiet=quiet,
        step=step,
        rtol=rtol,
        tol=tol,
        max_points=max_points,
        direction=direction,
    )
    for p in fit["points"]:
        seeds_txt = ", ".join(f"{v:g}" for v in p["per_seed"])
        click.echo(f"  {param} = {p['value']:<10g} -> {p['mean']:g} ({seeds_txt})")
    a = fit["anchor"]
    click.echo(
        f"{param} = {fit['value']:g}: {a['row']} / {a['col']} = {fit['achieved']:g} "
        f"(target {fit['target']:g}, {fit['target_source']}); {fit['runs_spent']} runs over "
        f"{len(fit['points'])} values; wrote {fit['path']}"
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
    type=FINITE_NON_NEGATIVE,
    default=0.02,
    show_default=True,
    help="Allowed absolute change of best/final test accuracy.",
)
@click.option(
    "--rounds-tol",
    type=FINITE_NON_NEGATIVE,
    default=0.10,
    show_default=True,
    help="Allowed relative increase of rounds to target (at least one round).",
)
@click.option(
    "--speed-factor",
    type=FINITE_NON_NEGATIVE,
    default=3.0,
    show_default=True,
    help="Allowed slow-down of s/round (same device kind only).",
)
@click.option("--no-timing", is_flag=True, help="Do not compare s/round.")
@click.option("--threads", type=THREADS, default=1, show_default=True, help="torch threads.")
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
