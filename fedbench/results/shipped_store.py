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


def store_root() -> Path | None:
    """The shipped store's folder: $FEDBENCH_STORE (`none`: no store); else results/shipped of
    the source tree fedbench is imported from (a clone, an editable install), so `fedbench
    table NAME` finds it from any folder; else (an installed wheel, which carries no runs)
    ./results/shipped when the current folder is a clone; else None."""
    env = os.environ.get(STORE_ENV)
    if env is not None:
        return None if env.strip().lower() in ("", "none") else Path(env)
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
        return table

    def _read(self, path: Path) -> pa.Table:
        try:
            return read_table(path)
        except Exception as e:
            first = (str(e).strip().splitlines() or [type(e).__name__])[0]
            raise FedbenchError(
                f"shipped store file {path} is unreadable ({first}); {_restore(path)}"
            ) from None

    def rounds(self, group: str, run_id: str) -> pa.Table:
        import pyarrow.compute as pc

        if group not in self._rounds:
            self._rounds[group] = self.rounds_file(group)
        t = self._rounds[group]
        return t.filter(pc.equal(t.column("run_id"), run_id))

    def rounds_file(self, group: str) -> pa.Table:
        """A group's rounds.parquet, checked: readable, run_id and round, from the same
        publish as its runs.parquet."""
        path = self.root / group / "rounds.parquet"
        table = self._read(path)
        missing = [c for c in ("run_id", "round") if c not in table.column_names]
        if missing:
            raise FedbenchError(
                f"shipped store file {path} lacks the column(s) {', '.join(missing)}; "
                f"{_restore(path)}"
            )
        ours, theirs = self._generation.get(group), generation(table)
        if ours and theirs and ours != theirs:  # a publish killed between its two renames
            raise FedbenchError(
                f"shipped store group {self.root / group}: rounds.parquet and runs.parquet are "
                f"from different publishes; restore both from git (git checkout -- "
                f"{self.root / group}) and publish again"
            )
        return table

    def calibration(self, table: str, dataset: str) -> Path | None:
        if self.root is None:
            return None
        path = self.root / CALIBRATION / f"{table}-{dataset}.json"
        return path if path.is_file() else None

    def size(self) -> int:
        if self.root is None or not self.root.is_dir():
            return 0
        return sum(p.stat().st_size for p in self.root.rglob("*") if p.is_file())


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
    return (table.schema.metadata or {}).get(f"fedbench.{GENERATION}".encode())


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
