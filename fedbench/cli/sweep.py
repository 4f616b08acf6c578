"""`fedbench sweep`: a grid of configs (or what a paper table needs), skipping what results/
already holds. The command parses; fedbench.sweep plans and executes."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import click

from fedbench.cli import options as opt
from fedbench.cli.common import (
    OneLineError,
    check_folder,
    check_seeds,
    command_line,
    echo_lines,
    log_level,
    table_selection,
    warn,
)
from fedbench.errors import FedbenchError


@dataclass(frozen=True)
class SweepArgs:
    """The sweep command's options, as click passes them."""

    table_name: str | None
    sweep_file: str | None
    preset: str | None
    config_file: str | None
    methods: str | None
    dataset: str | None
    seeds: str | None
    grids: tuple[str, ...]
    sets: tuple[str, ...]
    results: str
    jobs: int
    threads: int | None
    executor: str
    address: str | None
    gpus_per_run: float
    cpus_per_run: float
    stack: bool | None
    dry_run: bool
    quiet: bool
    verbose: bool
    log_level: str | None
    checkpoint_rounds: int | None
    checkpoint_minutes: float | None
    damaged: str | None
    on_error: str | None
    strict: bool
    calibrated: bool
    add_methods: tuple[str, ...] = ()
    probe: float | None = None


# --jobs, --threads, --executor, --address, --gpus-per-run, --cpus-per-run, --stack.
executor_options = opt.together(
    opt.jobs(),
    opt.threads(help="torch threads per run (default: 1 for small models, else cores / jobs)."),
    click.option(
        "--executor",
        type=click.Choice(["local", "ray"]),
        default="local",
        show_default=True,
        help="local: this machine; ray: tasks on a Ray cluster.",
    ),
    click.option(
        "--address",
        help="Ray cluster to use: HOST:PORT, or auto (the one `ray start` made on this machine); "
        "default: a private local Ray for this sweep.",
    ),
    opt.amount("--gpus-per-run", 0, "Ray num_gpus."),
    opt.amount("--cpus-per-run", 1, "Ray num_cpus."),
    opt.stack(),
)


@click.command()
@opt.table_name(help="Run what this paper table needs (see fedbench table).")
@click.option(
    "--file", "sweep_file", type=click.Path(), help="TOML sweep file (docs/usage.md, Sweeps)."
)
@opt.preset(help="Named paper setting the grid starts from.")
@opt.config_file()
@click.option(
    "--methods",
    help="Comma-separated methods, e.g. fedavg,fedprox (with --table: only those cells' runs).",
)
@opt.dataset(help="Dataset (with --table: which of the table's datasets).")
@opt.seeds(help="Comma-separated seeds, e.g. 0,1,2.")
@click.option(
    "--grid",
    "grids",
    multiple=True,
    metavar="KEY=V1,V2",
    help="Vary a config field or method parameter over values; repeatable (all combinations).",
)
@opt.sets(help="Fix a config field or method parameter for every run; repeatable.")
@opt.results(help=None)
@executor_options
@click.option("--dry-run", is_flag=True, help="List the runs that would run, run nothing.")
@opt.probe()
@opt.output
@opt.checkpoints
@click.option(
    "--damaged",
    type=click.Choice(["rerun", "stop"]),
    help="A finished run whose files are damaged: run it again (default), or stop with its name.",
)
@click.option("--on-error", type=click.Choice(["fail", "skip"]), hidden=True)  # old --damaged
@opt.strict()
@opt.calibrated()
@opt.add_method()
def sweep(**options):
    """Run a grid of configs, skipping the ones results/ already holds (resumable: start it
    again after a crash or kill; several sweeps may share one results folder).

    \b
    Examples:
      fedbench sweep --methods fedavg,fedprox --dataset fmnist --seeds 0,1,2 \\
                     --grid rho=0.1,0.3,0.5 --grid K=5,10,25
      fedbench sweep --table tau --dataset fmnist          # what `fedbench table tau` needs
      fedbench sweep --file sweep.toml --jobs 4
      fedbench sweep --table r90 --executor ray --gpus-per-run 0.25
      fedbench sweep --table tau --dataset fmnist --plugin mine.py --add-method mine

    Stopped by Ctrl-C (exit 130) or SIGTERM (exit 143), its runs stop at the end of a round,
    are recorded `interrupted` and resume from there when the sweep runs again.
    """
    from fedbench.devices import tf32_requested
    from fedbench.sweep import make_executor, plan_sweep
    from fedbench.training.checkpoint import Policy

    a = SweepArgs(**options)
    level = log_level(a.quiet, a.verbose, a.log_level)
    policy = Policy.from_env(a.checkpoint_rounds, a.checkpoint_minutes).to_dict()
    tf32_requested()  # a bad FEDBENCH_TF32: one line before any work
    executor = make_executor(
        a.executor, a.jobs, a.threads, a.address, a.gpus_per_run, a.cpus_per_run, a.stack, policy
    )
    check_folder(a.results, "--results", claims=True)
    configs, unavailable, label = sweep_configs(a)
    check_data(configs, a)
    from fedbench.identity import server_lr_note

    warn("warning:", dict.fromkeys(filter(None, map(server_lr_note, configs))))
    on_damage = damaged_choice(a.damaged, a.on_error)
    plan = plan_sweep(configs, Path(a.results), on_error=on_damage, strict=a.strict, shipped=True)
    plan.unavailable = unavailable
    check_memory(plan.todo, a)
    if plan.todo and not a.dry_run:
        executor.prepare()  # e.g. Ray: its errors before the plan's lines
    announce(plan, label, executor.name, a)
    header(plan, configs, a)
    if a.dry_run:
        echo_lines(dry_run_lines(plan.todo))
        echo_lines(plan.notes)
        return
    execute(plan, executor, a, label, level)


