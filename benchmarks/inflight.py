"""Carry the campaign's unfinished runs from one machine to the next, through git.

The campaign (issue 36) runs in stretches of a few hours, each on a fresh machine: a run folder
left in results/ at the end of a stretch would be lost, and a FedSoftMax paper-scale run (50
rounds of ~1 min on one core) rarely fits one stretch beside the other work. Its folder is small
(run.json, rounds.parquet, partition.parquet and a checkpoint of ~150 kB), so:

    python benchmarks/inflight.py save     # before a stretch ends: every unfinished run with a
                                           # checkpoint into results/inflight/ (committed)
    python benchmarks/inflight.py restore  # first thing next stretch: back into results/, where
                                           # the same sweep resumes it from its checkpoint

`save` also drops entries whose run has since finished (in results/ or the shipped store). A run
resumed on another CPU kind is recorded with the device it finished on; the rounds before the
move were computed on the first one (float results move in the last digits between kinds).
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "results"
INFLIGHT = RESULTS / "inflight"
FILES = ("run.json", "rounds.parquet", "partition.parquet", "checkpoint.pt")
DONE = ("complete", "diverged")
# a checkpoint above this is not carried (git keeps every version): SCAFFOLD's per-device
# control variates on FMNIST make 66 MB for a run that takes ~6 minutes to redo
MAX_CHECKPOINT_MB = 5


def _status(folder: Path) -> str | None:
    try:
        return json.loads((folder / "run.json").read_text()).get("status")
    except (OSError, ValueError):
        return None


def _finished(run_id: str) -> bool:
    if _status(RESULTS / run_id) in DONE:
        return True
    return _in_store(run_id)


def _in_store(run_id: str) -> bool:
    import pyarrow.parquet as pq

    for runs in (RESULTS / "shipped").glob("*/runs.parquet"):
        if run_id in set(pq.read_table(runs, columns=["run_id"]).column("run_id").to_pylist()):
            return True
    return False


def save() -> int:
    INFLIGHT.mkdir(exist_ok=True)
    kept = 0
    for folder in sorted(RESULTS.iterdir()):
        if folder.name in ("inflight", "shipped", "reference") or not folder.is_dir():
            continue
        if _status(folder) in DONE or not (folder / "checkpoint.pt").is_file():
            continue
        dest = INFLIGHT / folder.name
        shutil.rmtree(dest, ignore_errors=True)
        size_mb = (folder / "checkpoint.pt").stat().st_size / 2**20
        if size_mb > MAX_CHECKPOINT_MB:
            print(f"not carried: {folder.name} (checkpoint {size_mb:.0f} MB > {MAX_CHECKPOINT_MB})")
            continue
        dest.mkdir()
        for name in FILES:
            if (folder / name).is_file():
                shutil.copy2(folder / name, dest / name)
        kept += 1
        print(f"saved {folder.name} ({_status(folder)})")
    for entry in sorted(INFLIGHT.iterdir()):
        if entry.is_dir() and _finished(entry.name):
            shutil.rmtree(entry)
            print(f"dropped {entry.name} (finished)")
    print(f"{kept} unfinished run(s) in {INFLIGHT.relative_to(ROOT)}")
    return 0


def restore() -> int:
    if not INFLIGHT.is_dir():
        print("nothing to restore")
        return 0
    for entry in sorted(INFLIGHT.iterdir()):
        dest = RESULTS / entry.name
        if not entry.is_dir() or dest.exists() or _finished(entry.name):
            continue
        shutil.copytree(entry, dest)
        print(f"restored {entry.name}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in ("save", "restore"):
        sys.exit("usage: python benchmarks/inflight.py save|restore")
    sys.exit(save() if sys.argv[1] == "save" else restore())
