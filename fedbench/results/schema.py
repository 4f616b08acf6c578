"""The records' schema: the columns of every rounds.parquet and of the exported runs table, the
keys of every run.json, and the normalising of older records to them.

Every rounds.parquet has the same columns with the same types whatever the method: the common
columns below, then every registered method's `record_fields` (fedbench.methods.base.RecordField),
null where a run or a round does not record them. docs/results-schema.md is generated from these
lists (`fedbench docs --write`; tests/test_docs.py fails while it is stale).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fedbench.atomic import json_safe
from fedbench.errors import FedbenchError

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

# run.json's layout. 1: before it was recorded; 2: schema_version, method_version, rows,
# data.fingerprint, strict JSON (null for non-finite numbers); 3: every key always present
# (null where it does not apply), rounds.parquet with run_id and one column set for all methods.
SCHEMA_VERSION = 3
# the oldest layout read without loss: older records are normalised on read and export, and
# only records before it are noted as another fedbench's
LOSSLESS_FROM = 2


@dataclass(frozen=True)
class Column:
    name: str
    type: str  # int64 | float64 | bool | string | list<int64> | list<float64>
    unit: str
    when: str  # when it holds a value
    null: str  # what null (and NaN, for floats) means


_EVAL = "rounds with an evaluation (every eval_every rounds, the last round, round 0)"
_ROW = "every row"
ROUND_COLUMNS = (
    Column("run_id", "string", "", _ROW, "never null: the run's folder name in results/"),
    Column("round", "int64", "", _ROW, "never null; 0: the initial model (evaluated, not trained)"),
    Column("lr", "float64", "", _ROW, "never null: the local learning rate of the round"),
    Column(
        "round_seconds", "float64", "s", _ROW,
        "never null; 0 at round 0: wall time of the round's training (with stack_size > 1 it "
        "includes waiting for stack-mates)",
    ),
    Column("cum_seconds", "float64", "s", _ROW, "never null: the sum of round_seconds"),
    Column("n_full", "int64", "devices", _ROW, "never null: devices that ran all their work"),
    Column("n_partial", "int64", "devices", _ROW, "never null: stragglers kept with part of it"),
    Column("n_dropped", "int64", "devices", _ROW, "never null: stragglers dropped"),
    Column(
        "grad_evals", "int64", "mini-batches", _ROW,
        "never null: gradient evaluations of the round's local training, summed over devices",
    ),
    Column(
        "clients", "list<int64>", "device ids", _ROW,
        "never null; empty at round 0: the devices sampled (and kept) this round",
    ),
    Column(
        "units", "list<int64>", "epochs or steps", _ROW,
        "never null; empty at round 0: each kept device's work (steps when local_steps is set)",
    ),
    Column("dropped", "list<int64>", "device ids", _ROW, "never null; empty: nobody dropped"),
    Column(
        "local_loss", "float64", "nats", "every trained round",
        "null at round 0; NaN when every device was dropped: the weighted mean local loss",
    ),
    Column(
        "test_loss", "float64", "nats", _EVAL + " on classification data",
        "null: not evaluated this round, or a quadratic problem (see dist_to_opt)",
    ),
    Column(
        "test_acc", "float64", "fraction (0-1; tables print %)", _EVAL + " on classification data",
        "null: not evaluated this round, or a quadratic problem",
    ),
    Column(
        "train_loss", "float64", "nats", _EVAL + " with eval_train=true",
        "null: not evaluated this round, eval_train=false, or a quadratic problem",
    ),
    Column("train_acc", "float64", "fraction (0-1)", _EVAL + " with eval_train=true",
           "null: as train_loss"),
    Column(
        "local_acc", "float64", "fraction (0-1)", "every trained round with eval_local=true",
        "null: eval_local=false, round 0, every device dropped, or a quadratic problem; the "
        "devices' weighted mean accuracy of their local models on their own training data",
    ),
    Column(
        "dist_to_opt", "float64", "", _EVAL + " on the quadratic problem",
        "null: not evaluated this round, or classification data; max |w - x*|",
    ),
    Column("eval_seconds", "float64", "s", _EVAL, "null: not evaluated this round"),
)  # fmt: skip
# columns that hold wall time (differ between any two runs of one config)
SECONDS_COLUMNS = ("round_seconds", "cum_seconds", "eval_seconds")


def method_columns() -> list[Column]:
    """Every registered method's record fields, one column per name (methods that share a name
    share its type and unit: fedbench.methods.registry checks it)."""
    from fedbench.methods import METHODS

    by_name: dict[str, tuple] = {}
    for cls in METHODS.values():
        for f in cls.record_fields:
            _, methods = by_name.setdefault(f.name, (f, []))
            always = f.when == "every trained round"
            methods.append(cls.name if always else f"{cls.name} ({f.when})")
    common = {c.name for c in ROUND_COLUMNS}
    out = []
    for name, (f, methods) in by_name.items():
        if name in common:
            raise FedbenchError(f"record field {name!r} of {methods[0]} is a common column")
        when = ", ".join(methods) + ", rounds > 0"
        null = f"null: another method, or a round where it is not recorded; {f.help}"
        out.append(Column(name, f.type, f.unit, when, null))
    return out


def rounds_columns() -> list[Column]:
    return [*ROUND_COLUMNS, *method_columns()]


def arrow_type(text: str) -> pa.DataType:
    import pyarrow as pa

    scalar = {"int64": pa.int64(), "float64": pa.float64(), "bool": pa.bool_(),
              "string": pa.string()}  # fmt: skip
    if text.startswith("list<"):
        return pa.list_(scalar[text[5:-1]])
    return scalar[text]


def rounds_schema() -> pa.Schema:
    import pyarrow as pa

    return pa.schema([(c.name, arrow_type(c.type)) for c in rounds_columns()])


def _value(v: Any, typ: str) -> Any:
    """A record's value as the column's type wants it (numpy/torch scalars to Python)."""
    if v is None:
        return None
    if typ.startswith("list<"):
        return [_value(x, typ[5:-1]) for x in v]
    if typ == "int64":
        if isinstance(v, float) and math.isnan(v):
            return None
        return int(v)
    if typ == "float64":
        return float(v)
    if typ == "bool":
        return bool(v)
    return str(v)


def rounds_table(rows: list[dict], run_id: str) -> pa.Table:
    """A run's per-round records as rounds.parquet's table: every column of the schema, null
    where a row lacks the field. A field no method declares is an error (declare it in the
    method's record_fields)."""
    import pyarrow as pa

    schema = rounds_schema()
    undeclared = sorted({k for r in rows for k in r} - set(schema.names))
    if undeclared:
        raise FedbenchError(
            f"run {run_id} records {', '.join(undeclared)}, which no method declares; add them "
            "to the method's record_fields (fedbench.methods.base.RecordField)"
        )
    arrays = []
    for c in rounds_columns():
        if c.name == "run_id":
            arrays.append(pa.array([run_id] * len(rows), pa.string()))
        else:
            values = [_value(r.get(c.name), c.type) for r in rows]
            arrays.append(pa.array(values, arrow_type(c.type)))
    return pa.Table.from_arrays(arrays, schema=schema)


def normalise_rounds(table: pa.Table, run_id: str) -> pa.Table:
    """A rounds table of any schema version as this build writes it: run_id set, every column
    in the schema's order and type, typed nulls for columns the record lacks. Columns the
    schema does not know (a plugin's fields) are kept after the schema's."""
    import pyarrow as pa
    import pyarrow.compute as pc

    n = table.num_rows
    arrays, fields = [], []
    for c in rounds_columns():
        typ = arrow_type(c.type)
        if c.name == "run_id":
            col = pa.array([run_id] * n, pa.string())
        elif c.name in table.column_names:
            col = table.column(c.name)
            if col.type != typ:
                col = _cast(col, typ, c.name, run_id, pc)
        else:
            col = pa.nulls(n, typ)
        arrays.append(col)
        fields.append(pa.field(c.name, typ))
    for name in table.column_names:
        if name not in {f.name for f in fields}:
            arrays.append(table.column(name))
            fields.append(pa.field(name, table.schema.field(name).type))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def _cast(col, typ, name: str, run_id: str, pc):
    import pyarrow as pa

    if pa.types.is_floating(col.type) and pa.types.is_integer(typ):
        col = pc.if_else(pc.is_nan(col), pa.scalar(None, col.type), col)  # NaN: not recorded
    try:
        return col.cast(typ)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise FedbenchError(
            f"run {run_id}: column {name} is {col.type}, not {typ} ({e}); rerun it"
        ) from None


def recorded(df: pd.DataFrame) -> pd.DataFrame:
    """The columns a run recorded: those with a value in some row (a column every row leaves
    null is a field the run does not have, as in records before schema 3)."""
    keep = [c for c in df.columns if c in ("round", "run_id") or df[c].notna().any()]
    return df[keep] if len(keep) < len(df.columns) else df


# ---------------------------------------------------------------- run.json

# run.json's summary (fedbench.results.records.summarize)
SUMMARY_KEYS = (
    "rounds_run",
    "best_acc",
    "final_acc",
    "mean_round_seconds",
    "total_seconds",
    "final_train_loss",
    "final_local_loss",
    "target_acc",
    "rounds_to_target",
    "seconds_to_target",
)


RUN_KEYS = (
    ("schema_version", "int", "the layout of this file (SCHEMA_VERSION)"),
    ("run_id", "str", "the run's name: <method>-<preset or dataset>-s<seed>-<config_hash>"),
    ("config", "object", "every config field (fedbench.config.RunConfig), method_params inside"),
    ("config_hash", "str", "the run's identity: fedbench.identity.config_hash"),
    ("method_version", "int", "the method's behaviour version, part of the identity"),
    ("status", "str", "running | complete | diverged | failed | interrupted"),
    ("error", "str", "the error's first line (failed runs); null otherwise"),
    (
        "stopped_at_target",
        "int",
        "the round a stop_at_target run reached target_acc; null otherwise",
    ),  # fmt: skip
    ("fedbench_version", "str", "the fedbench that wrote it"),
    ("torch_version", "str", "torch's version"),
    ("python_version", "str", "Python's version"),
    ("host", "str", "the machine's name"),
    ("started", "str", "ISO 8601, UTC"),
    ("ended", "str", "ISO 8601, UTC; null while running"),
    ("device", "str", "the torch device used (cpu, cuda:0); null if it failed before"),
    ("device_name", "str", "the device in words (CPU model and flags, GPU name)"),
    ("data", "object", "the data's description, sizes, fingerprint and partition_sha256"),
    ("model_params", "int", "the model's parameter count"),
    ("threads", "int", "torch CPU threads"),
    ("tf32", "bool", "CUDA float32 matrix work in TF32 (FEDBENCH_TF32=1); false otherwise"),
    ("stack_size", "int", "runs trained as one stack (above 1: seconds include stack-mates')"),
    ("rows", "int", "rows of rounds.parquet"),
    (
        "cpu_seconds",
        "float",
        "the process's CPU seconds from started to ended, split evenly "
        "over a stack; null: resumed, or recorded before it was kept",
    ),  # fmt: skip
    ("load_start", "float", "the machine's 1-minute load average when the run started"),
    ("load_end", "float", "the machine's 1-minute load average when the run ended"),
    ("summary", "object", "fedbench.results.summarize: best and final accuracy, seconds, ..."),
)


def normalise_meta(meta: dict) -> dict:
    """A run.json of any schema version with every key of RUN_KEYS (null where it lacks one),
    the summary's keys too; its schema_version stays what the record was written with."""
    out = {k: meta.get(k) for k, _, _ in RUN_KEYS}
    out.update({k: v for k, v in meta.items() if k not in out})
    if out["schema_version"] is None:
        out["schema_version"] = 1
    summary = out.get("summary")
    if isinstance(summary, dict):
        out["summary"] = {**{k: summary.get(k) for k in SUMMARY_KEYS}, **summary}
    return out


def json_text(obj: Any) -> str:
    """Canonical JSON text (sorted keys, no spaces) for object values in a Parquet column."""

    return json.dumps(json_safe(obj), sort_keys=True, separators=(",", ":"))
