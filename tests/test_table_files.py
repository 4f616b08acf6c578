"""The table files the commands write are the committed ones: `fedbench table T` (no dataset)
and `fedbench reproduce` (which names the dataset) write one file for a one-dataset table, and
every committed tables/*.md is a name they write (reproduce sfl once wrote quadratic_quadratic.md
beside quadratic.md, and the report counted the table twice)."""

from pathlib import Path

from fedbench.cli import main  # noqa: F401  (loads the table catalog)
from fedbench.tables import TABLES, Selection, TableResult
from fedbench.tables.render import table_file_name

TABLES_DIR = Path(__file__).resolve().parents[1] / "tables"


def _name(spec, dataset: str) -> str:
    return table_file_name(TableResult(spec, Selection(dataset=dataset), "minmax", []))


def test_a_one_dataset_table_is_one_file_with_or_without_its_dataset():
    one = [s for s in TABLES.values() if s.is_table and len(s.datasets) == 1]
    assert {"quadratic", "quadratic-lr", "sfl-fmnist-lr", "tau-steps"} <= {s.name for s in one}
    for spec in one:
        assert _name(spec, spec.datasets[0]) == _name(spec, "") == spec.name


def test_every_committed_table_file_is_one_the_commands_write():
    written = {
        _name(spec, ds) + cal
        for spec in TABLES.values()
        if spec.is_table
        for ds in (*spec.datasets, "")
        for cal in ("", "_calibrated")
    }
    committed = {p.stem for p in TABLES_DIR.glob("*.md")} - {"REPORT", "README"}
    assert committed and committed <= written, sorted(committed - written)