def damaged_choice(damaged: str | None, on_error: str | None) -> str:
    """plan_sweep's on_error from --damaged (rerun: "skip" the damaged record, so it runs
    again; stop: "fail"), or from the old --on-error, with a note that it is deprecated: on
    table and plot --on-error skip leaves a damaged run out, on sweep it reran it."""
    if on_error is not None:
        new = {"skip": "rerun", "fail": "stop"}[on_error]
        if damaged is not None:
            raise FedbenchError(f"--on-error is the old --damaged; give only --damaged {new}")
        warn("deprecated:", [f"sweep --on-error {on_error} is now --damaged {new}"])
        damaged = new
    return "fail" if damaged == "stop" else "skip"


def dry_run_lines(todo: list) -> list[str]:
    """One line per run to do: run id, method, the fields that vary among them, seed."""
    from fedbench.identity import method_label, run_id
    from fedbench.run_filter import run_fields, varying_fields

    if not todo:
        return []

    metas = [{"config": cfg.to_dict()} for cfg in todo]
    shown = varying_fields(metas, always=("method", "seed"))
    rows = [["run", "method", *shown, "seed"]]
    for cfg, meta in zip(todo, metas):
        values = run_fields(meta)
        rows.append([run_id(cfg), method_label(cfg), *(_shown(values.get(k)) for k in shown),
                     str(cfg.seed)])  # fmt: skip
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  " + "  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip() for r in rows]


def _shown(v) -> str:
    if v is None:
        return "–"
    return f"{v:g}" if isinstance(v, float) else str(v)


def sweep_configs(a: SweepArgs) -> tuple[list, dict[str, int], str]:
    """(configs, cells unavailable in this build by reason, label) of --table or of a grid."""
    if a.table_name:
        return _table_configs(a)
    if a.calibrated or a.add_methods:
        flag = "--calibrated" if a.calibrated else "--add-method"
        raise FedbenchError(f"{flag} goes with --table (it changes a table's runs); a grid "
                            "takes methods with --methods")  # fmt: skip
    from fedbench.sweep import grid_configs, load_sweep_file

    kw = load_sweep_file(a.sweep_file) if a.sweep_file else {}
    grid_args = sweep_grid_args(kw, a.sets, a.grids, a.dataset, a.seeds, a.methods)
    configs = grid_configs(
        preset=a.preset or kw.get("preset"),
        config_file=a.config_file or kw.get("config_file"),
        **grid_args,
    )
    return configs, {}, "sweep"


def _table_configs(a: SweepArgs) -> tuple[list, dict[str, int], str]:
    from fedbench.sweep import table_configs
    from fedbench.tables import TABLES, get_table

    if a.sweep_file or a.grids or a.config_file:
        raise FedbenchError(
            "--table chooses the runs itself; use --dataset, --seeds, --preset, --set and "
            "--methods with it, not --grid, --config or --file"
        )
    spec = TABLES.get(a.table_name) or get_table(a.table_name)  # a table, a figure or both
    sel, fit_line = table_selection(
        spec, a.dataset, a.seeds, a.preset, a.sets, a.results, a.calibrated, a.add_methods
    )
    if fit_line:
        click.echo(fit_line)
    label = a.table_name + (f" ({a.dataset})" if a.dataset else "")
    if a.add_methods:  # only the added rows: the paper's rows are someone else's runs
        from fedbench.cli.common import with_additions
        from fedbench.tables.additions import added_rows

        if a.methods:
            raise FedbenchError("--add-method trains the added rows only; leave out --methods")
        spec = with_additions(spec, sel)
        configs, unavailable = table_configs(spec, sel, added_rows(spec, sel.dataset))
        return configs, unavailable, f"{label} + {', '.join(sel.additions)}"
    configs, unavailable = table_configs(spec, sel)
    if a.methods:  # fill some rows first (e.g. the slow baselines last)
        configs = _only_methods(configs, a.methods, a.table_name)
    return configs, unavailable, label


def _only_methods(configs: list, methods: str, table: str) -> list:
    from fedbench.sweep import parse_list

    wanted = parse_list(methods, "--methods")
    present = sorted({c.method for c in configs})
    unknown = [m for m in wanted if m not in present]
    if unknown:
        raise FedbenchError(
            f"--methods: table {table} has no runs of {', '.join(unknown)}; "
            f"its methods are {', '.join(present)}"
        )
    return [c for c in configs if c.method in wanted]


