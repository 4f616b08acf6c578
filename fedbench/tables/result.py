"""What evaluating a table gives (data only): the user's Selection, each CellResult, each
ClaimResult, and the TableResult that holds them."""

from __future__ import annotations

import math
import shlex
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fedbench.tables.additions import ADDED
from fedbench.tables.claims import Claim, Verdict
from fedbench.tables.paper_values import PaperValue

if TYPE_CHECKING:
    from fedbench.tables.spec import Cell, TableSpec


@dataclass
class Selection:
    """What the user chose on top of a table spec; echoed in the fill-in commands."""

    dataset: str | None = None
    seeds: tuple[int, ...] | None = None
    preset: str | None = None
    sets: dict[str, Any] = field(default_factory=dict)
    results: str = "results"
    # the user's selection when this one is at a calibrated value: commands echo it + --calibrated
    calibrated_from: Selection | None = None
    # rows the user adds (--add-method texts, fedbench.tables.additions) and the plugins loaded
    additions: tuple[str, ...] = ()
    plugins: tuple[str, ...] = ()

    def options(self) -> str:
        if self.calibrated_from is not None:
            return " ".join(x for x in (self.calibrated_from.options(), "--calibrated") if x)
        out = [f"--plugin {shlex.quote(p)}" for p in self.plugins]
        out += [f"--add-method {shlex.quote(a)}" for a in self.additions]
        if self.preset:
            out.append(f"--preset {self.preset}")
        if self.seeds is not None:
            out.append("--seeds " + ",".join(str(s) for s in self.seeds))
        out += [f"--set {shlex.quote(f'{k}={v}')}" for k, v in self.sets.items()]
        if str(self.results) != "results":
            out.append(f"--results {shlex.quote(str(self.results))}")
        return " ".join(out)


@dataclass
class CellResult:
    cell: Cell
    status: str = "ok"  # ok | partial | missing | unavailable
    mean: float | str | None = None
    low: float | None = None
    high: float | None = None
    n: int = 0  # finished runs found
    expected: int = 0
    not_reached: int = 0  # runs whose metric is inf (target never reached)
    cap: int | None = None  # rounds run by those, for "> cap"
    diverged: int = 0
    reached: int = 0  # runs with a finite value
    note: str = ""
    paper: PaperValue | None = None
    records: list = field(default_factory=list)  # (seed, RunRecord) of the finished runs
    # each seed's value (a censored one at its cap) and the censored seeds ('> cap')
    seed_values: dict[int, float] = field(default_factory=dict)
    censored: set[int] = field(default_factory=set)

    @property
    def diff(self) -> float | str | None:
        if self.paper is None or self.mean is None:
            return None
        p = self.paper.value
        if isinstance(self.mean, str) or isinstance(p, str):
            return "same" if str(self.mean) == str(p) else "differs"
        if math.isinf(self.mean) or self.not_reached:  # a bound ('> m') has no difference
            return None
        return self.mean - float(p)


@dataclass
class TableResult:
    spec: TableSpec
    selection: Selection
    spread: str
    cells: list[CellResult]
    problems: list[str] = field(default_factory=list)
    devices: set[str] = field(default_factory=set)
    notes: list[str] = field(default_factory=list)  # old-version records used, copies
    claims: list[ClaimResult] = field(default_factory=list)

    def cell(self, dataset: str, row: str, col: str) -> CellResult | None:
        for c in self.cells:
            if (c.cell.dataset, c.cell.row, c.cell.col) == (dataset, row, col):
                return c
        return None

    @property
    def missing_datasets(self) -> list[str]:
        return list(dict.fromkeys(ds for ds, _ in self._missing()))

    def _missing(self) -> list[tuple[str, bool]]:
        """(dataset, whether the row is an added one) of each cell with runs missing."""
        return [
            (c.cell.dataset, c.cell.row.endswith(ADDED))
            for c in self.cells
            if c.status in ("missing", "partial") and c.cell.kind == "runs"
        ]

    def _records(self) -> dict:
        """The table's distinct runs (cells may share one), by run id."""
        return {rec.meta.get("run_id", id(rec)): rec for c in self.cells for _, rec in c.records}

    def used_records(self) -> list:
        """The RunRecords the table was made from, one per run."""
        return list(self._records().values())

    def run_count(self) -> int:
        return len(self._records())

    def compute_line(self) -> str:
        """How long the table's runs took to make: their count and summed wall time."""
        from datetime import datetime

        seen: dict[str, float] = {}
        for key, rec in self._records().items():
            m = rec.meta
            try:
                wall = (
                    datetime.fromisoformat(m["ended"]) - datetime.fromisoformat(m["started"])
                ).total_seconds()
            except (KeyError, TypeError, ValueError):
                wall = float(rec.summary.get("total_seconds") or 0.0)
            seen[key] = wall
        total = sum(seen.values())
        return f"compute: {len(seen)} runs, {total / 60:.1f} min of run wall time (summed)"

    def fill_commands(self) -> list[str]:
        """The sweeps that fill the missing cells: the paper's rows without --add-method
        (a sweep with it trains the added rows only), the added rows with it."""
        out = []
        for ds, added in dict.fromkeys(self._missing()):
            sel = self.selection if added else _without_additions(self.selection)
            opts = sel.options()
            out.append(
                f"fedbench sweep --table {self.spec.name} --dataset {ds}"
                + (f" {opts}" if opts else "")
            )
        return list(dict.fromkeys(out))

    def unavailable(self) -> dict[str, int]:
        reasons: dict[str, int] = {}
        for c in self.cells:
            if c.status == "unavailable":
                reasons[c.note] = reasons.get(c.note, 0) + 1
        return reasons


def _without_additions(sel: Selection) -> Selection:
    from dataclasses import replace

    base = sel.calibrated_from and _without_additions(sel.calibrated_from)
    return replace(sel, additions=(), calibrated_from=base)


@dataclass
class ClaimResult:
    claim: Claim
    dataset: str
    verdict: Verdict

    @property
    def status(self) -> str:
        return self.verdict.outcome if self.claim.counted else "measured"
