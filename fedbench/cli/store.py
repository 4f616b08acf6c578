"""`fedbench export` (runs as two Parquet files) and `fedbench publish` (runs into the shipped
store, fedbench.results.shipped_store)."""

from __future__ import annotations

from pathlib import Path

import click

from fedbench.cli import options as opt
from fedbench.cli.common import check_folder, echo_lines, table_selection, warn
from fedbench.errors import FedbenchError


def table_records(name, dataset, seeds, preset, sets, results, calibrated, on_error):
    """(index, the finished records a paper table uses, the local fit file or None)."""
    from fedbench.results import RunIndex
    from fedbench.tables import get_table
    from fedbench.tables.selection import table_records as used

    spec = get_table(name)
    sel, _ = table_selection(spec, dataset, seeds, preset, sets, results, calibrated)
    index = RunIndex(results, on_error=on_error, must_exist=False, shipped=True)
    records = used(spec, sel, index, on_error)
    fit = None
    if calibrated:
        from fedbench.tables.calibration import calibration_path

        path = calibration_path(results, spec.calibrated_by or spec.name, sel.dataset)
        fit = path if path.is_file() else None
    return index, records, fit


def _folder_records(results, on_error):
    from fedbench.results import RunIndex

    index = RunIndex(results, on_error=on_error)
    return index, [rec for key in index.by_key for rec in index.runs(key)]


@click.command()
@click.option("--table", "table_name", help="Export the runs this paper table uses (local and "
              "shipped) instead of the whole results folder.")  # fmt: skip
@opt.selection
@opt.calibrated()
@click.option("--out", required=True, type=opt.FolderPath(), help="Folder for runs.parquet and "
              "rounds.parquet.")  # fmt: skip
@opt.on_error(help="A run with a corrupt file: stop with its name, or leave it out.")
def export(table_name, dataset, seeds, preset, sets, results, calibrated, out, on_error):
    """Runs as two Parquet files in OUT: runs.parquet (one row per run: identity, data
    fingerprint, status, summary, flattened config, device, versions) and rounds.parquet (one
    row per run and round). Columns: docs/results-schema.md.

    \b
    Examples:
      fedbench export --out export/                       # every run in results/
      fedbench export --table tau --dataset fmnist --out export/tau
      python -c "import pandas as pd; print(pd.read_parquet('export/rounds.parquet'))"
    """
    from fedbench.results.export import export as write

    check_folder(out, "--out")
    if table_name:
        index, records, _ = table_records(
            table_name, dataset, seeds, preset, sets, results, calibrated, on_error
        )
    elif dataset or seeds or preset or sets or calibrated:
        raise FedbenchError("--dataset, --seeds, --preset, --set and --calibrated need --table")
    else:
        check_folder(results, "--results")
        index, records = _folder_records(results, on_error)
    if not records:
        raise FedbenchError(f"no runs to export in {results}" + (
            f" for table {table_name}" if table_name else ""))  # fmt: skip
    counts = write(index, records, Path(out), "fedbench export")
    warn("skipped:", index.problems)
    click.echo(f"wrote {Path(out) / 'runs.parquet'} ({counts['runs']} runs) and "
               f"{Path(out) / 'rounds.parquet'} ({counts['rounds']} rounds)")  # fmt: skip


@click.command()
@click.option("--table", "table_name", help="Publish the runs this paper table uses.")
@opt.selection
@opt.calibrated()
@click.option("--run", "run_ids", multiple=True, help="Publish this run (a folder name in "
              "--results); repeatable.")  # fmt: skip
@click.option("--every-table", is_flag=True, help="Publish the runs of every table file in "
              "--tables (each file's first line says how), each into its own group.")  # fmt: skip
@click.option("--tables", "tables_dir", default="tables", show_default=True,
              type=click.Path(), help="The table files --every-table reads.")  # fmt: skip
@click.option("--group", help="The store's group to add to (default: the table's file name, "
              "e.g. tau_fmnist; `runs` for --run).")  # fmt: skip
@click.option("--store", "store_dir", type=opt.FolderPath(), help="The store (default: "
              "results/shipped of this source tree, or $FEDBENCH_STORE).")  # fmt: skip
