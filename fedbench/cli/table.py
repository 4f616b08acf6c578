"""`fedbench table`: a paper table from results (ours, the paper's, the difference), the
per-run summary and the report of every table."""

from __future__ import annotations

from pathlib import Path

import click

from fedbench.cli import options as opt
from fedbench.cli.common import (
    OPTION_NAMES,
    ListedHelp,
    apply_calibration,
    check_folder,
    echo_lines,
    echo_wrapped,
    make_selection,
    refuse,
    run_filter,
    warn,
    wrapped,
)
from fedbench.errors import FedbenchError


def spec_rows(figures: bool) -> list[dict]:
    """The paper tables (or, with figures, the figures) `fedbench table` / `plot` draw."""
    from fedbench.tables import TABLES

    return [
        {
            "name": name,
            "source": spec.source,
            "datasets": ", ".join(spec.datasets),
            "what": spec.title,
        }
        for name, spec in TABLES.items()
        if (spec.plot is not None if figures else spec.is_table)
    ]


def table_names() -> list[str]:
    return [row["name"] for row in spec_rows(figures=False)]


def figure_names() -> list[str]:
    return [row["name"] for row in spec_rows(figures=True)]


def list_specs(figures: bool) -> None:
    from rich.table import Table

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
    for row in spec_rows(figures):
        t.add_row(*row.values())
    console().print(t)


@click.command(cls=ListedHelp, lists={"tables": table_names})
@click.argument("name", required=False)
@opt.selection
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
@opt.on_error(
    help="A run with a corrupt file: stop with its name, or skip it (its cell shows missing)."
)
@click.option(
    "--spread",
    type=click.Choice(["minmax", "ci95"]),
    help="Spread over seeds: min–max or 95% CI (default: the table's, as its paper).",
)
@opt.reading_runs("summary")
def table(name, **o):
    """A paper table from results: ours, the paper's and the difference per cell.

    NAME is a paper table ({tables}), `summary` (one line per run) or `report` (OUT/REPORT.md:
    every table with runs, its claims' verdicts, scale and commands). Without NAME: the list.
    Cells whose runs are missing say so, with the `fedbench sweep` command that fills them.

    \b
    Examples:
      fedbench table tau --dataset fmnist
      fedbench table tau --dataset fmnist --format md     # writes tables/tau_fmnist.md
      fedbench table stragglers --preset default --set rounds=20 --seeds 0
      fedbench table summary --dataset synthetic --where s=0.5 --method fedprox
      fedbench table tau --dataset fmnist --plugin mine.py --add-method mine
      fedbench table report                             # writes tables/REPORT.md
    """
    if name is None:
        list_specs(figures=False)
        return
    if o["fmt"] != "rich":
        check_folder(o["out"], "--out")
    if name == "summary":
        refuse(o, ("preset", "sets", "add_methods", "calibrated", "spread"), "table summary",
               "summary lists runs as they are: pick them with --dataset, --method, --seeds, "
               "--where")  # fmt: skip
        check_folder(o["results"], "--results")
        flt = run_filter(o["dataset"], o["method"], o["seeds"], o["where"])
        _table_summary(o["results"], o["fmt"], o["out"], o["on_error"], o["strict"], flt)
    elif name == "report":
        refuse(o, tuple(OPTION_NAMES), "table report", "the report covers every table and its "
               "files")  # fmt: skip
        _table_report(o["results"], o["out"], o["on_error"])
    else:
        _paper_command(name, o)


def _paper_command(name: str, o: dict) -> None:
    from fedbench.cli.common import with_additions
    from fedbench.tables import get_table

    refuse(o, ("method", "where"), f"table {name}", "a paper table's runs are its cells'; "
           "pick rows with --add-method, settings with --set")  # fmt: skip
    sel = make_selection(
        o["dataset"], o["seeds"], o["preset"], o["sets"], o["results"], o["add_methods"]
    )
    spec = with_additions(get_table(name), sel)
    _paper_table(name, spec, sel, o["fmt"], o["out"], o["on_error"], o["spread"], o["strict"],
                 o["calibrated"])  # fmt: skip


def _paper_table(name, spec, sel, fmt, out, on_error, spread, strict, calibrated) -> None:
    from fedbench.tables import evaluate_table

    fit_sel, fit_line = apply_calibration(spec, sel, calibrated)
    result = evaluate_table(
        spec, sel.results, fit_sel, on_error=on_error, spread=spread, strict=strict
    )
    warn("skipped:", result.problems)
    if fmt == "rich":
        _print_paper_table(result, fit_line)
        return
    opts = " ".join(
        x for x in (f"--dataset {sel.dataset}" if sel.dataset else "", sel.options()) if x
    )
    cmd = f"fedbench table {name} {opts} --format {fmt}".replace("  ", " ")
    cmd += " --calibrated" if calibrated else ""
    _write_paper_table(result, cmd, fmt, out, calibrated, fit_line)


def _print_paper_table(result, fit_line: str | None) -> None:
    from fedbench.tables import claim_lines, console, rich_paper_table, table_notes

    c = console()
    if fit_line:
        c.print(fit_line, highlight=False, markup=False, soft_wrap=True)
    c.print(rich_paper_table(result))
    notes = [line for line in table_notes(result) if not line.startswith("skipped: ")]
    width = c.width if c.is_terminal else 80  # console() is 240 wide off a terminal
    for line in notes + claim_lines(result):
        # a fill command stays on one line, to be copied whole
        text = line if line.lstrip().startswith("fedbench ") else wrapped(line, width)
        c.print(text, highlight=False, markup=False, soft_wrap=True)


