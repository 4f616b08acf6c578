"""Run claims: at most one process runs a given config at a time, even when several sweeps (on
one machine or several sharing a results folder) work through overlapping grids.

A claim is a lock file results/.claims/<run_id>.lock created with O_EXCL and holding the
claimant's pid, host, process start time and a random token. A claim is stale, and is taken
over, when its process is gone (same host: the pid is not alive, or now belongs to another
process) or, from another host, when its heartbeat (the file's mtime, touched while the run
goes on) is older than REMOTE_STALE_SECONDS. Checking and taking over a stale claim happens
under an flock on results/.claims/.mutex, so two sweeps cannot both take over the same one.
"""

from __future__ import annotations

import json
import os
import platform
import secrets
import stat
import time
from contextlib import contextmanager
from pathlib import Path

from fedbench.atomic import refuse_links
from fedbench.errors import FedbenchError
from fedbench.safe_read import read_json

CLAIM_CAP = 64 * 1024  # bytes: a claim is a line of JSON
CLAIMS_DIR = ".claims"
HEARTBEAT_SECONDS = 30.0
REMOTE_STALE_SECONDS = 600.0  # a claim from another host without a heartbeat for this long
UNREADABLE_STALE_SECONDS = 5.0  # a lock file without a claimant in it, older than this


class RunBusy(FedbenchError):
    """Another live process holds the claim on this run."""


def _proc_start(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (Linux), to tell a live pid from a
    reused one; None where /proc is not available."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, owned by someone else
        return True
    return True


@contextmanager
def _mutex(folder: Path):
    """An exclusive flock around claim take-overs (a no-op where fcntl is missing)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: O_EXCL alone
        yield
        return
    path = folder / ".mutex"
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:  # never through a planted link (it would create or lock a file elsewhere)
        fd = os.open(path, flags, 0o644)
    except OSError as e:
        raise FedbenchError(f"{path}: {e.strerror}; delete it (fedbench makes it again)") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise FedbenchError(
                f"{path} is not a regular file; delete it (fedbench makes it again)"
            )
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


class RunClaim:
    """Claim on one run. Use as a context manager, or acquire()/release()."""

    def __init__(self, results: Path | str, run_id: str):
        self.results = Path(results)
        self.folder = self.results / CLAIMS_DIR
        self.path = self.folder / f"{run_id}.lock"
        self.run_id = run_id
        self.token = secrets.token_hex(8)
        self.held = False
        self._beat = 0.0

    # ---- inspecting ----
    def holder(self) -> dict | None:
        """The claimant's record; {} for a lock file that is not one (half-written by a
        claimant killed mid-write, or garbage): is_stale judges it by its age."""
        try:
            info = read_json(self.path, CLAIM_CAP)
        except FileNotFoundError:
            return None
        except (ValueError, OSError):
            return {}
        if not isinstance(info, dict):
            return {}
        pid, host = info.get("pid"), info.get("host")
        if not (type(pid) is int and 0 < pid < 2**31 and isinstance(host, str)):
            return {}
        return info

    def is_stale(self, info: dict | None) -> bool:
        if info is None:
            return True
        try:
            age = time.time() - self.path.stat().st_mtime
        except FileNotFoundError:
            return True
        if not info:
            return age > UNREADABLE_STALE_SECONDS
        if info.get("host") != platform.node():
            return age > REMOTE_STALE_SECONDS
        pid = int(info.get("pid", -1))
        if pid <= 0 or not _pid_alive(pid):
            return True
        start = info.get("proc_start")
        return start is not None and _proc_start(pid) not in (None, start)

    # ---- taking and giving back ----
    def _create(self) -> bool:
        info = {
            "pid": os.getpid(),
            "host": platform.node(),
            "proc_start": _proc_start(os.getpid()),
            "token": self.token,
            "since": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            return False
        with os.fdopen(fd, "w") as f:
            json.dump(info, f)
        self.held = True
        self._beat = time.monotonic()
        return True

    def acquire(self) -> bool:
        """Take the claim; False when a live process holds it."""
        refuse_links(self.folder, self.results)  # claims are never made through a planted link
        self.folder.mkdir(parents=True, exist_ok=True)
        if self._create():
            return True
        with _mutex(self.folder):
            if self._create():
                return True
            if not self.is_stale(self.holder()):
                return False
            self.path.unlink(missing_ok=True)
            return self._create()

    def heartbeat(self) -> None:
        """Touch the lock file (rate-limited) so other hosts see the run is alive."""
        if self.held and time.monotonic() - self._beat > HEARTBEAT_SECONDS:
            try:
                os.utime(self.path, follow_symlinks=False)
            except FileNotFoundError:
                pass
            self._beat = time.monotonic()

    def release(self) -> None:
        if not self.held:
            return
        self.held = False
        info = self.holder()
        if info and info.get("token") == self.token:
            self.path.unlink(missing_ok=True)

    def busy_message(self) -> str:
        info = self.holder() or {}
        if not info:
            return (
                f"run {self.run_id}: its claim file {self.path} holds no claimant (being "
                f"written, or garbage); it is taken over after {UNREADABLE_STALE_SECONDS:g} s, "
                "or delete it"
            )
        who = f"pid {info['pid']} on {info['host']}"
        return (
            f"run {self.run_id} is being run by {who} (claim {self.path}); "
            "wait for it, or delete the claim file if that process is gone"
        )

    def __enter__(self) -> RunClaim:
        if not self.acquire():
            raise RunBusy(self.busy_message())
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def claimed_elsewhere(results: Path | str, run_id: str) -> bool:
    """Whether a live process other than this one holds the claim on run_id."""
    claim = RunClaim(results, run_id)
    info = claim.holder()
    if info is None or claim.is_stale(info):
        return False
    return not (info.get("pid") == os.getpid() and info.get("host") == platform.node())
