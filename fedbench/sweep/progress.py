"""Progress of train and sweep off a terminal: plain lines in a log file (a terminal gets rich's
live display instead).

Off a terminal (`fedbench train ... > log 2>&1`, SLURM, CI) nothing redraws: a line per round
goes to the `fedbench.progress` logger at debug level (`-v`) and, at the default info level, one
every FEDBENCH_PROGRESS_SECONDS (default 10 s) plus a run's first and last rounds; a sweep adds a
line per finished run. `--quiet` (level warning) prints neither bar nor lines.
"""

from __future__ import annotations

import logging
import math
import os
import sys
import time

LEVELS = ("warning", "info", "debug")
PROGRESS_SECONDS = 10.0  # default of FEDBENCH_PROGRESS_SECONDS
log = logging.getLogger("fedbench.progress")


def progress_seconds() -> float:
    try:
        return max(0.0, float(os.environ.get("FEDBENCH_PROGRESS_SECONDS", PROGRESS_SECONDS)))
    except ValueError:
        return PROGRESS_SECONDS


class _Stderr(logging.StreamHandler):
    """A handler on whatever sys.stderr is when it writes (a test runner swaps it)."""

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, value) -> None:
        pass


class _Format(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        text = record.getMessage()
        return text if record.levelno < logging.WARNING else f"{record.levelname.lower()}: {text}"


def configure_logging(level: str) -> None:
    """fedbench's loggers print to stderr from `level` up (progress lines plain, warnings
    prefixed); set once per command."""
    root = logging.getLogger("fedbench")
    root.setLevel(getattr(logging, level.upper()))
    for h in list(root.handlers):
        if getattr(h, "fedbench", False):
            root.removeHandler(h)
    handler = _Stderr()
    handler.fedbench = True
    handler.setFormatter(_Format())
    root.addHandler(handler)


def on_terminal() -> bool:
    from rich.console import Console

    return Console(stderr=True).is_terminal


def fmt_seconds(s: float) -> str:
    if not math.isfinite(s):
        return "?"
    s = int(round(s))
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


def _number(v) -> str | None:
    if v is None:
        return None
    try:
        v = float(v)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(v) else f"{v:.4g}"


def round_line(label: str, rec: dict, total: int, per_round: float) -> str:
    """`label round r/R  acc 0.8123  loss 0.4412  0.52 s/round  ETA 0:01:02`."""
    r = int(rec["round"])
    parts = [f"{label} round {r}/{total}"]
    for key, name in (("test_acc", "acc"), ("local_loss", "loss"), ("dist_to_opt", "|x-x*|")):
        v = _number(rec.get(key))
        if v is not None:
            parts.append(f"{name} {v}")
    if math.isfinite(per_round):
        parts += [f"{per_round:.3g} s/round", f"ETA {fmt_seconds(per_round * (total - r))}"]
    return "  ".join(parts)


class RoundLines:
    """on_round for one run: plain progress lines through the `fedbench.progress` logger, every
    round at debug level, else at most one every `every` seconds (and the first and last)."""

    def __init__(self, label: str, total: int, every: float | None = None):
        self.label, self.total = label, total
        self.every = progress_seconds() if every is None else every
        self.start: tuple[float, int] | None = None  # (time, round) of the first call
        self.last_line = -math.inf
        self.acc = None  # the last evaluated accuracy (not every round evaluates)

    def __call__(self, rec: dict) -> None:
        now, r = time.monotonic(), int(rec["round"])
        if _number(rec.get("test_acc")) is not None:
            self.acc = rec["test_acc"]
        rec = {**rec, "test_acc": self.acc}
        if self.start is None:
            self.start = (now, r)
            if r > 0:
                log.info("%s resumes after round %d/%d (checkpoint)", self.label, r, self.total)
                return
        t0, r0 = self.start
        per_round = (now - t0) / (r - r0) if r > r0 else math.nan
        line = round_line(self.label, rec, self.total, per_round)
        due = now - self.last_line >= self.every or r in (r0, r0 + 1, self.total)
        if due and log.isEnabledFor(logging.INFO):
            log.info(line)
            self.last_line = now
        else:
            log.debug(line)
