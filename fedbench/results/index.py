"""The index of a results folder: every run keyed by its identity (fedbench.identity), the record
chosen for a config, and the summary of every run. Imports no torch (tests/test_imports.py).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pandas as pd

from fedbench.config import FIELD_TYPES, config_from_dict, field_kind, has_kind
from fedbench.errors import FedbenchError
from fedbench.identity import config_hash
from fedbench.results.records import (
    SCHEMA_VERSION,
    STATUSES,
    SUMMARY_KEYS,
    _first_line,
    summarize,
)
from fedbench.results.schema import LOSSLESS_FROM, recorded
from fedbench.safe_read import PARQUET_CAP, Refused, entry_kind, open_regular, read_json, shown

FINISHED = ("complete", "diverged")
# a run not (yet) finished: training now, or stopped by a signal, or its process killed; never
# damaged for that: its rounds so far are shown where flushed, and the next train or sweep of
# its config resumes it
UNFINISHED = ("running", "interrupted")
ANY = object()
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
        self.store = store  # that store (fedbench.results.store.Store)

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


def config_key(config: dict, method_version: int | None = None) -> str:
    """The identity of a stored config (see fedbench.identity); raises what this build cannot
    read in it (the index then leaves the run out, with a note)."""
    return config_hash(config_from_dict(config), method_version)


class RunIndex:
    """Every run under a results folder, keyed by its identity (the config hash of what it ran,
    see fedbench.identity), not by folder name. Reads only the run.json files, so indexing a
    thousand runs takes a fraction of a second.

    on_error="fail" raises a one-line FedbenchError naming the first damaged file (run.json
    that is not an object or has wrong types, rounds.parquet missing, truncated or shorter
    than run.json says); "skip" leaves such runs out and lists them in `problems`.
    Records from another fedbench version and folders that hold one run twice are listed in
    `notes` when a record is used; strict=True makes that an error.
    `prefix`: index only folders whose name starts with it (a run's own folders).
    `shipped`: also the runs of the shipped store (fedbench.results.store; a Store, or True for
    the default one), matched by identity and data fingerprint like local runs; where one run
    is both shipped and local, the shipped record is used (tables read the same in any clone).
    """

    def __init__(
        self,
        results: Path | str,
        on_error: str = "fail",
        must_exist: bool = True,
        strict: bool = False,
        prefix: str | None = None,
        shipped=False,
    ):
        from fedbench.results.store import default_store

        self.store = default_store() if shipped is True else (shipped or None)
        self.results = Path(results)
        self.on_error, self.strict = on_error, strict
        self.skip_option = "--on-error skip"  # what on_error="skip" is called where it is read
        self.problems: list[str] = []
        self.by_key: dict[str, list[RunRecord]] = {}
        self._valid: dict[Path, str | None] = {}  # run dir -> what is wrong with its rounds
        self._reported: set[Path] = set()
        self._meta: dict = {}  # run dir -> Parquet footer read by rounds_ok (read once)
        self._old: dict[str, list[str]] = {}  # version issue -> run folders using it
        self._copies: dict[Path, list[Path]] = {}  # used folder -> other folders of one run
        self._multi_data: set[str] = set()  # keys with finished runs on different data
        self._unreadable: list[str] = []  # run folders whose config this build cannot hash
        self._shipped_used: set[str] = set()  # run ids of shipped records used
        if self.store is not None:
            self._add_shipped()
        self.unfinished: dict[str, int] = {}  # shown status -> runs (summary_frame counts them)
        self.no_summary: list[Path] = []  # finished runs' run.json without a summary
        if not self.results.is_dir():
            if must_exist and not any(r.shipped for r in self.records()):
                raise FedbenchError(
                    f"results directory {self.results} does not exist; "
                    "run fedbench sweep (or fedbench train) first, or pass --results"
                )
            return
        dirs = self.results.glob(f"{prefix}*") if prefix else self.results.iterdir()
        for d in sorted(dirs):
            meta = None if d.name.startswith(".") else self._read_meta(d)
            if meta is None:
                continue
            rec = RunRecord(d, meta, None)
            try:
                rec.key = config_key(meta["config"], rec.method_version)
            except Exception as e:  # e.g. a method or value this build does not know
                self._unreadable.append(f"{d.name} ({_first_line(e)})")
                continue
            self.by_key.setdefault(rec.key, []).append(rec)
        if self._unreadable and self.strict:
            raise FedbenchError(
                f"{len(self._unreadable)} run(s) in {self.results} have a config this fedbench "
                f"cannot read, e.g. {self._unreadable[0]}; drop --strict to leave them out"
            )

    def _read_meta(self, d: Path) -> dict | None:
        """The run.json of folder d, checked; None where d holds no run, or its run.json is
        passed over (reported through on_error: a link, a FIFO, a device, over its cap, not
        JSON, wrong types)."""
        path = d / "run.json"
        if not os.path.lexists(path):
            return None
        link = entry_kind(d)
        if link is not None:  # a run folder fedbench did not make: written through, never
            self._problem(f"{d} is {link}, not a run folder fedbench wrote; delete it")
            return None
        try:
            meta = read_json(path)
            bad = _check_meta(meta)
            if bad:
                raise ValueError(bad)
        except Refused as e:
            self._problem(f"{e}; fedbench reads only the regular files it wrote: delete it")
            return None
        except (ValueError, OSError) as e:
            self._problem(f"{path} is corrupt ({_first_line(e)}); rerun or delete {d}")
            return None
        return meta

    def _add_shipped(self) -> None:
        from fedbench.results.export import meta_from_row

        for group, row in self.store.rows():
            meta = meta_from_row(row)
            rec = RunRecord(self.store.root / group / row["run_id"], meta, None, group, self.store)
            try:
                rec.key = config_key(meta["config"], rec.method_version)
            except Exception as e:
                self._unreadable.append(f"shipped {row['run_id']} ({_first_line(e)})")
                continue
            self.by_key.setdefault(rec.key, []).append(rec)

    def _problem(self, message: str) -> None:
        if self.on_error == "skip":
            self.problems.append(message)
        else:
            raise FedbenchError(f"{message} (or pass {self.skip_option})")

    def __len__(self) -> int:
        return sum(len(v) for v in self.by_key.values())

    def records(self):
        for recs in self.by_key.values():
            yield from recs

    # ---- choosing the record of a config
    def find(self, key: str, fingerprint=ANY) -> RunRecord | None:
        """The record of a config (on data with this fingerprint; a record without one, from
        before fingerprints, matches any): a finished one if any (the latest), else the
        latest other. The record is `used`: its notes are collected."""
        recs = self._candidates(key, fingerprint)
        if not recs:
            return None
        finished = [r for r in recs if r.status in FINISHED]
        rec = max(finished or recs, key=lambda r: (r.shipped, r.ended))
        self.use(rec, recs)
        return rec

    def _candidates(self, key: str, fingerprint) -> list[RunRecord]:
        recs = self.by_key.get(key, [])
        if fingerprint is ANY:
            return recs
        return [r for r in recs if r.fingerprint in (None, fingerprint)]

    def runs(self, key: str) -> list[RunRecord]:
        """One record per run of a config: per data fingerprint, the one find() would use."""
        out = []
        for fp in dict.fromkeys(r.fingerprint for r in self.by_key.get(key, [])):
            rec = self.find(key, fp)
            if rec is not None and rec not in out:
                out.append(rec)
        return out

    def use(self, rec: RunRecord, same_key: list[RunRecord] | None = None) -> None:
        """Note what a used record needs said: another version, copies of it, other data."""
        for issue in rec.version_issues():
            if self.strict:
                raise FedbenchError(
                    f"{rec.run_dir / 'run.json'} was written by {issue}; rerun it "
                    "(fedbench train --overwrite) or drop --strict"
                )
            self._old.setdefault(issue, [])
            if rec.run_dir not in self._old[issue]:
                self._old[issue].append(rec.run_dir)
        same_key = same_key if same_key is not None else self.by_key.get(rec.key, [])
        no_summary = rec.status in FINISHED and not rec.summary and not rec.shipped
        if no_summary and rec.run_dir / "run.json" not in self.no_summary:
            self.no_summary.append(rec.run_dir / "run.json")  # no fedbench writes one so
        if rec.shipped:
            self._shipped_used.add(rec.run_id)
        copies = [
            r.run_dir
            for r in same_key
            if r is not rec
            and not (r.shipped or rec.shipped)  # a shipped run also here is not a copy to note
            and r.fingerprint == rec.fingerprint
            and r.status == rec.status
        ]
        if copies:
            self._copies[rec.run_dir] = copies
        fps = {r.fingerprint for r in same_key if r.status in FINISHED and r.fingerprint}
        if len(fps) > 1 and rec.key:
            self._multi_data.add(rec.key)

    def finished(self, key: str, check_files: bool = True, fingerprint=ANY) -> RunRecord | None:
        """The finished (complete or diverged) run of a config with readable rounds, or None.
        A damaged rounds.parquet is reported through on_error."""
        rec = self.find(key, fingerprint)
        if rec is None or rec.status not in FINISHED:
            return None
        if check_files and not self.rounds_ok(rec, report=True):
            return None
        return rec

    def fingerprints(self, key: str) -> set[str | None]:
        """The data fingerprints of a config's finished runs (None: not recorded)."""
        return {r.fingerprint for r in self.by_key.get(key, []) if r.status in FINISHED}

    @property
    def notes(self) -> list[str]:
        """Lines for under a table: old-version records used, copies, runs on other data."""
        out = []
        for issue, dirs in self._old.items():
            out.append(
                f"note: {len(dirs)} run(s) used here were written by {issue}, e.g. {dirs[0]}; "
                "--strict refuses them"
            )
        for used, copies in self._copies.items():
            names = ", ".join(c.name for c in copies)
            out.append(f"note: {used.name} is one run held in several folders (also {names}); "
                       "using one of them")  # fmt: skip
        if self._unreadable:
            out.append(
                f"note: {len(self._unreadable)} run(s) left out: their config cannot be read by "
                f"this fedbench, e.g. {self._unreadable[0]}; --strict refuses them"
            )
        if self._shipped_used:
            out.append(
                f"note: {len(self._shipped_used)} run(s) used here are shipped runs (the store in "
                "results/shipped, read-only; fedbench publish adds to it)"
            )
        if self.unfinished:
            counts = ", ".join(f"{n} {status}" for status, n in self.unfinished.items())
            out.append(
                f"note: runs not finished ({counts}) are shown with their rounds so far; "
                "`fedbench train` or `fedbench sweep` of the same config resumes an interrupted "
                "or killed one"
            )
        if self.no_summary:
            out.append(
                f"note: {len(self.no_summary)} finished run(s) have no summary in their run.json, "
                f"e.g. {self.no_summary[0]}; their summary is computed from rounds.parquet"
            )
        if self._multi_data:
            out.append(
                f"note: {len(self._multi_data)} config(s) have finished runs on different data "
                "(data fingerprint in run.json); using the latest of each"
            )
        return out

    # ---- rounds.parquet
    def rounds_ok(self, rec: RunRecord, report: bool = False) -> bool:
        """Whether rounds.parquet is there, its footer reads (cheap: metadata only) and it
        has the rows run.json says; report=True sends what is wrong through on_error."""
        if rec.shipped:  # checked when published
            return True
        if rec.run_dir not in self._valid:
            self._valid[rec.run_dir] = self._rounds_problem(rec)
        why = self._valid[rec.run_dir]
        if rec.status in UNFINISHED:  # not damaged: training, or stopped before it wrote them
            return why is None
        if why and report and rec.run_dir not in self._reported:
            self._reported.add(rec.run_dir)
            self._problem(
                f"{rec.rounds_path} {why}; rerun it (fedbench sweep reruns it) "
                f"or delete {rec.run_dir}"
            )
        return why is None

    def _rounds_problem(self, rec: RunRecord) -> str | None:
        import pyarrow.parquet as pq

        try:
            with open_regular(rec.rounds_path, PARQUET_CAP) as f:
                meta = pq.read_metadata(f)
        except Refused as e:
            return e.why
        except Exception:
            return "is missing, corrupt or truncated"
        self._meta[rec.run_dir] = meta
        want = expected_rows(rec.meta) if rec.status in FINISHED else None
        if want is not None and meta.num_rows != want:
            return f"has {meta.num_rows} rows where run.json says {want}"
        if "round" not in meta.schema.names:
            return "has no round column"
        schema = meta.schema
        for i in range(len(schema)):
            col = schema.column(i)
            if col.path in NUMERIC_COLUMNS and col.physical_type.endswith("BYTE_ARRAY"):
                return f"has a {col.path} column of text, not numbers"
        return None

    def rounds(
        self, rec: RunRecord, columns: list[str] | None = None, quiet: bool = False
    ) -> pd.DataFrame | None:
        """The rounds of a run: the columns it recorded (a value in some row), only `columns`
        of them when given; None if unreadable and on_error is skip, or quiet (an unfinished
        run's rounds, which may be replaced as they are read)."""
        table = self.rounds_table(rec, columns, quiet)
        return None if table is None else recorded(table.to_pandas(use_threads=False))

    def rounds_table(self, rec: RunRecord, columns: list[str] | None = None, quiet: bool = False):
        """The rounds of a run as stored (a pyarrow Table: the file's columns, or the store's);
        None if unreadable and on_error is skip, or quiet (see rounds)."""
        try:
            return rec.rounds_table(columns, self._meta.get(rec.run_dir))
        except Exception as e:
            if quiet or rec.status in UNFINISHED:
                return None
            self._problem(rounds_damage(rec, e))
            return None


def rounds_damage(rec: RunRecord, e: Exception) -> str:
    """The one line for a run's rounds.parquet that cannot be read."""
    if rec.shipped and isinstance(e, FedbenchError):  # the store named its file already
        return str(e)
    why = e.why if isinstance(e, Refused) else f"is corrupt or truncated ({_first_line(e)})"
    return f"{rec.rounds_path} {why}; rerun it or delete {rec.run_dir}"


def load_summaries(
    results: Path, on_error: str = "fail", strict: bool = False
) -> tuple[pd.DataFrame, list[str]]:
    """One row per run (a folder copied under another name is one run): config fields that tell
    runs apart, and the summary. on_error="skip" leaves out unreadable runs and returns their
    messages; "fail" raises. Notes (old records, copies) are in the index: see summary_frame."""
    index = RunIndex(results, on_error=on_error, strict=strict)
    return summary_frame(index), index.problems


def summary_frame(index: RunIndex) -> pd.DataFrame:
    rows = []
    for key in index.by_key:
        for rec in index.runs(key):
            summary = _record_summary(index, rec)
            if summary is None:
                continue
            cfg = rec.config
            status = rec.shown_status() if rec.status in UNFINISHED else rec.status
            if status in ("running", "interrupted", "killed"):
                index.unfinished[status] = index.unfinished.get(status, 0) + 1
            rows.append(
                {
                    "run_id": rec.run_id,
                    "status": status,
                    "preset": cfg.get("preset"),
                    "method": cfg.get("method"),
                    "dataset": cfg.get("dataset"),
                    "seed": cfg.get("seed"),
                    "method_params": json.dumps(cfg.get("method_params", {}), sort_keys=True),
                    **{k: summary.get(k) for k in SUMMARY_KEYS},
                    # above 1: trained in a stack (training/stack.py), seconds include stack-mates'
                    "stack_size": rec.meta.get("stack_size", 1),
                }
            )
    return pd.DataFrame(rows)


def _record_summary(index: RunIndex, rec: RunRecord) -> dict | None:
    """A run's summary for the summary table; None: left out (its damage reported). An
    unfinished run's summary is of its rounds so far (none where they are not flushed yet)."""
    empty = pd.DataFrame({"round": [], "round_seconds": []})
    if rec.status == "failed" and not rec.rounds_path.exists():
        return summarize(empty, None)
    if rec.status in UNFINISHED:
        rounds = index.rounds(rec, quiet=True) if index.rounds_ok(rec) else None
        if rounds is not None:
            rounds = _summary_or_problem(index, rec, rounds, quiet=True)
        return rounds or summarize(empty, rec.config.get("target_acc"))
    if not index.rounds_ok(rec, report=True):
        return None
    if rec.summary:
        return rec.summary
    rounds = index.rounds(rec)
    return None if rounds is None else _summary_or_problem(index, rec, rounds)


def _summary_or_problem(
    index: RunIndex, rec: RunRecord, rounds: pd.DataFrame, quiet: bool = False
) -> dict | None:
    try:
        return summarize(rounds, rec.config.get("target_acc"))
    except Exception as e:  # missing columns, wrong types
        if not quiet:
            index._problem(f"{rec.rounds_path} cannot be summarized ({_first_line(e)}); rerun it")
        return None
