"""`fedbench calibrate`: fit a parameter the paper leaves unstated to one anchor cell."""

from __future__ import annotations

import click

from fedbench.cli import options as opt
from fedbench.cli.common import make_selection

# the search's own options: --target, --start, --step, --rtol, --tol, --max-points, --direction.
search_options = opt.together(
    click.option("--target", type=float, help="The value to match (default: the paper's)."),
    click.option("--start", type=float, help="First value tried (default: the anchor's own)."),
    click.option("--step", type=float, default=10.0, show_default=True, help="Bracketing factor."),
    click.option(
        "--rtol",
        type=float,
        default=0.05,
        show_default=True,
        help="Stop when the bracket is within a factor 1 + rtol.",
    ),
    click.option(
        "--tol",
        type=float,
        default=0.0,
        show_default=True,
        help="Stop at |metric - target| <= tol.",
    ),
    click.option(
        "--max-points", type=int, default=12, show_default=True, help="Values tried, most."
    ),
    click.option(
        "--direction",
        type=click.Choice(["auto", "up", "down"]),
        default="auto",
        show_default=True,
        help="Which way to bracket from the start value.",
    ),
)


@click.command()
@opt.table_name(required=True)
@click.option("--anchor", required=True, help="The anchor cell's method or row, e.g. fedavg.")
@click.option("--param", default="lr", show_default=True, help="The parameter to fit (> 0).")
@click.option("--col", help="The anchor's column, where its row has several runs cells.")
@search_options
@opt.selection
@opt.jobs(help="Seeds run at once.")
@opt.threads(help="torch CPU threads per run.")
@opt.quiet()
def calibrate(
    table_name,
    anchor,
    param,
    col,
    dataset,
    seeds,
    preset,
    sets,
    results,
    jobs,
    threads,
    quiet,
    **search,
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
    from fedbench.calibration_search import calibrate as fit_param
    from fedbench.tables import get_table

    spec = get_table(table_name)
    sel = make_selection(dataset, seeds, preset, sets, results)
    run_plan = plan_runner(results, jobs, threads, "warning" if quiet else "info")
    fit = fit_param(spec, sel, anchor, param, col=col, quiet=quiet, run_plan=run_plan, **search)
    for p in fit["points"]:
        seeds_txt = ", ".join(f"{v:g}" for v in p["per_seed"])
        click.echo(f"  {param} = {p['value']:<10g} -> {p['mean']:g} ({seeds_txt})")
    a = fit["anchor"]
    click.echo(
        f"{param} = {fit['value']:g}: {a['row']} / {a['col']} = {fit['achieved']:g} "
        f"(target {fit['target']:g}, {fit['target_source']}); {fit['runs_spent']} runs over "
        f"{len(fit['points'])} values; wrote {fit['path']}"
    )


def plan_runner(results: str, jobs: int, threads, level: str):
    """Each point's runs as `fedbench sweep` runs them (cli.sweep.execute): its progress lines,
    checkpoints (resumed when calibrate runs again) and summary; Ctrl-C / SIGTERM stop them at a
    round's end, recorded `interrupted`, claims released."""
    from types import SimpleNamespace

    from fedbench.cli.sweep import execute
    from fedbench.sweep import make_executor
    from fedbench.training.checkpoint import Policy

    policy = Policy.from_env(None, None).to_dict()
    executor = make_executor("local", jobs, threads, checkpoint=policy)
    where = SimpleNamespace(results=results)  # what execute reads of the sweep's options
    return lambda plan, label: execute(plan, executor, where, f"calibrate {label}", level)


COMMANDS = [calibrate]