@opt.on_error(help="A run with a corrupt file: stop with its name, or leave it out.")
def publish(table_name, dataset, seeds, preset, sets, results, calibrated, run_ids, every_table,
            tables_dir, group, store_dir, on_error):  # fmt: skip
    """Add finished runs to the shipped store (results/shipped): the runs behind the committed
    tables, read by `table`, `plot`, `sweep` and `table report` beside the results folder. A run
    already shipped (same identity and data fingerprint) is skipped; --calibrated also ships
    the fit. The store is read-only otherwise; commit it after publishing.

    \b
    Examples:
      fedbench publish --table tau --dataset fmnist --results /work/runs
      fedbench publish --every-table --results /work/runs     # every file in tables/
      fedbench publish --run fedavg-synthetic-s0-9582428cf3ea --group extra
    """
    from fedbench.results.shipped_store import store_root

    root = Path(store_dir) if store_dir else store_root()
    if root is None:
        raise FedbenchError("no shipped store here: pass --store FOLDER (or set FEDBENCH_STORE)")
    check_folder(root, "--store")
    check_folder(results, "--results")
    _check_names(run_ids, group)
    if sum(map(bool, (table_name, run_ids, every_table))) != 1:
        raise FedbenchError("publish what? give one of --table NAME, --run RUN_ID, --every-table")
    if every_table:
        jobs = _every_table(Path(tables_dir), results)
    elif table_name:
        stem = _stem(table_name, dataset, calibrated)
        jobs = [(stem, (table_name, dataset, seeds, preset, sets, calibrated))]
    else:
        jobs = [("runs", run_ids)]
    for stem, what in jobs:
        _publish_one(root, stem if group is None else group, what, results, on_error)


def _check_names(run_ids, group) -> None:
    """--run '' and --group '' are refused, not read as 'every run' or the default group."""
    from fedbench.results.publish import check_group

    if any(not r.strip() for r in run_ids):
        raise FedbenchError("--run '' is empty: give a run's folder name in --results")
    if group is not None:
        try:
            check_group(group)
        except FedbenchError as e:
            raise FedbenchError(f"--group: {e}") from None


def _stem(name, dataset, calibrated) -> str:
    return name + (f"_{dataset}" if dataset else "") + ("_calibrated" if calibrated else "")


def _every_table(tables_dir: Path, results) -> list:
    """(group, table selection) of every table file's made-by command in tables_dir."""
    from fedbench.tables.report import _made_by, parse_table_command

    jobs = []
    for path in sorted(tables_dir.glob("*.md")) if tables_dir.is_dir() else []:
        cmd = _made_by(path)
        parsed = parse_table_command(cmd, str(results)) if cmd else None
        if not parsed:
            continue
        name, sel, ignored = parsed
        sets = tuple(f"{k}={v}" for k, v in sel.sets.items())
        seeds = ",".join(map(str, sel.seeds)) if sel.seeds is not None else None
        jobs.append((path.stem, (name, sel.dataset, seeds, sel.preset, sets,
                                 "--calibrated" in ignored)))  # fmt: skip
    if not jobs:
        raise FedbenchError(f"no table files (made by `fedbench table ...`) in {tables_dir}")
    return jobs


def _publish_one(root: Path, group: str, what, results, on_error) -> None:
    from fedbench.results.publish import publish as add
    from fedbench.results.publish import publish_fit

    fit = None
    if isinstance(what, tuple) and len(what) == 6:
        index, records, fit = table_records(*what[:5], results, what[5], on_error)
        if not records:
            click.echo(f"{group}: no finished runs in {results} or the store; nothing published")
            return
    else:
        index, records = _folder_records(results, on_error)
        wanted = set(what)
        records = [r for r in records if r.run_dir.name in wanted or r.run_id in wanted]
        missing = wanted - {r.run_dir.name for r in records} - {r.run_id for r in records}
        # a named run left out as damaged (--on-error skip) is said under skipped:, not missing
        missing = {m for m in missing if not any(str(Path(results) / m) in p
                                                 for p in index.problems)}  # fmt: skip
        if missing:
            raise FedbenchError(f"no run {sorted(missing)[0]} in {results}")
    counts = add(index, records, root, group, f"fedbench publish (group {group})")
    warn("skipped:", index.problems)
    click.echo(f"{group}: {counts['added']} run(s) added, {counts['already']} already shipped, "
               f"{counts['unfinished']} unfinished (not shipped)")  # fmt: skip
    if fit is not None:
        echo_lines([f"{group}: {publish_fit(fit, root)}"])


COMMANDS = [export, publish]
