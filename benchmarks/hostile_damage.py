"""Damage the hostile cases do to the files the CLI wrote (benchmarks/hostile_cases.py): each
`how` takes a path and replaces what is there; RUN_DAMAGE and STORE_DAMAGE list them with names."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

from hostile_env import runs


def damage_first_run(file: str, how: Callable, folder="new") -> Callable:
    def setup(sb):
        how(runs(sb, folder)[0] / file)

    return setup


def damage_store(file: str, how: Callable, group="g") -> Callable:
    def setup(sb):
        how(sb / "store" / group / file)

    return setup


def truncate(p: Path):
    p.write_bytes(p.read_bytes()[: max(1, p.stat().st_size // 3)])


def garble(p: Path):
    p.write_bytes(b"PAR1" + os.urandom(400) + b"PAR1")


def empty(p: Path):
    p.write_bytes(b"")


def folder(p: Path):
    p.unlink()
    p.mkdir()


def link_outside(p: Path):
    p.unlink()
    p.symlink_to("/etc/hostname")


def dangling(p: Path):
    p.unlink()
    p.symlink_to(p.parent / "nowhere")


def text_json(value) -> Callable:
    def how(p: Path):
        p.write_text(value if isinstance(value, str) else json.dumps(value))

    return how


def parquet_edit(edit: Callable) -> Callable:
    def how(p: Path):
        import pyarrow.parquet as pq

        pq.write_table(edit(pq.read_table(p)), p)

    return how


def as_text(column: str) -> Callable:
    import pyarrow as pa

    def edit(t):
        i = t.schema.get_field_index(column)
        values = [str(v) for v in t.column(column).to_pylist()]
        return t.set_column(i, column, pa.array(values, pa.string()))

    return edit


def drop(column: str) -> Callable:
    return lambda t: t.drop([column])


def a_row_short(t):
    """The table less its last row (its metadata, the publish token, kept): it reads."""
    return t.slice(0, t.num_rows - 1)


def other_publish(t):
    """The table as another publish wrote it (its token changed)."""
    return t.replace_schema_metadata({**t.schema.metadata, b"fedbench.generation": b"other"})


def json_edit(edit: Callable) -> Callable:
    def how(p: Path):
        meta = json.loads(p.read_text())
        edit(meta)
        p.write_text(json.dumps(meta))

    return how


RUN_DAMAGE = [
    ("run.json", truncate, "truncated"),
    ("run.json", text_json([1, 2]), "a list"),
    ("run.json", json_edit(lambda m: m.update(config="text")), "config a text"),
    ("run.json", json_edit(lambda m: m["config"].update(rounds="many")), "rounds a text"),
    ("run.json", json_edit(lambda m: m["config"].update(lr=1e999)), "lr inf"),
    ("run.json", folder, "a folder"),
    ("run.json", link_outside, "a link outside"),
    ("rounds.parquet", truncate, "truncated"),
    ("rounds.parquet", garble, "garbled"),
    ("rounds.parquet", empty, "empty"),
    ("rounds.parquet", folder, "a folder"),
    ("rounds.parquet", parquet_edit(as_text("round")), "round as text"),
    ("rounds.parquet", parquet_edit(as_text("test_acc")), "test_acc as text"),
    ("rounds.parquet", parquet_edit(drop("round")), "no round column"),
]

STORE_DAMAGE = [
    ("runs.parquet", truncate, "truncated"),
    ("runs.parquet", garble, "garbled"),
    ("runs.parquet", folder, "a folder"),
    ("runs.parquet", parquet_edit(drop("method_params")), "no method_params"),
    ("runs.parquet", parquet_edit(as_text("seed")), "seed as text"),
    ("rounds.parquet", truncate, "truncated"),
    ("rounds.parquet", garble, "garbled"),
    ("rounds.parquet", parquet_edit(as_text("round")), "round as text"),
    ("rounds.parquet", parquet_edit(a_row_short), "a row short"),
    ("rounds.parquet", parquet_edit(other_publish), "from another publish"),
    ("rounds.parquet", link_outside, "a link outside"),
]
