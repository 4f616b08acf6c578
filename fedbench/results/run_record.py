"""One run folder as its run.json records it (RunRecord), and what makes a run.json damaged: its
shape and the types of its fields. Imports no torch (tests/test_imports.py)."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from fedbench.config import FIELD_TYPES, field_kind, has_kind
from fedbench.errors import FedbenchError
from fedbench.results.records import SCHEMA_VERSION, STATUSES, SUMMARY_KEYS, _first_line
from fedbench.results.schema import LOSSLESS_FROM, recorded
from fedbench.safe_read import PARQUET_CAP, Refused, open_regular, shown

FINISHED = ("complete", "diverged")
# a run not (yet) finished: training now, or stopped by a signal, or its process killed; never
# damaged for that: its rounds so far are shown where flushed, and the next train or sweep of
# its config resumes it
UNFINISHED = ("running", "interrupted")
# per-round columns that tables and plots read as numbers: text there is damage
NUMERIC_COLUMNS = (
    "round",
    "test_acc",
    "test_loss",
    "train_acc",
    "train_loss",
    "local_loss",
    "local_acc",
    "round_seconds",
    "cum_seconds",
    "dist_to_opt",
)  # find()/finished(): runs on any data


def expected_rows(meta: dict) -> int | None:
    """Rows rounds.parquet must have for a finished run: run.json's `rows`, else (older
    records) rounds + 1, or stopped_at_target + 1; None where it cannot be told."""
    try:
        if meta.get("rows") is not None:
            return int(meta["rows"])
        if meta.get("status") == "complete":
            last = meta.get("stopped_at_target") or meta["config"]["rounds"]
            return int(last) + 1
        if meta.get("status") == "diverged":
            return int(meta["summary"]["rounds_run"]) + 1
    except (KeyError, TypeError, ValueError):
        pass
    return None


class RunRecord:
    """One run folder as recorded in its run.json (rounds.parquet is read only on demand)."""

    __slots__ = ("run_dir", "meta", "key", "group", "store")

    def __init__(self, run_dir: Path, meta: dict, key: str | None, group=None, store=None):
        self.run_dir, self.meta, self.key = run_dir, meta, key
        self.group = group  # the shipped store's group holding it (None: a local run folder)
        self.store = store  # that store (fedbench.results.shipped_store.Store)

    def rounds_table(self, columns: list[str] | None = None, parquet_meta=None):
        """Its rounds as stored (a pyarrow Table: the file's columns, or the store's; only
        `columns` of them when given). Raises what reading raises."""
        import pyarrow.parquet as pq

        columns = None if columns is None else list(dict.fromkeys(columns))  # each once
        if self.shipped:
            t = self.store.rounds(self.group, self.run_id)
            return t if columns is None else t.select([c for c in columns if c in t.column_names])
        with open_regular(self.rounds_path, PARQUET_CAP) as f:
            pf = pq.ParquetFile(f, metadata=parquet_meta)
            if columns is not None:
                have = set(pf.schema_arrow.names)
                columns = [c for c in columns if c in have]
            return pf.read(columns=columns, use_threads=False)

    def read_rounds(self, columns: list[str] | None = None) -> pd.DataFrame:
        """Its rounds: the columns it recorded (a value in some row), `columns` of them when
        given; a one-line FedbenchError when unreadable."""
        try:
            table = self.rounds_table(columns)
        except Exception as e:
            raise FedbenchError(rounds_damage(self, e)) from None
        return recorded(table.to_pandas(use_threads=False))

    @property
    def shipped(self) -> bool:
        return self.group is not None

    @property
    def run_id(self) -> str:
        return str(self.meta.get("run_id", self.run_dir.name))

    @property
    def status(self) -> str | None:
        return self.meta.get("status")

    @property
    def config(self) -> dict:
        return self.meta.get("config") or {}

    @property
    def summary(self) -> dict:
        return self.meta.get("summary") or {}

    @property
    def rounds_path(self) -> Path:
        return self.run_dir / "rounds.parquet"

    @property
    def fingerprint(self) -> str | None:
        """The data fingerprint the run recorded (None: a record from before fingerprints)."""
        return (self.meta.get("data") or {}).get("fingerprint")

    @property
    def method_version(self) -> int:
        v = self.meta.get("method_version")
        return v if isinstance(v, int) and not isinstance(v, bool) else 1

    @property
    def claim_name(self) -> str:
        """The name of the run's claim (fedbench.results.locks): its folder's name, without the
        -d<fingerprint> of a second run on other data."""
        name = self.run_dir.name
        return re.sub(r"-d[0-9a-f]{8}$", "", name)

    def shown_status(self) -> str | None:
        """The status to show: `running` only while a live process holds the run's claim; a
        run.json still saying running without one is `killed` (its process died)."""
        from fedbench.results.locks import claimed_elsewhere

        if self.status != "running":
            return self.status
        return "running" if claimed_elsewhere(self.run_dir.parent, self.claim_name) else "killed"

    @property
    def ended(self) -> str:
        return str(self.meta.get("ended") or self.meta.get("started") or "")

    def version_issues(self) -> list[str]:
        """Why this record is not one this build writes (empty: it is)."""

        out = []
        schema = self.meta.get("schema_version", 1)
        if not isinstance(schema, int) or schema < LOSSLESS_FROM:
            out.append(
                f"an older fedbench ({self.meta.get('fedbench_version', '?')}, run.json schema "
                f"{schema}; this build reads {LOSSLESS_FROM} to {SCHEMA_VERSION} without loss)"
            )
        elif schema > SCHEMA_VERSION:
            out.append(f"a newer fedbench (run.json schema {schema}; this build reads up to "
                       f"{SCHEMA_VERSION})")  # fmt: skip
        unknown = sorted(set(self.config) - set(FIELD_TYPES))
        if unknown:
            out.append(f"a fedbench with config fields this build lacks ({', '.join(unknown)}: "
                       "ignored)")  # fmt: skip
        return out


def _check_meta(meta: object) -> str | None:
    """What is wrong with the shape of a run.json (None: nothing)."""
    if not isinstance(meta, dict):
        return "not a JSON object"
    if not isinstance(meta.get("config"), dict):
        return "no config object"
    if not isinstance(meta["config"].get("method_params", {}), dict):
        return "config.method_params is not an object"
    if meta.get("status") not in STATUSES:
        return f"unknown status {shown(meta.get('status'))}"
    for k in ("summary", "data"):
        if meta.get(k) is not None and not isinstance(meta[k], dict):
            return f"{k} is not an object"
    for k, v in (meta.get("summary") or {}).items():
        if k in SUMMARY_KEYS and not (v is None or isinstance(v, (int, float))):
            return f"summary.{k} is {shown(v)}, not a number"
    return _wrong_type(meta)


MAX_TEXT = 4096  # characters of a text field in a config (a path is shorter)
# run.json fields readers use beside config and summary: their types (None allowed for each)
META_TYPES = {
    "run_id": str,
    "device_name": str,
    "error": str,
    "started": str,
    "ended": str,
    "rows": int,
    "stack_size": int,
    "data.fingerprint": str,
    "data.devices": int,
}
TYPE_NAMES = {"int": "an integer", "float": "a number", "bool": "true or false",
              "str": "text", "dict": "an object"}  # fmt: skip


def _wrong_type(meta: dict) -> str | None:
    """The first field of a run.json whose value has the wrong type (None: none): every config
    field this build knows (config.rounds as text is damage, not a default), then META_TYPES."""
    for name, value in meta["config"].items():
        if name not in FIELD_TYPES or value is None:
            continue  # a field of another build (version_issues notes it); None: its default
        kind, _ = field_kind(name)
        if not has_kind(value, kind):
            return f"config.{name} is {shown(value)}, not {TYPE_NAMES[kind]}"
        if isinstance(value, str) and len(value) > MAX_TEXT:
            return f"config.{name} is text of {len(value)} characters (a field holds {MAX_TEXT})"
    for key, typ in META_TYPES.items():
        head, _, tail = key.partition(".")
        value = (meta.get(head) or {}).get(tail) if tail else meta.get(head)
        if value is not None and (not isinstance(value, typ) or isinstance(value, bool)):
            return f"{key} is {shown(value)}, not {TYPE_NAMES[typ.__name__]}"
    return None


def rounds_damage(rec: RunRecord, e: Exception) -> str:
    """The one line for a run's rounds.parquet that cannot be read."""
    if rec.shipped and isinstance(e, FedbenchError):  # the store named its file already
        return str(e)
    why = e.why if isinstance(e, Refused) else f"is corrupt or truncated ({_first_line(e)})"
    return f"{rec.rounds_path} {why}; rerun it or delete {rec.run_dir}"