def _write_paper_table(result, cmd: str, fmt: str, out, calibrated: bool, fit_line) -> None:
    """OUT/NAME[_DATASET][_calibrated].{md,csv,tex}, headed by the command that made it and
    which runs (a csv's head in NAME.csv.json); never over a file made from more runs."""
    from fedbench.tables import claims_summary, header_lines, render_paper_table, table_file_name
    from fedbench.tables.render import paper_table_sidecar, runs_line, write_guarded

    device = ", ".join(sorted(result.devices)) or "no runs"
    ext = {"md": "md", "csv": "csv", "latex": "tex"}[fmt]
    path = Path(out) / f"{table_file_name(result)}{'_calibrated' if calibrated else ''}.{ext}"
    path.parent.mkdir(parents=True, exist_ok=True)
    from fedbench.tables.render import substitute_line
    from fedbench.tables.report import table_scale

    scale = [f"scale: {table_scale(result)[1]}"] if result.spec.seeds else []
    records = result.used_records()
    header = [*header_lines(cmd, device), result.compute_line(), runs_line(records), *scale]
    header += [x for x in (substitute_line(result),) if x]
    header += [fit_line] if fit_line else []
    sidecar = paper_table_sidecar(result, header) if fmt == "csv" else None
    changed = write_guarded(path, render_paper_table(result, fmt, header), len(records), sidecar)
    click.echo(f"wrote {path}" if changed else f"{path} is up to date (same runs)")
    echo_lines(f"missing runs; fill them with: {line}" for line in result.fill_commands())
    echo_wrapped(result.notes)
    if result.claims:
        click.echo(claims_summary(result))


def _table_report(results, out, on_error, shipped: bool = True):
    """OUT/REPORT.md: every paper table with runs in RESULTS (and the shipped store unless
    shipped=False), its verdicts, scale, commands."""
    from fedbench.tables import claims_summary
    from fedbench.tables.report import write_report

    path, entries, file_entries, absent = write_report(results, out, on_error, shipped=shipped)
    for e in entries:
        ds = e.result.selection.dataset or "all datasets"
        click.echo(f"{e.name} ({ds}): {claims_summary(e.result)}")
    for f in file_entries:  # no runs here: the file's old numbers, no verdict counted
        click.echo(f"{f.name} ({f.dataset or 'all datasets'}), from {f.file}: no verdict counted")
    echo_lines(dict.fromkeys(absent))  # a table whose data is not here: one line each
    click.echo(f"wrote {path}")


def _table_summary(results, fmt, out, on_error, strict=False, flt=None):
    from fedbench.results import RunIndex, summary_frame
    from fedbench.tables import console, header_lines, rich_table, write_table

    index = RunIndex(Path(results), on_error=on_error, strict=strict)
    df = summary_frame(index)
    warn("skipped:", index.problems)
    if df.empty:
        raise FedbenchError(f"no readable runs in {results}; run fedbench train first")
    metas = {rec.run_id: rec.meta for rec in index.records()}
    if flt:
        df = df[[flt.keeps(metas[r]) for r in df["run_id"]]]
        if df.empty:
            raise FedbenchError(f"no run in {results} has {flt.describe()}; see fedbench table "
                                "summary for the runs there are")  # fmt: skip
    stacked = int((df["stack_size"] > 1).sum())
    df = summary_columns(df, [metas[r] for r in df["run_id"]])
    if fmt == "rich":
        df, same = varying_columns(df)
        title = f"runs in {results}" + (f" with {flt.describe()}" if flt else "")
        table = rich_table(df, title=title + (f"; all with {same}" if same else ""))
        table.columns[0].no_wrap = True  # run ids whole: other columns wrap instead
        console().print(table)
    else:
        cmd = "fedbench table summary" + (f" --results {results}" if results != "results" else "")
        cmd += f" {flt.options()}" if flt else ""
        path = write_table(df, "summary", fmt, Path(out), header_lines(cmd + f" --format {fmt}"))
        click.echo(f"wrote {path}")
    echo_wrapped(index.notes)
    if stacked:
        echo_wrapped(
            [
                f"note: {stacked} run(s) trained in stacks (run.json stack_size > 1): their "
                "seconds include waiting for their stack-mates, not one run's time"
            ]
        )


def varying_columns(df):
    """The summary's columns that differ among its rows (all of them for one run), and the
    others as text, `status complete, seed 0` (the terminal's table only: files keep all)."""
    import json

    from fedbench.tables import fmt_cell

    if len(df) < 2:
        return df, ""
    same = [c for c in df.columns[1:] if df[c].map(fmt_cell).nunique() == 1]
    text = ", ".join(f"{c} {fmt_cell(df[c].iloc[0])}" for c in same)
    df = df.drop(columns=same)
    if "method_params" in df:  # its parameters that vary have columns of their own
        keys = {k for v in df["method_params"] for k in (json.loads(v) if v else {})}
        df = df.drop(columns="method_params") if keys <= set(df.columns) else df
    return df, text


def summary_columns(df, metas: list[dict]):
    """The summary's columns, with the fields that vary among these runs after the dataset
    (three stragglers runs differ in `stragglers`, not only in run id), sorted by them."""
    from fedbench.identity import method_label
    from fedbench.run_filter import run_fields, sort_key, varying_fields
    from fedbench.tables import SUMMARY_COLUMNS

    shown = varying_fields(metas, always=("method", "dataset", "seed"))
    df = df[SUMMARY_COLUMNS].copy()
    df["method"] = [method_label(m.get("config") or {}) for m in metas]  # fedavg+adam
    at = SUMMARY_COLUMNS.index("dataset") + 1
    for i, name in enumerate(shown):
        df.insert(at + i, name, [run_fields(m).get(name) for m in metas])
    keys = ["dataset", "method", "method_params", *shown, "seed"]
    return df.sort_values(keys, key=lambda c: c.map(sort_key), kind="stable")


COMMANDS = [table]
