"""A time budget for a sweep (`fedbench reproduce --budget 2h` or `--until 14:30`): which runs
may start, and a clean stop at the deadline.

A run starts only when its expected time (fedbench.sweep.rates) ends before the deadline; a run
with no estimate starts while any time is left. When the deadline nears, the stop is asked for
as a signal asks for it (fedbench.training.signals): in-flight runs end their round, write a
checkpoint, are recorded `interrupted` and resume from there next time. The stop is asked for
one expected round (plus a margin) before the deadline, so that the round ends in time; the
grace a round has to end is at least that round."""

from __future__ import annotations

import os
import re
import signal
import threading
import time
from datetime import datetime, timedelta

from fedbench.errors import FedbenchError

EXIT_BUDGET = 75  # EX_TEMPFAIL: the budget ended first; run the same command again to go on
MARGIN_SECONDS = 5.0  # a stop asked this long before the deadline, on top of one round
_UNITS = {"s": 1, "m": 60, "min": 60, "h": 3600, "d": 86400}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|min|h|d)?\s*$")


def parse_budget(text: str) -> float:
    """'90s', '30m', '2h', '1.5h' or plain seconds -> seconds (> 0)."""
    m = _DURATION.match(str(text))
    if not m or float(m.group(1)) <= 0:
        raise FedbenchError(f"--budget expects a duration such as 90s, 30m or 2h, got {text!r}")
    return float(m.group(1)) * _UNITS[m.group(2) or "s"]


def parse_until(text: str, now: datetime | None = None) -> float:
    """'HH:MM' (local time; tomorrow when it has passed today) -> seconds from now."""
    now = now or datetime.now()
    try:
        at = datetime.strptime(str(text).strip(), "%H:%M")
    except ValueError:
        raise FedbenchError(f"--until expects a time HH:MM (24 h), got {text!r}") from None
    when = now.replace(hour=at.hour, minute=at.minute, second=0, microsecond=0)
    if when <= now:
        when += timedelta(days=1)
    return (when - now).total_seconds()


def budget_seconds(budget: str | None, until: str | None) -> float | None:
    if budget and until:
        raise FedbenchError("--budget and --until both set a deadline; give one of them")
    if budget:
        return parse_budget(budget)
    return parse_until(until) if until else None


class Deadline:
    """The deadline of one command: what may start before it, and the stop it asks for."""

    def __init__(self, seconds: float | None, clock=time.monotonic):
        self.clock = clock
        self.end = None if seconds is None else clock() + seconds
        self.expired = False  # the stop was asked for by this deadline (not by a signal)
        self.timer: threading.Timer | None = None

    def left(self) -> float:
        return float("inf") if self.end is None else self.end - self.clock()

    def fits(self, seconds: float | None) -> bool:
        """Whether work expected to take `seconds` (None: unknown) ends before the deadline."""
        left = self.left()
        return left > 0 and (seconds is None or seconds <= left)

    def arm(self, round_seconds: float = 0.0) -> None:
        """Ask for the stop one round (and a margin) before the deadline: in-flight runs end
        that round, checkpoint and record themselves interrupted."""
        if self.end is None:
            return
        lead = max(0.0, round_seconds) + MARGIN_SECONDS
        grace = max(float(os.environ.get("FEDBENCH_STOP_GRACE", 10) or 10), 2 * lead)
        os.environ["FEDBENCH_STOP_GRACE"] = f"{grace:g}"  # a round this long may end in time
        self.timer = threading.Timer(max(0.0, self.left() - lead), self._stop)
        self.timer.daemon = True
        self.timer.start()

    def _stop(self) -> None:
        self.expired = True
        try:
            os.write(2, b"fedbench: the budget ends: stopping the runs at the end of a round\n")
        except OSError:
            pass
        os.kill(os.getpid(), signal.SIGTERM)  # as a scheduler's stop: every executor handles it

    def disarm(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
