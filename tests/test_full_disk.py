"""A full disk (ENOSPC, simulated: a new file under results/ gets no blocks once the disk is
"full", while a file's own blocks can still be rewritten, as on a real filesystem): `train`
ends with one line that says the disk is full, where and how much is free, exit 2; no run is
left `running` and no claim is left; a sweep's summary never says a failure was recorded in a
run.json it could not write; what was written stays, and a rerun after freeing space completes."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pandas as pd
import pytest
from conftest import TINY, invoke

from fedbench.assembly import build_config
from fedbench.atomic import DiskFull, atomic_write_bytes, free_space
from fedbench.identity import run_id
from fedbench.results.locks import CLAIMS_DIR
from fedbench.training import runner

pytestmark = pytest.mark.usefixtures("one_thread", "private_cache")

SETS = {"rounds": "4", **TINY, "device": "cpu"}
ARGS = [x for k, v in SETS.items() for x in ("--set", f"{k}={v}")]


class FullDisk:
    """os.fsync of a new (temp) file under `under` raises ENOSPC once `after` such files were
    written; rewriting an existing file in place still works. `full = False` frees space."""

    def __init__(self, under: Path, after: int):
        self.under, self.after, self.full, self.real = str(under), after, True, os.fsync

    def __call__(self, fd: int) -> None:
        path = os.readlink(f"/proc/self/fd/{fd}")
        if self.full and path.startswith(self.under) and path.endswith(".tmp"):
            if self.after <= 0:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            self.after -= 1
        self.real(fd)


@pytest.fixture
def full_disk(monkeypatch, tmp_path):
    """make(after): the disk under tmp_path/r fills after `after` new files."""
    monkeypatch.chdir(tmp_path)  # table files a command writes go there, not into the repo
    monkeypatch.setattr(runner, "FLUSH_SECONDS", 0.0)  # rounds written every round
    monkeypatch.setenv("FEDBENCH_CHECKPOINT_ROUNDS", "1")

    def make(after: int) -> FullDisk:
        disk = FullDisk(tmp_path / "r", after)
        monkeypatch.setattr(os, "fsync", disk)
        return disk

    return make


def _train(res: Path, seed: int = 0):
    return invoke("train", *ARGS, "--set", f"seed={seed}", "--results", res, "--threads", "1",
                  "--quiet")  # fmt: skip


def _no_claims(res: Path) -> bool:
    return not any((res / CLAIMS_DIR).glob("*.lock"))


@pytest.mark.parametrize("after", [0, 4, 8])
def test_train_on_a_full_disk_says_where_and_how_much_and_leaves_nothing_running(
    tmp_path, full_disk, after
):
    """after 0: the first run.json cannot be written; 4 or 8: the disk fills mid-run."""
    res = tmp_path / "r"
    disk = full_disk(after)
    r = _train(res)
    lines = r.output.strip().splitlines()
    assert r.exit_code == 2, r.output
    assert len(lines) == 1 and lines[0].startswith("Error: disk full"), r.output
    run_dir = res / run_id(build_config(None, None, {**SETS, "seed": "0"}))
    assert str(run_dir) in lines[0] and " free there" in lines[0], lines[0]
    assert "Traceback" not in r.output and "Errno" not in r.output
    assert _no_claims(res)
    meta_path = run_dir / "run.json"
    if meta_path.exists():
        meta = json.loads(meta_path.read_text())
        assert meta["status"] == "failed" and "disk full" in meta["error"], meta
        assert "recorded failed in its run.json" in lines[0]
    else:
        assert "could not be recorded in its run.json" in lines[0]
    assert not list(run_dir.glob(".*.tmp"))  # no half-written temp file left
    s = invoke("table", "summary", "--results", res, "--format", "md")
    assert "running" not in s.output, s.output
    disk.full = False
    r = _train(res)
    assert r.exit_code == 0, r.output
    meta = json.loads(meta_path.read_text())
    assert meta["status"] == "complete" and meta["rows"] == 5
    assert len(pd.read_parquet(run_dir / "rounds.parquet")) == 5


def test_a_record_without_room_is_never_claimed_written(tmp_path, full_disk, monkeypatch):
    """run.json cannot be rewritten in place either (a copy-on-write filesystem, say): the
    line says so instead of claiming a record, and the run shows as killed, not running."""
    res = tmp_path / "r"
    monkeypatch.setattr(runner, "_rewrite_in_place", lambda *a: False)
    full_disk(4)
    r = _train(res)
    assert r.exit_code == 2 and "could not be recorded" in r.output, r.output
    assert "recorded failed" not in r.output
    assert _no_claims(res)
    s = invoke("table", "summary", "--results", res, "--format", "csv", "--out", tmp_path / "s")
    assert s.exit_code == 0, s.output
    text = (tmp_path / "s").read_text() if (tmp_path / "s").is_file() else s.output
    assert ",running," not in text


def test_a_sweep_on_a_full_disk_never_claims_unwritten_records(tmp_path, full_disk, monkeypatch):
    res = tmp_path / "r"
    monkeypatch.setattr(runner, "_rewrite_in_place", lambda *a: False)
    disk = full_disk(0)
    sweep = ["sweep", "--seeds", "0,1,2", *ARGS, "--results", res, "--threads", "1", "--quiet"]
    r = invoke(*sweep)
    assert r.exit_code == 1, r.output
    last = r.output.strip().splitlines()[-1]
    assert "3 run(s) failed" in last and "disk full" in last, last
    assert "(recorded in its run.json" not in last
    assert "3 of them could not be recorded in their run.json" in last, last
    assert _no_claims(res)
    for meta in res.glob("*/run.json"):
        assert json.loads(meta.read_text())["status"] != "running"
    disk.full = False
    r = invoke(*sweep)
    assert r.exit_code == 0 and "3 complete" in r.output, r.output


def test_atomic_write_on_a_full_disk_keeps_the_old_file(tmp_path, monkeypatch):
    target = tmp_path / "r" / "run.json"
    target.parent.mkdir()
    target.write_bytes(b"old")
    monkeypatch.setattr(os, "fsync", FullDisk(tmp_path / "r", 0))
    with pytest.raises(DiskFull) as e:
        atomic_write_bytes(target, b"new")
    assert target.read_bytes() == b"old" and os.listdir(target.parent) == ["run.json"]
    assert isinstance(e.value, OSError) and str(target.parent) in str(e.value)
    assert free_space(tmp_path).split()[-1] in ("GB", "MB", "KB", "bytes")


def test_the_rewrite_in_place_is_valid_json_and_never_grows(tmp_path):
    path = tmp_path / "run.json"
    path.write_text(json.dumps({"status": "running", "pad": "x" * 200}, indent=2))
    size = path.stat().st_size
    assert runner._rewrite_in_place(path, {"status": "failed", "error": "disk full"})
    assert path.stat().st_size == size
    assert json.loads(path.read_text()) == {"status": "failed", "error": "disk full"}
    assert not runner._rewrite_in_place(path, {"status": "failed", "pad": "y" * 10_000})
    assert json.loads(path.read_text())["status"] == "failed"  # unchanged, not half-written
