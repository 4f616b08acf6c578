"""One schema for every record: rounds.parquet has run_id and the same columns and types for
every method and dataset, so a results folder reads in one call with pandas, Polars and DuckDB
(the one-liners of docs/results-schema.md, run here); older records are normalised on read."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from fedbench.assembly import build_config
from fedbench.errors import FedbenchError
from fedbench.identity import run_id
from fedbench.methods import METHODS
from fedbench.results.schema import (
    ROUND_COLUMNS,
    SCHEMA_VERSION,
    normalise_meta,
    normalise_rounds,
    rounds_columns,
    rounds_schema,
    rounds_table,
)
from fedbench.training.runner import train

DOC = Path(__file__).resolve().parents[1] / "docs" / "results-schema.md"
SYN = {"rounds": "2", "N": "6", "K": "3", "E": "1", "device": "cpu"}
QUAD = {"rounds": "2", "device": "cpu"}


@pytest.fixture(scope="module")
def mixed_results(tmp_path_factory):
    """FedAvg, SCAFFOLD and SFL on Synthetic(1,1) and on SFL's quadratic problem."""
    res = tmp_path_factory.mktemp("mixed") / "R"
    cfgs = []
    for method in ("fedavg", "scaffold", "sfl"):
        cfgs.append(build_config(None, None, {**SYN, "method": method}))
        cfgs.append(build_config("sfl-quadratic", None, {**QUAD, "method": method}))
    for cfg in cfgs:
        train(cfg, res)
    return res, cfgs


def _plain(schema: pa.Schema) -> tuple:
    """Names and types (a list's item is named `element` once written to Parquet)."""
    return tuple((f.name, str(f.type).replace("element: ", "item: ")) for f in schema)


def test_every_rounds_file_has_one_schema(mixed_results):
    res, cfgs = mixed_results
    schemas = {_plain(pq.read_schema(p)) for p in res.glob("*/rounds.parquet")}
    assert schemas == {_plain(rounds_schema())}
    for cfg in cfgs:
        t = pq.read_table(res / run_id(cfg) / "rounds.parquet")
        assert set(t.column("run_id").to_pylist()) == {run_id(cfg)}
        assert t.schema.field("dropped").type == pa.list_(pa.int64())
        assert "train_loss" in t.column_names
    keys = {tuple(json.loads(p.read_text())) for p in res.glob("*/run.json")}
    assert len(keys) == 1  # every run.json has the same keys, in the same order


def _doc_lines() -> list[str]:
    text = DOC.read_text()
    block = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    return [line for line in block.splitlines() if line.strip()]


def test_docs_one_liners_read_the_folder(mixed_results):
    res, cfgs = mixed_results
    lines = _doc_lines()
    assert any("polars" in x for x in lines) and any("duckdb" in x for x in lines)
    for line in lines:
        env: dict = {}
        exec(line.replace('"R/', f'"{res}/').replace("'R/", f"'{res}/"), env)
        name = "rounds" if "rounds" in env else "runs"
        df = env[name]
        df = df if isinstance(df, pd.DataFrame) else df.to_pandas()
        assert set(df["run_id"]) == {run_id(c) for c in cfgs}, line
        if name == "rounds":
            assert len(df) == 3 * len(cfgs), line  # rounds 0..2 of each run


def test_old_records_are_normalised():
    """A schema-2 rounds file: no run_id, only its method's columns, dropped as list<null>,
    a count with NaN at round 0 (as pandas wrote it)."""
    old = pa.table(
        {
            "round": [0, 1],
            "test_acc": [0.1, 0.5],
            "dropped": pa.array([[], []], pa.list_(pa.null())),
            "n_corrected": [float("nan"), 2.0],
            "plugin_field": [1.5, 2.5],
        }
    )
    t = normalise_rounds(old, "r1")
    names = [c.name for c in rounds_columns()]
    assert t.column_names[: len(names)] == names and t.column_names[-1] == "plugin_field"
    assert t.column("run_id").to_pylist() == ["r1", "r1"]
    assert t.schema.field("dropped").type == pa.list_(pa.int64())
    assert t.column("n_corrected").to_pylist() == [None, 2]
    assert t.column("train_loss").null_count == 2
    meta = normalise_meta({"schema_version": 2, "status": "complete", "summary": {}})
    assert meta["error"] is None and meta["stopped_at_target"] is None
    assert meta["summary"]["best_acc"] is None and meta["schema_version"] == 2
    assert SCHEMA_VERSION == 3


def test_undeclared_record_field_is_refused():
    with pytest.raises(FedbenchError, match="no method declares"):
        rounds_table([{"round": 0, "surprise": 1.0}], "r")


def test_method_fields_are_declared_with_one_type():
    fields = {}
    for cls in METHODS.values():
        for f in cls.record_fields:
            assert fields.setdefault(f.name, (f.type, f.unit)) == (f.type, f.unit)
    assert not set(fields) & {c.name for c in ROUND_COLUMNS}
    assert {"order", "agg_weights", "tau_eff", "n_corrected", "extra_grad_samples"} <= set(fields)


def test_a_record_keeps_nan_apart_from_missing():
    t = rounds_table([{"round": 0}, {"round": 1, "local_loss": float("nan")}], "r")
    ll = t.column("local_loss")
    assert ll.null_count == 1 and pd.isna(ll.to_pylist()[1])


def test_schema_doc_is_generated_from_the_code(tmp_path):
    """docs/results-schema.md's column tables come from fedbench.results.schema and .export:
    a column changed in the code makes `fedbench docs` fail until `fedbench docs --write`."""
    import shutil

    from click.testing import CliRunner

    from fedbench.cli import cli

    root = DOC.parents[1]
    shutil.copy(root / "README.md", tmp_path / "README.md")
    shutil.copytree(root / "docs", tmp_path / "docs")
    shutil.copytree(root / "tables", tmp_path / "tables")
    text = DOC.read_text()
    assert "| `run_id` " in text and "| `test_acc` " in text and "fraction (0-1" in text
    doc = tmp_path / "docs" / DOC.name
    doc.write_text(text.replace("| `order` ", "| `orderx`", 1))

    def docs(*args):
        return CliRunner().invoke(cli, ["docs", "--root", str(tmp_path), *args], obj={})

    r = docs()
    assert r.exit_code == 1 and "docs/results-schema.md: rounds-columns" in r.output, r.output
    assert docs("--write").exit_code == 0 and doc.read_text() == text
