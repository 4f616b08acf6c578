"""The shipped store: the runs behind the committed tables, kept in the repository in exported
form (fedbench.results.export) and read beside the local results folder.

    results/shipped/<group>/runs.parquet     one row per run (identity, fingerprint, summary, ...)
    results/shipped/<group>/rounds.parquet   one row per run and round
    results/shipped/calibration/<table>-<dataset>.json   the fits --calibrated tables use

Read-only: only `fedbench publish` writes it, adding runs whose identity and data fingerprint
(config_hash, data_fingerprint) are not in the store yet, into a group (by default named for the
table it publishes); a run shared by several tables is kept once, in the group published first.
Where it is: see store_root. The whole store stays under SIZE_BUDGET bytes (tests/test_store.py
checks it). Files are sorted by run_id (and round), dictionary-encoded, zstd-compressed.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from fedbench.errors import FedbenchError
from fedbench.results.schema import ROUND_COLUMNS, arrow_type
from fedbench.safe_read import PARQUET_CAP, open_regular

if TYPE_CHECKING:
    import pyarrow as pa

STORE_ENV = "FEDBENCH_STORE"
SIZE_BUDGET = 50 * 1024 * 1024  # bytes, the whole store
CALIBRATION = "calibration"
# the runs.parquet columns a shipped run is read from (fedbench.results.export.meta_from_row)
RUNS_COLUMNS = ("run_id", "config_hash", "method_version", "status", "method", "dataset",
                "method_params", "schema_version")  # fmt: skip
GENERATION = "generation"  # a publish's token, in both files' metadata (fedbench.generation)
_TOKEN = f"fedbench.{GENERATION}".encode()


def store_root() -> Path | None:
    """The shipped store's folder: $FEDBENCH_STORE (`none`: no store); else results/shipped of
    the source tree fedbench is imported from (a clone, an editable install), so `fedbench
    table NAME` finds it from any folder; else (an installed wheel, which carries no runs)
    ./results/shipped when the current folder is a clone; else None. $FEDBENCH_STORE naming
    a file is refused (one line)."""
    env = os.environ.get(STORE_ENV)
    if env is not None:
        if env.strip().lower() in ("", "none"):
            return None
        if os.path.lexists(env) and not os.path.isdir(env):
            raise FedbenchError(
                f"{STORE_ENV}={env} is not a folder; set it to the shipped store's folder (a "
                f"clone's results/shipped) or to none"
            )
        return Path(env)
    tree = Path(__file__).resolve().parents[2]  # fedbench/results/shipped_store.py -> the tree
    if (tree / "pyproject.toml").is_file():
        return tree / "results" / "shipped"
    here = Path("results") / "shipped"
    return here.resolve() if here.is_dir() else None


class Store:
    """The runs of a shipped store (each group's runs.parquet read on first use; rounds read
    per group on first use and sliced per run)."""

    def __init__(self, root: Path | str | None):
        self.root = None if root is None else Path(root)
        self._runs: list[tuple[str, dict]] | None = None
        self._rounds: dict[str, pa.Table] = {}
        self._generation: dict[str, bytes | None] = {}  # group -> its runs.parquet's token
        self._rows: dict[str, int | None] = {}  # group -> rounds rows its runs.parquet says
        self._footer: dict[str, str | None] = {}  # group -> what is wrong with its rounds file

    def groups(self) -> list[str]:
        if self.root is None or not self.root.is_dir():
            return []
        return sorted(p.name for p in self.root.iterdir() if os.path.lexists(p / "runs.parquet"))

    def rows(self) -> list[tuple[str, dict]]:
        """(group, runs-table row) of every shipped run. A group whose runs.parquet is damaged
        is left out with one warning line naming the file (commands that need other groups go
        on; `fedbench publish` into it refuses)."""
        if self._runs is None:
            self._runs = []
            for g in self.groups():
                try:
                    table = self.runs_table(g)
                except FedbenchError as e:
                    _warn_once(str(e))
                    continue
                self._generation[g] = generation(table)
                self._rows[g] = _rows_said(table)
                self._runs += [(g, r) for r in table.to_pylist()]
        return self._runs

    def runs_table(self, group: str) -> pa.Table:
        """A group's runs.parquet, checked: readable, with the columns a run is read from."""
        path = self.root / group / "runs.parquet"
        table = self._read(path)
        missing = [c for c in RUNS_COLUMNS if c not in table.column_names]
        if missing:
            raise FedbenchError(
                f"shipped store file {path} lacks the column(s) {', '.join(missing)} (not written "
                f"by fedbench publish); {_restore(path)}"
            )
        why = wrong_type(table.schema, runs_types())
        if why:
            raise FedbenchError(f"shipped store file {path} {why}; {_restore(path)}")
        return table

    def _read(self, path: Path) -> pa.Table:
        try:
            return read_table(path)
        except Exception as e:
            raise FedbenchError(_unreadable(path, e)) from None

    def rounds(self, group: str, run_id: str) -> pa.Table:
        import pyarrow.compute as pc

        if group not in self._rounds:
            self._rounds[group] = self.rounds_file(group)
        t = self._rounds[group]
        return t.filter(pc.equal(t.column("run_id"), run_id))

    def rounds_file(self, group: str) -> pa.Table:
        """A group's rounds.parquet, checked (rounds_problem: its footer) and read."""
        why = self.rounds_problem(group)
        if why:
            raise FedbenchError(why)
        return self._read(self.root / group / "rounds.parquet")

    def rounds_problem(self, group: str) -> str | None:
        """What is wrong with a group's rounds.parquet, from its footer (no rows read; once per
        group): one line naming the file, what is wrong and what to do. None: it reads, has the
        columns and types publish writes, the rows its runs.parquet says, and is from the same
        publish. A shipped run counts as done only when its group passes (fedbench sweep)."""
        if group not in self._footer:
            self._footer[group] = self._footer_problem(group)
        return self._footer[group]

    def _footer_problem(self, group: str) -> str | None:
        import pyarrow.parquet as pq

        path = self.root / group / "rounds.parquet"
        try:
            with open_regular(path, PARQUET_CAP) as f:
                meta = pq.read_metadata(f)
            schema = meta.schema.to_arrow_schema()
        except Exception as e:
            return _unreadable(path, e)
        missing = [c for c in ("run_id", "round") if c not in schema.names]
        said = self._rows.get(group)
        why = (
            (f"lacks the column(s) {', '.join(missing)}" if missing else None)
            or wrong_type(schema, rounds_types())
            or (f"has {meta.num_rows} rows where runs.parquet says {said}"
                if said is not None and meta.num_rows != said else None)
        )  # fmt: skip
        if why:
            return f"shipped store file {path} {why}; {_restore(path)}"
        return self._other_publish(group, meta.metadata)

    def _other_publish(self, group: str, metadata) -> str | None:
        """A rounds.parquet from another publish than its runs.parquet (one killed between its
        two renames), said; None: the same one, or no token to tell."""
        ours, theirs = self._generation.get(group), (metadata or {}).get(_TOKEN)
        if ours and theirs and ours != theirs:
            return (
                f"shipped store file {self.root / group / 'rounds.parquet'} and its runs.parquet "
                f"are from different publishes; restore both from git (git checkout -- "
                f"{self.root / group}) and publish again"
            )
        return None

    def calibration(self, table: str, dataset: str) -> Path | None:
        if self.root is None:
            return None
        path = self.root / CALIBRATION / f"{table}-{dataset}.json"
        return path if path.is_file() else None

    def size(self) -> int:
        if self.root is None or not self.root.is_dir():
            return 0
        return sum(p.stat().st_size for p in self.root.rglob("*") if p.is_file())


