"""Bounded reads of the files fedbench finds in results/: every reader of records (the index,
tables, plots, sweep planning, export, publish, calibration fits, claims, checkpoints) opens
them here, so that a planted or damaged entry is passed over with one line, never a hang, an
unbounded read or a RecursionError.

A record is read only when it is a regular file, opened without following a link in its last
component (fedbench writes no links, so one found there was planted: O_NOFOLLOW) and without
blocking (O_NONBLOCK: a FIFO would wait for a writer forever), then checked with fstat on the
open descriptor (no race between the check and the read), and no larger than its cap:
JSON_CAP for run.json, claims and fits, PARQUET_CAP for rounds.parquet and the store's
tables. JSON nested deeper than Python can parse is refused the same way. A leaf like atomic.
"""

from __future__ import annotations

import errno
import json
import os
import stat
from pathlib import Path
from typing import Any, BinaryIO

from fedbench.errors import FedbenchError

MB = 1024 * 1024
JSON_CAP = 16 * MB  # a run.json is a few KB; a claim or a fit less
PARQUET_CAP = 2048 * MB  # rounds.parquet of a long run is a few MB
CHECKPOINT_CAP = 64 * 1024 * MB  # a model's whole state: bounded by type, not by size
SHOWN = 120  # characters of a value quoted in a message (a huge string stays out of it)

_KINDS = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISLNK, "a link"),
)


class Refused(FedbenchError, ValueError):
    """A file fedbench does not read: not a regular file, a link, over its cap, nested too
    deep. A ValueError too, so that readers which pass over damaged records pass it over.
    `why` is the message without the path."""

    def __init__(self, path: Path | str, why: str):
        super().__init__(f"{path} {why}")
        self.path, self.why = path, why


def kind(mode: int) -> str:
    """What a file of this st_mode is, in words."""
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def shown(value: Any) -> str:
    """repr(value) cut to SHOWN characters, for messages."""
    text = repr(value)
    return text if len(text) <= SHOWN else f"{text[:SHOWN]}... ({len(text)} characters)"


def open_regular(path: Path | str, cap: int) -> BinaryIO:
    """path opened for reading: a regular file (not through a link in its last component) of at
    most cap bytes; else Refused (FileNotFoundError when there is nothing there)."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise Refused(path, "is a link (fedbench writes none there)") from None
        what = entry_kind(path) if e.errno == errno.ENXIO else None  # a socket
        if what is not None:
            raise Refused(path, f"is {what}, not a regular file") from None
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise Refused(path, f"is {kind(info.st_mode)}, not a regular file")
        if info.st_size > cap:
            raise Refused(path, f"is {info.st_size / MB:.1f} MB, over its cap of {cap / MB:g} MB")
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_bytes(path: Path | str, cap: int = JSON_CAP) -> bytes:
    """The bytes of a regular file of at most cap bytes (see open_regular); a file that grows
    past its cap while read is refused too."""
    with open_regular(path, cap) as f:
        data = f.read(cap + 1)
    if len(data) > cap:
        raise Refused(path, f"is over its cap of {cap / MB:g} MB")
    return data


def read_json(path: Path | str, cap: int = JSON_CAP) -> Any:
    """A JSON file read through read_bytes; ValueError (json's, or Refused) for what is not
    JSON, is nested too deep or is not a regular file under its cap."""
    data = read_bytes(path, cap)
    try:
        return json.loads(data)
    except RecursionError:
        raise Refused(path, "is JSON nested too deep to read") from None
    except UnicodeDecodeError as e:
        raise ValueError(f"not UTF-8 text ({e.reason})") from None


def entry_kind(path: Path | str) -> str | None:
    """What is at path when it is not a regular file or a real folder (a link, a FIFO, ...),
    in words; None when it is one of those, or nothing is there."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    return kind(mode)
