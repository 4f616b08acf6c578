"""Killing real fedbench processes at chosen rounds, and comparing rounds.parquet as bytes
(tests/test_resume.py, tests/test_signals.py, tests/test_progress_log.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
FEDBENCH = [sys.executable, "-m", "fedbench.cli"]


def fedbench_env(**extra: str) -> dict:
    """A subprocess's environment: this checkout, one thread, a checkpoint every round."""
    return {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "OMP_NUM_THREADS": "1",
        "FEDBENCH_CHECKPOINT_ROUNDS": "1",
        **extra,
    }


def run_jsons(results: Path) -> dict[str, dict]:
    """Each run folder's run.json (those readable now)."""
    out = {}
    for p in Path(results).glob("*/run.json"):
        try:
            out[p.parent.name] = json.loads(p.read_text())
        except (OSError, ValueError):
            pass
    return out


def checkpoint_round(results: Path) -> int:
    """The latest round any run under results has checkpointed (run.json checkpoint_round)."""
    rounds = [m.get("checkpoint_round") or 0 for m in run_jsons(results).values()]
    return max(rounds, default=0)


def start(args, env: dict, out=subprocess.DEVNULL) -> subprocess.Popen:
    return subprocess.Popen(
        [*FEDBENCH, *map(str, args)], cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT
    )


def signal_at(args, results: Path, at: int, env: dict, sig=signal.SIGKILL, timeout=240) -> int:
    """Run `fedbench args`, send `sig` once a run has checkpointed round `at` or later; wait
    for the process to end. Returns its exit status."""
    proc = start(args, env)
    sent = False
    deadline = time.monotonic() + timeout
    try:
        while proc.poll() is None and time.monotonic() < deadline:
            if checkpoint_round(results) >= at:
                proc.send_signal(sig)
                sent = True
                break
            time.sleep(0.005)
        return proc.wait(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        assert sent, f"{args}: the process ended before round {at} (exit {proc.returncode})"


def run_to_end(args, env: dict, timeout=300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*FEDBENCH, *map(str, args)], cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=timeout,
    )  # fmt: skip


def column_bytes(path: Path) -> dict[str, bytes]:
    """Every column of a rounds.parquet except the seconds, each as the bytes of an Arrow IPC
    stream of its values (equal bytes: equal values, types and nulls)."""
    table = pq.read_table(path)
    out = {}
    for name in table.column_names:
        if "seconds" in name:
            continue
        col = table.select([name]).combine_chunks()
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, col.schema) as writer:
            writer.write_table(col)
        out[name] = sink.getvalue().to_pybytes()
    return out


def assert_same_rounds(a: Path, b: Path) -> None:
    """The rounds.parquet of run folders a and b hold the same records, bit for bit."""
    ca, cb = column_bytes(a / "rounds.parquet"), column_bytes(b / "rounds.parquet")
    assert list(ca) == list(cb), (list(ca), list(cb))
    different = [name for name in ca if ca[name] != cb[name]]
    assert not different, f"columns that differ: {different}"