def _unreadable(path: Path, e: Exception) -> str:
    first = (str(e).strip().splitlines() or [type(e).__name__])[0]
    return f"shipped store file {path} is unreadable ({first}); {_restore(path)}"


def _rows_said(runs: pa.Table) -> int | None:
    """The rounds rows a runs table says its runs have (None: a run that does not say)."""
    if "rows" not in runs.column_names:
        return None
    rows = runs.column("rows").to_pylist()
    ok = all(isinstance(n, int) and not isinstance(n, bool) for n in rows)
    return sum(rows) if ok else None


def runs_types() -> dict[str, pa.DataType]:
    from fedbench.results.export import runs_columns

    return {c.name: arrow_type(c.type) for c in runs_columns()}


def rounds_types() -> dict[str, pa.DataType]:
    """The common columns' types (those tables read; a method's own are checked where read)."""
    return {c.name: arrow_type(c.type) for c in ROUND_COLUMNS}


def wrong_type(schema: pa.Schema, types: dict[str, pa.DataType]) -> str | None:
    """The first column fedbench writes whose type is not the one it writes (a null column
    passes: it holds nothing); None: none. Columns it does not know (a newer build's) pass."""
    import pyarrow as pa

    for name in schema.names:
        want, have = types.get(name), schema.field(name).type
        if want is not None and have != want and have != pa.null():
            return f"has a {name} column of {have}, not {want} (not written by fedbench publish)"
    return None


def _restore(path: Path) -> str:
    return f"restore it from git (git checkout -- {path}) or set {STORE_ENV}=none"


_WARNED: set[str] = set()


def _warn_once(line: str) -> None:
    """A damaged store file, said once per process on stderr (read by many commands)."""
    import sys

    if line not in _WARNED:
        _WARNED.add(line)
        print(f"warning: {line}; its runs are left out", file=sys.stderr)


def generation(table: pa.Table) -> bytes | None:
    """The publish token a store file carries (None: written before tokens, or by export)."""
    return (table.schema.metadata or {}).get(_TOKEN)


def read_table(path: Path) -> pa.Table:
    """A store file read through fedbench.safe_read (a regular file under its cap)."""
    import pyarrow.parquet as pq

    with open_regular(path, PARQUET_CAP) as f:
        return pq.read_table(f)


_DEFAULT: dict[Path | None, Store] = {}


def default_store() -> Store:
    """The store of store_root(), read once per process."""
    root = store_root()
    if root not in _DEFAULT:
        _DEFAULT[root] = Store(root)
    return _DEFAULT[root]
