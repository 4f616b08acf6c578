"""Atomic writes of bytes, JSON and Parquet: a temp file beside the target, fsync, rename, so a
crash never leaves half a file. A leaf: data, results and run locks all use it."""

from __future__ import annotations

import json
import math
import numbers
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

if TYPE_CHECKING:
    import pandas as pd


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_FILE_MODE = 0o666 & ~_umask()  # what open() would give; mkstemp's 0600 hides shared results


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write to a temp file beside `path`, fsync, rename: a crash never leaves half a file."""
    atomic_write_with(path, lambda f: f.write(data))


def atomic_write_with(path: Path, write: Callable[[BinaryIO], object]) -> None:
    """atomic_write_bytes for what write(f) writes into the open temp file (a big object
    streamed, not first held in memory as bytes)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, _FILE_MODE)
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


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
