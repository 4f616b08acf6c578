"""Where a run is written: its folder under results/ (another folder beside it for a finished
run on other data), a new attempt swapped in atomically over the old one, and what a killed
attempt left cleaned up (used by fedbench.training.runner under the run's claim)."""

from __future__ import annotations

import os
import secrets
import shutil
import sys
from pathlib import Path

from fedbench.results import FINISHED
from fedbench.safe_read import read_json
from fedbench.training import checkpoint as checkpoints


def _read_meta(run_dir: Path) -> dict | None:
    try:
        meta = read_json(run_dir / "run.json")
    except (OSError, ValueError):
        return None
    return meta if isinstance(meta, dict) else None


def _finished_meta(run_dir: Path) -> dict | None:
    meta = _read_meta(run_dir)
    return meta if meta is not None and meta.get("status") in FINISHED else None


def run_folder(results: Path, run_id: str, fingerprint: str | None) -> Path:
    """results/<run_id>, unless it holds a finished run on other data (another fingerprint):
    then results/<run_id>-d<fingerprint[:8]>, so that neither run replaces the other."""
    base = results / run_id
    meta = _finished_meta(base)
    if meta is None or fingerprint is None:
        return base
    theirs = (
        (meta.get("data") or {}).get("fingerprint") if isinstance(meta.get("data"), dict) else None
    )
    return base if theirs in (None, fingerprint) else results / f"{run_id}-d{fingerprint[:8]}"


def _aside(final: Path) -> Path:
    return final.with_name(f".{final.name}.new-{secrets.token_hex(4)}")


def _recover(results: Path, run_id: str) -> None:
    """Under the run's claim: undo what a killed --overwrite left. A new run written aside is
    deleted; an old run moved aside (killed between the two renames) is put back."""
    for p in results.glob(f".{run_id}*.new-*"):
        shutil.rmtree(p, ignore_errors=True)
    for p in results.glob(f".{run_id}*.old-*"):
        if os.path.islink(p) or not p.is_dir():  # not one fedbench moved aside: never put back
            p.unlink(missing_ok=True)  # the link itself, in results/; never what it points to
            continue
        final = results / p.name[1 : p.name.rindex(".old-")]
        if final.exists():
            shutil.rmtree(p, ignore_errors=True)
        else:
            os.rename(p, final)


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths atomically (Linux renameat2 RENAME_EXCHANGE); False where unsupported."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    return fn(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0


def swap_in(new: Path, final: Path) -> None:
    """Make `new` the run folder `final`: one atomic exchange where the filesystem has it,
    else two renames (a kill between them is undone by _recover at the next claim)."""
    if not final.exists():
        os.rename(new, final)
        return
    if _exchange(new, final):
        shutil.rmtree(new, ignore_errors=True)  # now holds the old run
        return
    old = final.with_name(f".{final.name}.old-{secrets.token_hex(4)}")
    os.rename(final, old)
    os.rename(new, final)
    shutil.rmtree(old, ignore_errors=True)


def _clean_run_dir(run_dir: Path, resuming: bool) -> None:
    """Remove what an earlier, killed attempt left: temp files, and unless the run resumes from
    its checkpoint, its partial rounds and checkpoint."""
    for p in run_dir.glob(".*.tmp"):
        p.unlink(missing_ok=True)
    if not resuming:
        (run_dir / "rounds.parquet").unlink(missing_ok=True)
        checkpoints.remove(run_dir)
