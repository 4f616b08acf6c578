"""`fedbench plot`: the papers' kinds of figures from results, and every run's curves."""

from __future__ import annotations

from pathlib import Path

import click

from fedbench.cli import options as opt
from fedbench.cli.common import (
    ListedHelp,
    check_folder,
    echo_lines,
    echo_wrapped,
    refuse,
    run_filter,
    table_selection,
)
from fedbench.cli.table import figure_names, list_specs


@click.command(cls=ListedHelp, lists={"figures": figure_names})
@click.argument("name", required=False)
@opt.selection
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
@opt.on_error(help="A run with a corrupt file: stop with its name, or leave it out.")
@opt.reading_runs("curves")
def plot(name, **o):
    """Figures like the papers' (PNG and PDF): learning curves with min–max bands over seeds,
    best-accuracy bars, rounds to target against a parameter, SFL's quadratic panels,
    FedSoftMax's participation heat map, FedProx's loss and dissimilarity panels.

    NAME is a paper table or figure ({figures}), or `curves` (one line per run in results/).
    Without NAME: the list.

    \b
    Examples:
      fedbench plot tau --dataset fmnist            # tables/tau_fmnist.png and .pdf
      fedbench plot stragglers --dataset synthetic-1-1 --out figures
      fedbench plot participation --dataset mnist
      fedbench plot curves --metric test_acc --out tables/curves
      fedbench plot curves --dataset synthetic --where s=0.9 --metric train_loss
    """
    if name is None:
        list_specs(figures=True)
        return
    if name == "curves":
        why = "curves draws runs as they are: pick them with --dataset, --method, --seeds, --where"
        refuse(o, ("preset", "sets", "add_methods", "calibrated"), "plot curves", why)
        flt = run_filter(o["dataset"], o["method"], o["seeds"], o["where"])
        _plot_curves(o["results"], o["out"], o["metric"], o["on_error"], o["strict"], flt)
        return
    refuse(o, ("method", "where"), f"plot {name}",
           "a paper figure's runs are its cells'; add rows with --add-method")  # fmt: skip
    _plot_figure(name, o)


def _plot_figure(name: str, o: dict) -> None:
    from fedbench.cli.common import with_additions
    from fedbench.table_plots import plot_spec
    from fedbench.tables import evaluate_table, get_table, table_file_name

    out, results, calibrated = o["out"], o["results"], o["calibrated"]
    check_folder(out or "tables", "--out")
    spec = get_table(name, figure=True)
    sel, fit_line = table_selection(spec, o["dataset"], o["seeds"], o["preset"], o["sets"],
                                    results, calibrated, o["add_methods"])  # fmt: skip
    spec = with_additions(spec, sel)
    if fit_line:
        click.echo(fit_line)
    result = evaluate_table(spec, results, sel, on_error=o["on_error"], strict=o["strict"])
    stem = table_file_name(result) + ("_calibrated" if calibrated else "")
    echo_lines(f"wrote {p}" for p in plot_spec(result, Path(out or "tables") / stem))
    echo_wrapped([f"skipped: {p}" for p in result.problems] + result.notes)
    echo_lines(f"missing runs; fill them with: {line}" for line in result.fill_commands())


def _plot_curves(results, out, metric, on_error, strict, flt) -> None:
    """Every run's learning curve (those flt keeps); --out is a file name without extension."""
    from fedbench.plots import plot_curves

    check_folder(results, "--results")
    check_folder(Path(out or "tables/curves").parent, "--out's folder")
    paths, notes = plot_curves(
        Path(results), Path(out or "tables/curves"), metric, on_error, strict, flt
    )
    echo_lines(f"wrote {p}" for p in paths)
    echo_wrapped(notes)


COMMANDS = [plot]
