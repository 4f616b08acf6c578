"""The index of a results folder: every run keyed by its identity (fedbench.identity) and the
record chosen for a config (one run's record: run_record.py; the summary table: summaries.py).
Imports no torch (tests/test_imports.py).
"""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from fedbench.config import config_from_dict
from fedbench.errors import FedbenchError
from fedbench.identity import config_hash
from fedbench.results.records import _first_line
from fedbench.results.run_record import (
    FINISHED,
    NUMERIC_COLUMNS,
    UNFINISHED,
    RunRecord,
    _check_meta,
    expected_rows,
    rounds_damage,
)
from fedbench.results.schema import recorded
from fedbench.safe_read import PARQUET_CAP, Refused, entry_kind, open_regular, read_json

ANY = object()


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
    `shipped`: also the runs of the shipped store (fedbench.results.shipped_store; a Store, or
    True for the default one), matched by identity and data fingerprint like local runs; where one
    run is both shipped and local, the shipped record is used (tables read the same in any clone).
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
        from fedbench.results.shipped_store import default_store

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
        self._shipped_used: dict[str, str] = {}  # run id -> group, of shipped records used
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
            if not self._config_valid(d, meta):
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

    def _config_valid(self, d: Path, meta: dict) -> bool:
        """Whether run.json's config holds values a run could have had (lr=inf cannot: the
        file was edited or damaged); if not, that goes through on_error, naming the field."""
        try:
            config_from_dict(meta["config"]).validate_fields()
        except FedbenchError as e:
            self._problem(
                f"{d / 'run.json'} has a config no run could have ({_first_line(e)}); "
                f"rerun or delete {d}"
            )
            return False
        return True

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
            self._shipped_used[rec.run_id] = rec.group
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
            return self._local_instead(rec, fingerprint) if rec.shipped else None
        return rec

    def _local_instead(self, shipped: RunRecord, fingerprint) -> RunRecord | None:
        """A finished local run with sound rounds of a config whose shipped run's group is
        damaged (the shipped record is preferred by find): used in its place, or None."""
        local = [
            r
            for r in self._candidates(shipped.key, fingerprint)
            if not r.shipped and r.status in FINISHED and self.rounds_ok(r, report=True)
        ]
        if not local:
            return None
        rec = max(local, key=lambda r: r.ended)
        self.use(rec)
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
        shipped = [g for g in self._shipped_used.values() if not self.store.rounds_problem(g)]
        if shipped:  # a damaged group's runs are not used (its file is said)
            out.append(
                f"note: {len(shipped)} run(s) used here are shipped runs (the store in "
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
        if rec.shipped:
            return self._group_ok(rec, report)
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

    def _group_ok(self, rec: RunRecord, report: bool) -> bool:
        """Whether a shipped run's group has a sound rounds.parquet (its footer, read once per
        group: Store.rounds_problem); report=True says a damaged one once per group."""
        why = self.store.rounds_problem(rec.group)
        group = rec.run_dir.parent
        if why and report and group not in self._reported:
            self._reported.add(group)
            self._problem(why)
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
