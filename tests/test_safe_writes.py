"""Writes never lose a finished result: an overwrite killed with SIGKILL leaves the old run, any
crash after the claim is recorded failed, a short rounds file is rerun, --on-error skip works in
every command, run.json is strict JSON, diverged runs say so, a sweep's summary rereads the
claims."""

import json
import os
import platform
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import (
    TINY,
    TINY_TABLE,
    invoke,
    one_line_error,
    reading_commands,
    stragglers_runs,
    tiny,
)

from fedbench.assembly import build_config
from fedbench.identity import config_hash, run_id
from fedbench.results import RunIndex
from fedbench.sweep import Plan, SweepReport, plan_sweep, recheck_busy, run_sweep, summary_line
from fedbench.testing import write_fake_run
from fedbench.training.runner import _recover, diverged, train

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.usefixtures("one_thread", "private_cache")


def test_overwrite_killed_with_sigkill_leaves_the_old_run(tmp_path):
    res = tmp_path / "r"
    cfg = build_config("default", None, {"rounds": "400", **TINY, "local_steps": "50"})
    old = write_fake_run(res, cfg)
    before = {p.name: p.read_bytes() for p in old.iterdir()}
    cmd = [sys.executable, "-m", "fedbench.cli", "train", "--preset", "default", "--quiet"]
    sets = {"rounds": "400", **TINY, "local_steps": "50"}  # each field once on a command line
    cmd += [x for k, v in sets.items() for x in ("--set", f"{k}={v}")]
    cmd += ["--threads", "1", "--results", str(res), "--overwrite"]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    aside = []
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and proc.poll() is None and not aside:
            aside = list(res.glob(f".{run_id(cfg)}.new-*/partition.parquet"))
            time.sleep(0.02)
        time.sleep(0.3)  # a few rounds into the new run
    finally:
        proc.send_signal(signal.SIGKILL)
        out = proc.communicate()[0].decode()
    assert aside, f"the new run was never written aside: {out}"
    assert {p.name: p.read_bytes() for p in old.iterdir()} == before  # untouched
    assert RunIndex(res).finished(config_hash(cfg)) is not None
    _recover(res, run_id(cfg))  # what the next claim of this run does first
    assert [p.name for p in res.iterdir() if p.name != ".claims"] == [old.name]


def test_overwrite_swaps_in_the_new_run_and_a_failed_one_keeps_the_old(tmp_path, monkeypatch):
    from fedbench.training.engine import Engine

    cfg = tiny()
    res = tmp_path / "r"
    old = write_fake_run(res, cfg)
    text = (old / "run.json").read_text()

    def boom(self):
        raise RuntimeError("boom")

    with monkeypatch.context() as m:
        m.setattr(Engine, "eval_record", boom)
        with pytest.raises(RuntimeError):
            train(cfg, res, overwrite=True)
    assert (old / "run.json").read_text() == text
    meta, df = train(cfg, res, overwrite=True)
    assert json.loads((old / "run.json").read_text())["host"] == platform.node()
    assert len(pd.read_parquet(old / "rounds.parquet")) == 3 == meta["rows"]
    assert [p.name for p in res.iterdir() if p.name != ".claims"] == [old.name]


@pytest.mark.parametrize("where", ["eval_record", "run_round"])
def test_any_crash_after_the_claim_is_recorded_failed(tmp_path, monkeypatch, where):
    from fedbench.training.engine import Engine

    def boom(self, *a):
        raise RuntimeError(f"boom in {where}")

    monkeypatch.setattr(Engine, where, boom)
    cfg = tiny()
    with pytest.raises(RuntimeError):
        train(cfg, tmp_path)
    meta = json.loads((tmp_path / run_id(cfg) / "run.json").read_text())
    assert meta["status"] == "failed" and meta["error"] == f"RuntimeError: boom in {where}"
    assert not list((tmp_path / ".claims").glob("*.lock"))


@pytest.mark.parametrize("keep", [0, 2])
def test_a_short_rounds_file_is_rerun(tmp_path, keep):
    cfg = tiny(rounds="3")
    train(cfg, tmp_path)
    path = tmp_path / run_id(cfg) / "rounds.parquet"
    pd.read_parquet(path).head(keep).to_parquet(path, index=False)  # a footer that reads
    plan = plan_sweep([cfg], tmp_path)
    assert [run_id(c) for c in plan.todo] == [run_id(cfg)] and "rows" in plan.problems[0]
    report = run_sweep(plan, tmp_path, quiet=True)
    assert report.outcomes[0].status == "complete"
    assert len(pd.read_parquet(path)) == 4
    assert plan_sweep([cfg], tmp_path).done == [run_id(cfg)]


