"""benchmarks/gpu_check.py, step 3: the campaign's CNN runs on the device until the deadline.

Phases of `fedbench sweep` (PHASES: FedSoftMax's r90 / smoothness runs and its temperature runs
at the paper's scale, seed by seed, then FMNIST, then the real-data SFL table), each a
subprocess with its own `--jobs`: the first three try 1, 3 and 6 runs sharing the GPU on the
same kind of work (50 rounds of the FedSoftMax CNN on MNIST: 3, 3 and 6 runs), and later phases
take the count that gave the most finished runs per hour. At the deadline the sweep gets SIGTERM
(its runs stop at the end of a round, recorded `interrupted`), then SIGKILL for its process
group after GRACE seconds.

What finished is packed into one archive (pack: finished run folders only, checkpoints left out)
written under a temporary name and renamed, so a kill leaves the last whole archive.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# (table, dataset, seeds, methods ("": all), jobs); jobs None: the count that finished the most
# runs per hour. r90 and smoothness share their runs; temperature adds FedSoftMax T = 10, 20, 30.
PHASES: tuple[tuple[str, str, str, str, int | None], ...] = (
    ("r90", "mnist", "0", "fedavg", 1),
    ("r90", "mnist", "0", "fedsoftmax", 3),
    ("r90", "mnist", "1", "", 6),
    ("temperature", "mnist", "0", "", None),
    ("r90", "mnist", "2", "", None),
    ("temperature", "mnist", "1", "", None),
    ("r90", "mnist", "3,4", "", None),
    ("temperature", "mnist", "2,3,4", "", None),
    ("r90", "fmnist", "0,1,2,3,4", "", None),
    ("temperature", "fmnist", "0,1,2,3,4", "", None),
    ("sfl", "fmnist", "0", "", None),
)
GRACE = 15.0  # seconds a stopped sweep may take to end its rounds and record them
FINISHED = ("complete", "diverged")


def run_folders(results: Path) -> dict[str, dict]:
    """run folder name -> its run.json, for every folder that has one."""
    out = {}
    for meta in results.glob("*/run.json"):
        try:
            out[meta.parent.name] = json.loads(meta.read_text())
        except (OSError, ValueError):
            continue  # being written: read again later
    return out


def finished(results: Path) -> dict[str, dict]:
    return {k: m for k, m in run_folders(results).items() if m.get("status") in FINISHED}


def pack(results: Path, archive: Path) -> int:
    """The finished run folders of results as one .tar.gz at archive (renamed into place);
    returns how many."""
    done = finished(results)
    part = archive.with_name(archive.name + ".part")
    with tarfile.open(part, "w:gz") as tar:
        for name in sorted(done):
            for f in sorted((results / name).iterdir()):
                if f.is_file() and not f.name.startswith(".") and "checkpoint" not in f.name:
                    tar.add(f, arcname=f"{name}/{f.name}")
    os.replace(part, archive)
    return len(done)


def sweep_command(phase, jobs: int, results: Path, device: str, sets, threads) -> list[str]:
    table, dataset, seeds, methods, _ = phase
    cmd = [sys.executable, "-m", "fedbench", "sweep", "--table", table, "--dataset", dataset]
    cmd += ["--seeds", seeds, "--jobs", str(jobs), "--results", str(results)]
    if methods:
        cmd += ["--methods", methods]
    cmd += ["--set", f"device={device}", "--log-level", "info"]
    if threads:
        cmd += ["--threads", str(threads)]
    for s in sets:
        cmd += ["--set", s]
    return cmd


def _stop(proc: subprocess.Popen, log) -> None:
    """SIGTERM (runs end their round and record it), then SIGKILL for the group after GRACE."""
    log(f"  deadline: SIGTERM to the sweep (pid {proc.pid})")
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(GRACE)
    except subprocess.TimeoutExpired:
        log(f"  still running after {GRACE:.0f} s: SIGKILL to its process group")
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def run_phase(cmd: list[str], env: dict, logfile, left, on_tick, log) -> tuple[int, bool]:
    """Run one sweep until it ends or left() reaches 0; on_tick() about every 20 s (packing).
    Returns (exit status, stopped at the deadline?)."""
    proc = subprocess.Popen(
        cmd, cwd=ROOT, env=env, stdout=logfile, stderr=subprocess.STDOUT, start_new_session=True
    )
    last = time.monotonic()
    while proc.poll() is None:
        if left() <= 0:
            _stop(proc, log)
            return proc.returncode, True
        time.sleep(min(1.0, max(left(), 0.05)))
        if time.monotonic() - last > 20:
            on_tick()
            last = time.monotonic()
    return proc.returncode, False


def phase_row(phase, jobs, before: set, results: Path, seconds: float, rc: int, stopped: bool):
    """What one phase did: its runs finished, per hour, and their seconds per round."""
    new = {k: m for k, m in finished(results).items() if k not in before}
    per_round = [m["summary"].get("mean_round_seconds") for m in new.values() if m.get("summary")]
    per_round = [s for s in per_round if s is not None]
    return {
        "table": phase[0],
        "dataset": phase[1],
        "seeds": phase[2],
        "methods": phase[3] or "all",
        "jobs": jobs,
        "finished": len(new),
        "seconds": seconds,
        "runs_per_hour": len(new) * 3600 / seconds if seconds > 0 else 0.0,
        "mean_round_seconds": sum(per_round) / len(per_round) if per_round else None,
        "devices": sorted({m.get("device_name") or "" for m in new.values()}),
        "exit": rc,
        "stopped_at_deadline": stopped,
    }


def best_jobs(rows: list[dict]) -> int:
    """The --jobs of the phase with the most finished runs per hour (1 before any finished)."""
    done = [r for r in rows if r["finished"] and not r["stopped_at_deadline"]]
    return max(done, key=lambda r: r["runs_per_hour"])["jobs"] if done else 1


class Campaign:
    """The phases in order until left() runs out; results in `results`, packed to `archive`."""

    def __init__(self, results: Path, archive: Path, device: str, log, left, opts: dict):
        self.results, self.archive, self.device = results, archive, device
        self.log, self.left, self.opts = log, left, opts
        self.rows: list[dict] = []

    def env(self) -> dict:
        env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1")
        env.setdefault("FEDBENCH_PROGRESS_SECONDS", "10")
        return env

    def pack(self) -> None:
        n = pack(self.results, self.archive)
        self.log(f"  packed {n} finished runs into {self.archive.name}")

    def run(self, logfile, on_phase) -> list[dict]:
        for phase in self.opts.get("phases", PHASES):
            if self.left() <= 0:
                break
            jobs = phase[4] or best_jobs(self.rows)
            cmd = sweep_command(
                phase, jobs, self.results, self.device, self.opts["sets"], self.opts["threads"]
            )
            self.log(f"campaign: {' '.join(cmd[2:])}  ({self.left():.0f} s left)")
            logfile.flush()
            before = set(finished(self.results))
            t0 = time.monotonic()
            rc, stopped = run_phase(cmd, self.env(), logfile, self.left, self.pack, self.log)
            row = phase_row(phase, jobs, before, self.results, time.monotonic() - t0, rc, stopped)
            self.rows.append(row)
            self.log(
                f"  {row['finished']} runs finished in {row['seconds']:.0f} s at jobs={jobs}: "
                f"{row['runs_per_hour']:.0f} runs/hour, exit {rc}"
            )
            self.pack()
            on_phase(self.rows)
        return self.rows
