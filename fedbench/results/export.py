"""Runs as two tables: runs (one row per run: identity, data fingerprint, status, summary,
flattened config, device, versions) and rounds (one row per run and round, the schema of
fedbench.results.schema). `fedbench export` writes them as Parquet; the shipped store
(fedbench.results.shipped_store) keeps runs in this form, and reads them back as run.json records.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from fedbench.atomic import atomic_write_bytes
from fedbench.config import FIELD_KINDS, RunConfig
from fedbench.results.schema import (
    SCHEMA_VERSION,
    Column,
    arrow_type,
    json_text,
    normalise_meta,
    normalise_rounds,
    rounds_columns,
)

if TYPE_CHECKING:
    import pyarrow as pa

_KIND_TYPES = {"str": "string", "int": "int64", "float": "float64", "bool": "bool",
               "dict": "string"}  # fmt: skip
# run.json's `device` (the device used) keeps its name; the config's (the one asked for) is this
CONFIG_DEVICE = "config_device"
_RUN = "every run"


def _config_columns() -> list[Column]:

    out = []
    for name, (kind, _) in FIELD_KINDS.items():
        col = CONFIG_DEVICE if name == "device" else name
        what = "JSON text, sorted keys" if kind == "dict" else f"config field {name}"
        out.append(Column(col, _KIND_TYPES[kind], "", _RUN, f"null: the field is unset; {what}"))
    return out


_SUMMARY = (
    Column("rounds_run", "int64", "rounds", _RUN, "never null: rounds trained"),
    Column("best_acc", "float64", "fraction (0-1)", _RUN, "null: never evaluated for accuracy"),
    Column("final_acc", "float64", "fraction (0-1)", _RUN, "null: as best_acc"),
    Column("mean_round_seconds", "float64", "s", _RUN, "null: no round trained"),
    Column("total_seconds", "float64", "s", _RUN, "never null: summed round_seconds"),
    Column("final_train_loss", "float64", "nats", _RUN, "null: no train_loss recorded"),
    Column("final_local_loss", "float64", "nats", _RUN, "null: no local_loss recorded"),
    Column("rounds_to_target", "int64", "rounds", _RUN, "null: no target_acc, or not reached"),
    Column("seconds_to_target", "float64", "s", _RUN, "null: as rounds_to_target"),
)  # fmt: skip
_HEAD = (
    Column("run_id", "string", "", _RUN, "never null: the run's folder name"),
    Column("config_hash", "string", "", _RUN, "never null: the identity (fedbench.identity)"),
    Column("method_version", "int64", "", _RUN, "never null: the method's behaviour version"),
    Column("data_fingerprint", "string", "", _RUN, "null: a record from before fingerprints"),
    Column("status", "string", "", _RUN,
           "never null: complete | diverged | failed | interrupted | running"),
    Column("error", "string", "", "failed runs", "null: the run did not fail"),
    Column("stopped_at_target", "int64", "rounds", "stop_at_target runs", "null: not stopped"),
    Column("rows", "int64", "", _RUN, "null: the run never ended"),
)  # fmt: skip
_TAIL = (
    Column("device", "string", "", _RUN, "null: failed before training"),
    Column("device_name", "string", "", _RUN, "null: failed before training"),
    Column("threads", "int64", "", _RUN, "null: failed before training"),
    Column("stack_size", "int64", "runs", _RUN, "null: failed before training; above 1: seconds "
           "include stack-mates'"),  # fmt: skip
    Column("model_params", "int64", "", _RUN, "null: failed before training"),
    Column("data", "string", "", _RUN, "null: failed before training; JSON text of run.json data"),
    Column("schema_version", "int64", "", _RUN, "never null: the layout the record was written in"),
    Column("fedbench_version", "string", "", _RUN, "null: not recorded"),
    Column("torch_version", "string", "", _RUN, "null: not recorded"),
    Column("python_version", "string", "", _RUN, "null: not recorded"),
    Column("host", "string", "", _RUN, "null: not recorded"),
    Column("started", "string", "ISO 8601 UTC", _RUN, "null: not recorded"),
    Column("ended", "string", "ISO 8601 UTC", _RUN, "null: the run never ended"),
    Column("cpu_seconds", "float64", "s", _RUN, "null: resumed, or recorded before it was "
           "kept; the process's CPU seconds from started to ended (over a stack: split evenly)"),
    Column("load_start", "float64", "", _RUN, "null: not recorded; 1-minute load average"),
    Column("load_end", "float64", "", _RUN, "null: not recorded; 1-minute load average"),
)  # fmt: skip


def runs_columns() -> list[Column]:
    return [*_HEAD, *_SUMMARY, *_config_columns(), *_TAIL]


def run_row(meta: dict, run_id: str) -> dict:
    """A run.json as one flat row of the runs table."""
    meta = normalise_meta(meta)
    row = {c.name: meta.get(c.name) for c in (*_HEAD, *_TAIL)}
    row["run_id"] = run_id
    row["data_fingerprint"] = (meta.get("data") or {}).get("fingerprint")
    row["data"] = None if meta.get("data") is None else json_text(meta["data"])
    config = meta.get("config") or {}
    as_json = _dict_fields()
    for c in _config_columns():
        v = config.get("device" if c.name == CONFIG_DEVICE else c.name)
        row[c.name] = json_text(v) if c.name in as_json and v is not None else v
    summary = meta.get("summary") or {}
    row.update({c.name: summary.get(c.name) for c in _SUMMARY})
    return row


def meta_from_row(row: dict) -> dict:
    """The run.json a row of the runs table was made from (summary.target_acc is the config's)."""
    meta = {c.name: row.get(c.name) for c in (*_HEAD, *_TAIL) if c.name != "data_fingerprint"}
    meta["data"] = None if row.get("data") is None else json.loads(row["data"])
    config = {}
    as_json = _dict_fields()
    for c in _config_columns():
        key = "device" if c.name == CONFIG_DEVICE else c.name
        v = row.get(c.name)
        config[key] = json.loads(v) if c.name in as_json and v is not None else v
    meta["config"] = _without_absent(config)
    meta["summary"] = {c.name: row.get(c.name) for c in _SUMMARY}
    meta["summary"]["target_acc"] = config.get("target_acc")
    return normalise_meta(meta)


def _dict_fields() -> set[str]:
    """Config fields of dict kind (method_params, server_params, ...): JSON text in a table."""

    return {name for name, (kind, _) in FIELD_KINDS.items() if kind == "dict"}


def _without_absent(config: dict) -> dict:
    """A flattened config's nulls where the field's default is not null are fields the run's
    build did not have (the column is the union over runs): left out, so that the field takes
    its default, as when the run's own run.json is read (config_from_dict), and the run keeps
    its identity."""

    defaults = {f.name: f.default for f in dataclasses.fields(RunConfig)}
    return {k: v for k, v in config.items() if v is not None or defaults.get(k, None) is None}


def table_of(rows: list[dict], columns: list[Column]) -> pa.Table:
    import pyarrow as pa

    from fedbench.results.schema import _value

    arrays = [pa.array([_value(r.get(c.name), c.type) for r in rows], arrow_type(c.type))
              for c in columns]  # fmt: skip
    return pa.Table.from_arrays(arrays, names=[c.name for c in columns])


def export_tables(index, records: Iterable) -> tuple[pa.Table, pa.Table]:
    """(runs, rounds) of the records, in the schema this build writes, sorted by run_id (and
    round). A record's rounds are read through the index (local folder or shipped store)."""
    import pyarrow as pa

    recs, parts = [], []
    for r in sorted(records, key=lambda r: r.run_id):
        unfinished = r.status not in ("complete", "diverged")
        if not r.shipped and unfinished and not r.rounds_path.exists():
            recs.append(r)  # failed before its first rounds, or just started: no rounds yet
            continue
        # a damaged rounds file (truncated, no round column, text for numbers) is the index's
        # to report (on_error: stop naming it, or leave the run out), as for table and publish
        if not unfinished and not index.rounds_ok(r, report=True):
            continue
        t = index.rounds_table(r)
        if t is None and not unfinished:
            continue  # unreadable: reported through on_error
        recs.append(r)
        if t is not None:
            parts.append(normalise_rounds(t, r.run_id))
    runs = table_of([run_row(r.meta, r.run_id) for r in recs], runs_columns())
    if parts:
        rounds = pa.concat_tables(parts, promote_options="default")
    else:
        from fedbench.results.schema import rounds_schema

        rounds = rounds_schema().empty_table()
    return runs, rounds


def write_table(table: pa.Table, path: Path, what: dict[str, str]) -> None:
    """A table as Parquet for keeping: zstd, dictionary-encoded, statistics; `what` (the
    command, the schema version) in the file's key-value metadata; atomic."""
    import io

    import pyarrow.parquet as pq

    meta = dict(table.schema.metadata or {})
    meta.update({f"fedbench.{k}".encode(): str(v).encode() for k, v in what.items()})
    meta[b"fedbench.schema_version"] = str(SCHEMA_VERSION).encode()
    buf = io.BytesIO()
    pq.write_table(
        table.replace_schema_metadata(meta),
        buf,
        compression="zstd",
        compression_level=9,
        use_dictionary=True,
        row_group_size=1 << 20,
    )
    atomic_write_bytes(path, buf.getvalue())


def export(index, records: Iterable, out: Path, command: str) -> dict:
    """OUT/runs.parquet and OUT/rounds.parquet; returns {"runs": n, "rounds": m}."""
    runs, rounds = export_tables(index, records)
    out.mkdir(parents=True, exist_ok=True)
    write_table(runs, out / "runs.parquet", {"made_by": command})
    write_table(rounds, out / "rounds.parquet", {"made_by": command})
    return {"runs": runs.num_rows, "rounds": rounds.num_rows}


__all__ = [
    "CONFIG_DEVICE",
    "export",
    "export_tables",
    "meta_from_row",
    "rounds_columns",
    "run_row",
    "runs_columns",
    "write_table",
]
