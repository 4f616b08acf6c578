"""Stopping runs cleanly on SIGINT and SIGTERM (Ctrl-C, a scheduler's preemption, `kill`).

The first signal asks this process's runs to stop at the end of their current round: each then
writes a checkpoint (fedbench.training.checkpoint), records status `interrupted` and releases its
claim, and the command exits with 128 + the signal (130 for SIGINT, 143 for SIGTERM). It stops at
once instead (the run still recorded `interrupted`, its last checkpoint standing) when no run is
in its round loop (loading data, planning), at a second signal, or when the round has not ended
grace_seconds() after the first. SIGUSR2 means "stop now": what the grace timer sends, and what a
sweep sends its worker processes.

Worker processes (a sweep's pool) take SIGINT and SIGTERM as a request only, however many come
(a terminal's Ctrl-C reaches them and the sweep forwards it too): the sweep escalates.
Imports no torch.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

GRACE_SECONDS = 10.0  # default of FEDBENCH_STOP_GRACE: how long a round may take to end
STOP_NOW = getattr(signal, "SIGUSR2", None)
HANDLED = tuple(s for s in (signal.SIGINT, getattr(signal, "SIGTERM", None), STOP_NOW) if s)


class Interrupted(KeyboardInterrupt):
    """A run or sweep stopped by a signal (a KeyboardInterrupt, so that code which lets Ctrl-C
    through lets it through too)."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def exit_code(e: BaseException) -> int:
    """128 + the signal: 130 for Ctrl-C (a plain KeyboardInterrupt), 143 for SIGTERM."""
    return 128 + getattr(e, "signum", signal.SIGINT)


def signal_name(e: BaseException) -> str:
    return signal.Signals(getattr(e, "signum", signal.SIGINT)).name


def grace_seconds() -> float:
    try:
        return max(0.0, float(os.environ.get("FEDBENCH_STOP_GRACE", GRACE_SECONDS)))
    except ValueError:
        return GRACE_SECONDS


class _State:
    def __init__(self) -> None:
        self.requested: int | None = None  # the first signal
        self.active = 0  # round loops (and sweeps waiting on workers) that call check()
        self.worker = False
        self.installed = False  # handling() is on (main process)
        self.timer: threading.Timer | None = None
        self.forward: list[Callable[[int], None]] = []
        self.lock = threading.Lock()


_S = _State()


def requested() -> int | None:
    """The signal that asked this process to stop, or None."""
    return _S.requested


def request(signum: int = signal.SIGINT) -> None:
    """Ask to stop (as a signal does); a KeyboardInterrupt caught without a handler calls it, so
    that a sweep does not go on to its next run."""
    if _S.requested is None:
        _S.requested = signum


def check() -> None:
    """Raise Interrupted when a stop was asked for (at a round's end, between runs)."""
    if _S.requested is not None:
        raise Interrupted(_S.requested)


@contextmanager
def checking() -> Iterator[None]:
    """Around a loop that calls check() often (a run's rounds, a sweep waiting on workers): a
    first signal then waits for it instead of stopping at once."""
    with _S.lock:
        _S.active += 1
    try:
        yield
    finally:
        with _S.lock:
            _S.active -= 1


@contextmanager
def forwarding(send: Callable[[int], None]) -> Iterator[None]:
    """While the block runs, send(signum) passes a stop on to worker processes: SIGTERM for a
    request, STOP_NOW to stop at once."""
    _S.forward.append(send)
    try:
        yield
    finally:
        _S.forward.remove(send)


def _say(text: str) -> None:
    try:  # unbuffered: the handler may run while the main thread is inside a print
        os.write(2, f"fedbench: {text}\n".encode())
    except OSError:
        pass


def _send(signum: int) -> None:
    for send in list(_S.forward):
        try:
            send(signum)
        except OSError:  # a worker already gone
            pass


def _handler(signum: int, frame) -> None:
    if signum == STOP_NOW:
        if _S.worker and _S.active == 0:
            request(signal.SIGTERM)  # idle: nothing to stop
            return
        _stop_now(signal.SIGTERM)
    first = _S.requested is None
    request(signum)
    if _S.worker:
        return
    if not first:
        _stop_now(signum)
    _send(signal.SIGTERM)
    if _S.active == 0 and not _S.forward:
        raise Interrupted(signum)
    grace = grace_seconds()
    _say(
        f"{signal.Signals(signum).name}: stopping at the end of the round (at most {grace:g} s; "
        "send it again to stop now); the run is kept as `interrupted` and resumes from there"
    )
    if STOP_NOW is not None:
        _S.timer = threading.Timer(grace, os.kill, (os.getpid(), STOP_NOW))
        _S.timer.daemon = True
        _S.timer.start()


def _stop_now(signum: int) -> None:
    request(signum)
    _send(STOP_NOW if STOP_NOW is not None else signal.SIGTERM)
    raise Interrupted(_S.requested or signum)


def reset() -> None:
    """Forget a stop request (tests; the end of a command)."""
    if _S.timer is not None:
        _S.timer.cancel()
    _S.timer, _S.requested = None, None


@contextmanager
def handling(worker: bool = False) -> Iterator[None]:
    """Install the handlers for the block (main thread only; elsewhere a no-op), then put the
    previous ones back. worker: a sweep's worker process (see the module docstring)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = {s: signal.getsignal(s) for s in HANDLED}
    reset()
    _S.worker, _S.installed = worker, True
    for s in HANDLED:
        signal.signal(s, _handler)
    try:
        yield
    finally:
        for s, h in before.items():
            signal.signal(s, h)
        _S.worker = _S.installed = False
        reset()


def reassert() -> None:
    """Put the handlers back where a library replaced them (ray.init takes SIGTERM)."""
    if _S.installed and threading.current_thread() is threading.main_thread():
        for s in HANDLED:
            signal.signal(s, _handler)


def install_for_worker() -> None:
    """A sweep's worker process: handlers for its whole life (it never uninstalls them)."""
    reset()
    _S.worker = True
    for s in HANDLED:
        signal.signal(s, _handler)