def sweep_grid_args(kw: dict, sets, grids, dataset, seeds, methods) -> dict:
    """grid_configs' methods, dataset, seeds, grid, sets and method grids from a sweep file's
    values (kw) and the command line, which overrides them; then each field is fixed
    (--set, [set]), varied (--grid, [grid]) or listed (seeds, methods) once."""
    from fedbench.config_input import layer, one_each, parse_set
    from fedbench.sweep import parse_grid, parse_list

    cli_sets, cli_grid = parse_set(sets), parse_grid(grids)
    command_line(sets, {"dataset": dataset})
    grid = layer(kw.get("grid", {}), cli_grid)
    all_sets = layer(kw.get("sets", {}), cli_sets)
    seed_list = parse_list(seeds, "--seeds", int) or kw.get("seeds")
    check_seeds(seed_list, "--seeds" if seeds else "the file's seeds")
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


def check_data(configs: list, a: SweepArgs) -> None:
    """Before planning, each dataset once: here, or downloaded now (a dry run only says it
    will be); else one line naming the folders searched, the layout and how to get it. Ray's
    workers may be other machines: each run there finds its own data."""
    if a.executor == "ray":
        return
    from fedbench.resources import missing_data

    errors, notes = missing_data(configs, download=not a.dry_run)
    if errors:
        more = f" (and {len(errors) - 1} more datasets missing)" if len(errors) > 1 else ""
        raise FedbenchError(errors[0] + more)
    warn("data:", notes)


def check_memory(todo: list, a: SweepArgs) -> None:
    """Each run to do fits this machine's memory (fedbench.resources), before any runs."""
    if a.executor == "ray":
        return
    from fedbench.identity import run_id
    from fedbench.resources import check_memory as fits

    for cfg in todo:
        fits(cfg, f"run {run_id(cfg)}")


def probe_seconds(given: float | None, wanted: bool) -> float:
    """--probe's seconds: as given; else its default where the estimate is the point (a dry
    run) or decides what starts (a budget), none before runs that start anyway."""
    from fedbench.sweep.probe import default_seconds

    return given if given is not None else (default_seconds() if wanted else 0.0)


def header(plan, configs: list, a: SweepArgs) -> None:
    """The preset the runs start from (which one a bare --dataset picked), then the compute
    the runs to do take and their expected time on this device."""
    from fedbench.sweep.estimate import model_line, time_line

    presets = sorted({str(c.preset) for c in configs})
    if len(presets) == 1:
        bare = a.dataset and not (a.preset or a.table_name or a.config_file or a.sweep_file)
        why = f" (what --dataset {a.dataset} starts from; --preset names another)" if bare else ""
        click.echo(f"preset: {presets[0]}{why}")
    if plan.todo:
        click.echo(model_line(plan.todo))
        probe = probe_seconds(a.probe, a.dry_run)
        click.echo(time_line(plan.todo, Path(a.results), a.jobs, probe=probe, threads=a.threads))


def announce(plan, label: str, executor_name: str, a: SweepArgs) -> None:
    """What the plan leaves out or reruns (stderr), then its one-line count."""
    for reason, n in plan.unavailable.items():
        warn(f"unavailable ({n} cells):", [reason])
    warn("rerunning:", plan.problems)
    click.echo(
        f"{label}: {plan.total} runs; {len(plan.done)} already done, {len(plan.todo)} to run"
        + (f", {len(plan.busy)} running elsewhere" if plan.busy else "")
        + f" ({executor_name}"
        + (f", {a.jobs} at once" if executor_name == "pool" else "")
        + f") -> {a.results}"
    )


def execute(plan, executor, a: SweepArgs, label: str, level: str) -> None:
    """Run the plan, print its summary and notes; exit 1 when a run failed, 130 / 143 when a
    signal stopped it (after the summary of what it did)."""
    from fedbench.sweep import run_sweep
    from fedbench.training import signals

    try:
        with signals.handling():
            report = run_sweep(plan, a.results, executor, label=label, level=level)
    except KeyboardInterrupt as e:
        if getattr(e, "report", None) is not None:
            _print_summary(e.report)
            click.echo(
                f"interrupted ({signals.signal_name(e)}): the runs stopped are recorded "
                "interrupted; run the same command again to resume them",
                err=True,
            )
            e.reported = True
        raise
    _print_summary(report)
    if report.failed:
        first = report.failed[0]
        unrecorded = sum(not o.recorded for o in report.failed)
        where = (
            f"{unrecorded} of them could not be recorded in their run.json"
            if unrecorded
            else "recorded in its run.json"
        )
        raise OneLineError(
            f"{len(report.failed)} run(s) failed, first {first.run_id}: {first.error} "
            f"({where}; the next sweep retries it)",
            1,
        )


def _print_summary(report) -> None:
    from fedbench.sweep import summary_line, summary_table
    from fedbench.tables import console

    if report.outcomes:
        console().print(summary_table(report))
    click.echo(summary_line(report))
    echo_lines(report.plan.notes)


COMMANDS = [sweep]
