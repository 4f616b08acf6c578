"""Atomic writes of bytes, JSON and Parquet: a temp file beside the target, fsync, rename, so a
crash never leaves half a file. A leaf: data, results and run locks all use it."""

from __future__ import annotations

import errno
import json
import math
import numbers
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from fedbench.errors import FedbenchError

if TYPE_CHECKING:
    import pandas as pd


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_FILE_MODE = 0o666 & ~_umask()  # what open() would give; mkstemp's 0600 hides shared results


FULL = (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC))  # no space; over a quota


class DiskFull(FedbenchError, OSError):
    """No space left (or over quota) where fedbench writes: one line that says where and how
    much is free (the CLI: exit 2). `recorded`: whether the run's run.json still says how it
    ended (set by the runner; False: it could not be written either)."""

    def __init__(self, folder: Path | str, what: str = ""):
        self.folder, self.recorded = Path(folder), True
        FedbenchError.__init__(
            self,
            f"disk full: no space left writing in {folder} ({free_space(folder)} free there)"
            + (f"; {what}" if what else ""),
        )


def free_space(folder: Path | str) -> str:
    """The free space of folder's filesystem, in words ("12.0 MB"; "?" where unknown)."""
    here = Path(folder)
    while not here.exists() and here != here.parent:
        here = here.parent
    try:
        free = shutil.disk_usage(here).free
    except OSError:
        return "?"
    for unit, size in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if free >= size:
            return f"{free / size:.1f} {unit}"
    return f"{free} bytes"


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write to a temp file beside `path`, fsync, rename: a crash never leaves half a file."""
    atomic_write_with(path, lambda f: f.write(data))


def atomic_write_with(path: Path, write: Callable[[BinaryIO], object]) -> None:
    """atomic_write_bytes for what write(f) writes into the open temp file (a big object
    streamed, not first held in memory as bytes)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as e:
        if e.errno in FULL:
            raise DiskFull(path.parent) from None
        raise
    try:
        os.fchmod(fd, _FILE_MODE)
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as e:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(e, OSError) and e.errno in FULL:
            raise DiskFull(path.parent) from None
        raise


def refuse_links(path: Path | str, below: Path | str) -> None:
    """Raise a one-line FedbenchError when path, or a folder between `below` and it, is a link:
    fedbench creates no links, so one there was planted, and writing, renaming or deleting
    through it would reach outside `below` (results/). `below` itself may be a link (the
    user's choice of where results live)."""
    path, below = Path(path), Path(below)
    try:
        parts = path.relative_to(below).parts
    except ValueError:
        parts = ()
    here = below
    for part in parts:
        here = here / part
        if os.path.islink(here):
            raise FedbenchError(
                f"{here} is a link (to {os.readlink(here)}); fedbench writes nothing through a "
                f"link it did not create: delete the link (rm {here}) and run again"
            )


def json_safe(obj: Any) -> Any:
    """obj with every non-finite number (NaN, inf) replaced by None, so that run.json is strict
    JSON. In run.json, null means "no finite value": not measured (no evaluation, target not
    reached) or not a number (a run whose status is diverged)."""
    if isinstance(obj, dict):
        return {str(k): json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_safe(v) for v in obj]
    if isinstance(obj, bool) or obj is None or isinstance(obj, (int, str)):
        return obj
    if isinstance(obj, numbers.Integral):
        return int(obj)
    if isinstance(obj, numbers.Real):
        return float(obj) if math.isfinite(obj) else None
    return obj


def atomic_write_json(path: Path, obj: Any) -> None:
    text = json.dumps(json_safe(obj), indent=2, default=str, allow_nan=False)
    atomic_write_bytes(path, text.encode())


def atomic_write_parquet(path: Path, df: pd.DataFrame) -> None:
    import io

    buf = io.BytesIO()
    df.to_parquet(buf, index=False)
    atomic_write_bytes(path, buf.getvalue())
