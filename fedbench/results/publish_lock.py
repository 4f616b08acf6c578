"""One `fedbench publish` at a time per shipped store, as git's index.lock: <store>/.publish.lock
made with O_CREAT|O_EXCL holding the publisher's pid. A later publisher waits for it (up to
WAIT_SECONDS); a lock whose process is gone (killed -9) is taken over, under a flock on the
store folder so two takers cannot both take it. Under the lock, temporary files a killed
publish left (.*.publish, .*.tmp) are deleted, and SIGTERM, like Ctrl-C, unwinds the publish
so that it deletes its own."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from contextlib import contextmanager
from pathlib import Path

from fedbench.errors import FedbenchError

LOCK = ".publish.lock"
WAIT_SECONDS = 120.0  # how long a publisher waits for another one to finish
UNREADABLE_STALE_SECONDS = 5.0  # a lock without a pid in it (its writer killed mid-write)
LEFTOVERS = (".*.publish", ".*.tmp")


@contextmanager
def publish_lock(root: Path):
    """Hold root/.publish.lock for the block; leftovers of killed publishes are deleted."""
    from fedbench.results.locks import _proc_start

    root.mkdir(parents=True, exist_ok=True)
    path = root / LOCK
    me = {"pid": os.getpid(), "proc_start": _proc_start(os.getpid())}
    deadline = time.monotonic() + WAIT_SECONDS
    while not _create(path, me):
        if _take_over_stale(root, path, me):
            break
        if time.monotonic() > deadline:
            raise FedbenchError(
                f"another fedbench publish holds {path} ({_holder(path)}); wait for it to "
                "finish, or delete the lock file if that process is gone"
            )
        time.sleep(0.1)
    try:
        clean_leftovers(root)
        with _sigterm_unwinds():
            yield
    finally:
        if _read(path).get("pid") == me["pid"]:
            path.unlink(missing_ok=True)


def clean_leftovers(root: Path) -> list[Path]:
    """Delete the temporary files killed publishes left in the store (its folder and groups)."""
    gone = []
    for folder in [root, *(p for p in root.iterdir() if p.is_dir() and not p.is_symlink())]:
        for pattern in LEFTOVERS:
            for p in folder.glob(pattern):
                if p.is_file() and not p.is_symlink():
                    p.unlink(missing_ok=True)
                    gone.append(p)
    return gone


def _create(path: Path, me: dict) -> bool:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0),
                     0o644)  # fmt: skip
    except FileExistsError:
        return False
    with os.fdopen(fd, "w") as f:
        json.dump(me, f)
    return True


def _read(path: Path) -> dict:
    try:
        info = json.loads(path.read_text()) if path.is_file() else {}
    except (OSError, ValueError):
        return {}
    return info if isinstance(info, dict) and type(info.get("pid")) is int else {}


def _holder(path: Path) -> str:
    pid = _read(path).get("pid")
    return f"pid {pid}" if pid else "no pid in it"


def _stale(path: Path) -> bool:
    from fedbench.results.locks import _pid_alive, _proc_start

    if path.is_symlink() or path.is_dir():
        raise FedbenchError(f"{path} is not a lock file fedbench wrote; delete it")
    info = _read(path)
    if not info:
        try:
            return time.time() - path.lstat().st_mtime > UNREADABLE_STALE_SECONDS
        except FileNotFoundError:
            return False
    pid = info["pid"]
    if pid <= 0 or not _pid_alive(pid):
        return True
    start = info.get("proc_start")
    return start is not None and _proc_start(pid) not in (None, start)


def _take_over_stale(root: Path, path: Path, me: dict) -> bool:
    """Replace a dead publisher's lock by ours; False while a live one holds it."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: no take-over, the wait ends in an error
        return False
    fd = os.open(root, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # one taker at a time judges and replaces the lock
        if not _stale(path):
            return False
        path.unlink(missing_ok=True)
        return _create(path, me)
    finally:
        os.close(fd)  # releases the flock


class Terminated(KeyboardInterrupt):
    """SIGTERM as Ctrl-C (its signum gives the CLI's exit code 143, as
    fedbench.training.signals.Interrupted does; results/ sits below training/)."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


@contextmanager
def _sigterm_unwinds():
    """SIGTERM raises as Ctrl-C does, so the publish's finally blocks delete its temp files."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum, frame):
        raise Terminated(signum)

    before = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)
