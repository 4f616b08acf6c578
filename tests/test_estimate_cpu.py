"""CPU-time rates (issue 33): every run records its CPU seconds and the load beside its wall
time; an estimate from runs that carry them converts their CPU rate to wall at the load now
(wall = CPU x max(1, load / cores)), and falls back to wall rates for older runs."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from conftest import invoke

from fedbench.sweep import accuracy
from fedbench.sweep.rates import Rates

DEVICE = "cpu (test CPU, x86_64)"


def _finished(results: Path, cfg, seconds: float, cpu: float | None, load=None) -> None:
    """A finished run of cfg on DEVICE: `seconds` wall, `cpu` CPU seconds (None: an older run
    without them), recorded at `load`."""
    from fedbench.testing import write_fake_run

    meta_path = write_fake_run(results, cfg, device_name=DEVICE) / "run.json"
    meta = json.loads(meta_path.read_text())
    start = datetime(2026, 1, 1)
    meta.update(started=start.isoformat(), ended=(start + timedelta(seconds=seconds)).isoformat())
    if cpu is not None:
        meta.update(cpu_seconds=cpu, load_start=load, load_end=load)
    meta_path.write_text(json.dumps(meta))


def _cfg(seed: int, rounds: int = 10):
    from fedbench.config import RunConfig

    return RunConfig(seed=seed, rounds=rounds)


@pytest.fixture
def load_now(monkeypatch):
    """This machine at load 6 on 2 cores: x3 a quiet run's time."""
    monkeypatch.setattr("os.getloadavg", lambda: (6.0, 6.0, 6.0))
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: {0, 1})


def test_a_run_records_its_cpu_seconds_and_the_load(tmp_path, one_thread):
    r = invoke("train", "--rounds", "3", "--threads", "1", "--results", tmp_path)
    assert r.exit_code == 0, r.output
    (meta_path,) = tmp_path.glob("*/run.json")
    meta = json.loads(meta_path.read_text())
    assert meta["cpu_seconds"] > 0
    assert meta["load_start"] is not None and meta["load_end"] is not None


def test_cpu_rates_are_converted_at_the_load_now(tmp_path, load_now):
    """Two runs of 10 rounds: 100 s wall (measured under a heavy load), 10 s CPU: the estimate
    is 1 s CPU a round x3 for the load now, not their 10 s wall a round."""
    from fedbench.results import RunIndex

    for seed in (0, 1):
        _finished(tmp_path, _cfg(seed), 100, 10.0, load=20.0)
    rates = Rates.read(tmp_path, shipped=False)
    guess = rates.estimate([_cfg(2)], DEVICE)
    assert guess.seconds == pytest.approx(10 * 1.0 * 3)
    assert guess.basis == {"cpu": 1}
    text = guess.source_text("here")
    assert "CPU-time rates" in text and "CPU seconds x3.0 for the load now (6.0 on 2 cores)" in text
    # an exported (or shipped) row keeps them; an older row without the columns reads null
    from fedbench.results.export import meta_from_row, run_row

    (rec, _) = RunIndex(tmp_path, on_error="skip").records()
    row = run_row(rec.meta, rec.run_id)
    assert meta_from_row(row)["cpu_seconds"] == 10.0
    old = {k: v for k, v in row.items() if k not in ("cpu_seconds", "load_start", "load_end")}
    assert meta_from_row(old)["cpu_seconds"] is None


def test_runs_without_cpu_seconds_keep_the_wall_rates(tmp_path, load_now):
    for seed in (0, 1):
        _finished(tmp_path, _cfg(seed), 100, None)
    guess = Rates.read(tmp_path, shipped=False).estimate([_cfg(2)], DEVICE)
    assert guess.seconds == pytest.approx(100)
    assert guess.basis == {"wall": 1}
    assert "from the wall-time rates of 2 finished runs" in guess.source_text("here")


def test_the_sweep_dry_run_says_its_cpu_basis(tmp_path, load_now, monkeypatch):
    monkeypatch.setattr("fedbench.sweep.estimate.this_device", lambda cfg: DEVICE)
    for seed in (0, 1):
        _finished(tmp_path, _cfg(seed), 100, 10.0, load=20.0)
    r = invoke("sweep", "--seeds", "2", "--set", "rounds=10", "--results", tmp_path,
               "--dry-run", "--threads", "1")  # fmt: skip
    assert r.exit_code == 0, r.output
    line = next(x for x in r.output.splitlines() if x.startswith("expected time"))
    assert line.startswith("expected time: 30 s on cpu (test CPU, x86_64), from the CPU-time"), line


def test_leave_one_out_on_cpu_rates_follows_each_runs_load(tmp_path, load_now):
    """Three runs of one setting, 1 s CPU a round each, at loads 2, 6 and 8 on 2 cores (x1, x3,
    x4 wall): from CPU rates at each run's own load every estimate is exact; from the others'
    wall rates one of the three is within 30 %."""
    from fedbench.results import RunIndex

    for seed, load in ((0, 2.0), (1, 6.0), (2, 8.0)):
        _finished(tmp_path, _cfg(seed), 10 * max(1.0, load / 2), 10.0, load=load)
    records = list(RunIndex(tmp_path, on_error="skip").records())
    cpu = accuracy.leave_one_out(records, basis="cpu")
    assert [round(c.ratio, 6) for c in cpu] == [1.0, 1.0, 1.0]
    wall = accuracy.spread([c.ratio for c in accuracy.leave_one_out(records, basis="wall")])
    assert wall["within"] < 0.5