def _damage(run_dir: Path, kind: str) -> None:
    meta_path, rounds_path = run_dir / "run.json", run_dir / "rounds.parquet"
    meta = json.loads(meta_path.read_text())
    if kind == "garbage":
        meta_path.write_text("{not json")
    elif kind in ("[]", "null"):
        meta_path.write_text(kind)
    elif kind == "wrong types":
        meta["summary"] = {**meta["summary"], "final_train_loss": "low", "final_local_loss": "x"}
        meta_path.write_text(json.dumps(meta))
    elif kind == "status type":
        meta["status"] = 7
        meta_path.write_text(json.dumps(meta))
    elif kind == "missing columns":
        pd.read_parquet(rounds_path).drop(columns=["round"]).to_parquet(rounds_path)
    elif kind == "column types":
        df = pd.read_parquet(rounds_path)
        df["train_loss"] = df["train_loss"].astype(str)
        df.to_parquet(rounds_path)
    elif kind == "short":
        pd.read_parquet(rounds_path).head(1).to_parquet(rounds_path)


DAMAGE = [
    "garbage",
    "[]",
    "null",
    "wrong types",
    "status type",
    "missing columns",
    "column types",
    "short",
]


TABLE = TINY_TABLE


@pytest.mark.parametrize("kind", DAMAGE)
def test_on_error_skip_works_in_every_command_for_every_damage(tmp_path, kind):
    res = tmp_path / "r"
    dirs = stragglers_runs(res)
    _damage(dirs[0], kind)
    skip = ["--results", res, "--on-error", "skip"]
    for cmd in reading_commands(tmp_path):
        r = invoke(*cmd, *skip)
        assert r.exit_code == 0, (cmd, r.output)
        assert "skipped" in r.output, (cmd, r.output)
        name = str(dirs[0]).replace("\n", "")
        assert name in r.output.replace("\n", ""), (cmd, r.output)
        one_line_error(invoke(*cmd, "--results", res))
    sweep = ["sweep", "--table", "stragglers", *TABLE, "--results", res, "--quiet"]
    one_line_error(invoke(*sweep, "--damaged", "stop", "--dry-run"))  # was --on-error fail
    r = invoke(*sweep, "--threads", "1")  # skip (the default) reruns the damaged run
    assert r.exit_code == 0 and "8 already done, 1 to run" in r.output, r.output
    assert json.loads((dirs[0] / "run.json").read_text())["status"] == "complete"
    r = invoke(*sweep)
    assert "9 already done, 0 to run" in r.output, r.output  # repaired, not retried


def test_run_json_is_strict_json_with_null_for_non_finite(tmp_path):
    quad = {"dataset": "quadratic", "model": "quadratic", "N": "2", "K": "2", "B": "1"}
    cfg = build_config(None, None, {**quad, "local_steps": "5", "rounds": "3", "lr": "3"})
    meta, _ = train(cfg, tmp_path)
    text = (tmp_path / run_id(cfg) / "run.json").read_text()

    def no_constants(c):
        raise ValueError(f"{c} in run.json")

    back = json.loads(text, parse_constant=no_constants)
    assert back["summary"]["best_acc"] is None  # no accuracy: the quadratic has none
    assert back["schema_version"] >= 2


def test_divergence_rule():
    import torch

    w = torch.zeros(3)
    base: dict = {}
    assert not diverged({"test_loss": 2.3}, base, w)
    assert not diverged({"test_loss": 2000.0, "n_full": 1, "local_loss": 1.0}, base, w)
    assert diverged({"test_loss": 2400.0}, base, w)  # > 1000 x 2.3
    assert diverged({"test_loss": float("nan")}, base, w)
    assert diverged({"test_loss": 1.0}, base, torch.tensor([0.0, float("inf"), 0.0]))
    assert diverged({"n_full": 2, "local_loss": float("inf")}, base, w)
    assert not diverged({"n_full": 0, "local_loss": float("nan")}, {}, w)  # no device trained


def test_a_loss_grown_by_orders_of_magnitude_is_diverged_not_complete(tmp_path):
    quad = {"dataset": "quadratic", "model": "quadratic", "N": "2", "K": "2", "B": "1"}
    cfg = build_config(None, None, {**quad, "local_steps": "5", "rounds": "10", "lr": "3"})
    meta, df = train(cfg, tmp_path)
    assert meta["status"] == "diverged" and len(df) < 11
    assert np.isfinite(df["dist_to_opt"]).all()  # finite, but 1000x the start


def test_the_final_summary_rereads_the_claims(tmp_path):
    from fedbench.results.locks import CLAIMS_DIR, _proc_start

    cfg = tiny()
    res = tmp_path / "r"
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        (res / CLAIMS_DIR).mkdir(parents=True)
        lock = {"pid": other.pid, "host": platform.node(), "proc_start": _proc_start(other.pid)}
        (res / CLAIMS_DIR / f"{run_id(cfg)}.lock").write_text(json.dumps(lock))
        plan = plan_sweep([cfg], res)
        assert plan.busy == [run_id(cfg)]  # another sweep is running it
        write_fake_run(res, cfg)  # ... and finishes it
    finally:
        other.kill()
        other.wait()
    report = run_sweep(plan, res, quiet=True)
    line = summary_line(report)
    assert "running elsewhere" not in line and "1 already done" in line
    # a claim gone with its run unfinished (that sweep was killed) is neither
    busy = SweepReport(Plan(busy=["x-1"]))
    recheck_busy(busy, res)
    assert (busy.plan.busy, busy.plan.done, busy.plan.left) == ([], [], ["x-1"])
    assert "left unfinished elsewhere" in summary_line(busy)
