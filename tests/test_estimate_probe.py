"""The probe before an estimate (fedbench.sweep.probe): a few rounds of one run of each setting
timed here now, a run = setup + rounds x a round + evaluations x one; the unprobed settings'
store rates scaled by the probed ones' ratio; runs that stop at their target counted at their
kin's rounds. Hand-made stores and probes: no timing is asserted."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from conftest import invoke

from fedbench.config import RunConfig
from fedbench.sweep import probe as probes
from fedbench.sweep.probe import Probe, probe_of, probe_plan
from fedbench.sweep.rates import Rates

DEVICE = "dev"


def _finished(results: Path, cfg: RunConfig, seconds: float, rounds_run: int | None = None):
    """A finished run of cfg on DEVICE that took `seconds` wall over rounds_run rounds."""
    from fedbench.testing import write_fake_run

    meta_path = write_fake_run(results, cfg, device_name=DEVICE) / "run.json"
    meta = json.loads(meta_path.read_text())
    start = datetime(2026, 1, 1)
    meta.update(started=start.isoformat(), ended=(start + timedelta(seconds=seconds)).isoformat())
    meta["summary"]["rounds_run"] = rounds_run or cfg.rounds
    meta_path.write_text(json.dumps(meta))


def test_a_probed_run_is_setup_rounds_and_evaluations():
    p = Probe(setup=2.0, round=0.5, eval=0.1, rounds=3, wall=3.8)
    # 10 rounds, evaluated at 0, 4, 8 and the last: 2 + 10 x 0.5 + 4 x 0.1
    assert p.run_seconds(10, 4) == pytest.approx(7.4)
    assert p.run_seconds(10, 1) == pytest.approx(2 + 5 + 11 * 0.1)


def test_a_probe_is_read_from_its_rounds():
    """Wall 10 s; rounds of 2.0, 1.0, 1.2 s (the mean after the first, 1.1: the first round's
    warm-up is setup); 4 evaluations of 0.2 s: setup 10 - 3 x 1.1 - 4 x 0.2 = 5.9."""
    rows = [{"round": 0, "round_seconds": 0.0, "eval_seconds": 0.2}] + [
        {"round": r, "round_seconds": s, "eval_seconds": 0.2}
        for r, s in ((1, 2.0), (2, 1.0), (3, 1.2))
    ]
    p = probe_of(10.0, {"summary": {"rounds_run": 3}}, rows)
    assert (p.round, p.eval, p.rounds) == pytest.approx((1.1, 0.2, 3))
    assert p.setup == pytest.approx(5.9)
    assert probe_of(10.0, {"summary": {"rounds_run": 0}}, rows) is None


def _two_settings(tmp_path) -> Rates:
    """Setting A (K 3): 1 s a round; setting B (K 5): 2 s a round; 10-round runs."""
    for seed in (0, 1):
        _finished(tmp_path, RunConfig(seed=seed, rounds=10, clients_per_round=3), 10)
        _finished(tmp_path, RunConfig(seed=seed, rounds=10, clients_per_round=5), 20)
    return Rates.read(tmp_path, shipped=False)


def test_probed_settings_use_the_probe_and_the_others_its_ratio(tmp_path, monkeypatch):
    """A's probe says 5 s a run (store: 10 s): x0.5; B, not probed, 20 s x 0.5."""
    rates = _two_settings(tmp_path)
    a, b = (
        RunConfig(seed=7, rounds=10, clients_per_round=3),
        RunConfig(seed=7, rounds=10, clients_per_round=5),
    )
    calls = []

    def fake(cfg, rounds, threads=None):
        calls.append((cfg.clients_per_round, rounds, threads))
        return Probe(setup=1.0, round=0.3, eval=0.1, rounds=rounds, wall=2.0) \
            if cfg.clients_per_round == 3 else None  # fmt: skip

    monkeypatch.setattr(probes, "run_probe", fake)
    monkeypatch.setattr(probes, "_COLD", [False])  # this process has probed before
    probe_plan(rates, [a, b], DEVICE, 30, threads=1)
    # B has more expected time: probed first (its probe failed: left to the store); each
    # for about 5 s of rounds at its store rate, at least 3, at the runs' threads
    assert calls == [(5, 3, 1), (3, 5, 1)]
    guess = rates.estimate([a, b], DEVICE)
    # a: 1 + 10 x 0.3 + 11 x 0.1 = 5.1; b: 20 x (5.1 / 10)
    assert guess.seconds == pytest.approx(5.1 + 20 * 0.51)
    assert guess.how == {"probe": 1, "here": 1}
    text = guess.source_text("res")
    assert text.startswith("1 runs from a probe here now (1 settings")
    assert "1 from runs of the same settings on this device; those x0.51" in text


def test_a_processs_first_probe_runs_again_warm(tmp_path, monkeypatch):
    """The first probe (setup 3 s) runs again (setup 1 s): the runs' setup is the warm one, the
    2 s difference is counted once (the runs after the first share the process)."""
    rates = _two_settings(tmp_path)
    setups = iter([3.0, 1.0])
    monkeypatch.setattr(probes, "run_probe", lambda cfg, rounds, threads=None: Probe(
        next(setups), 0.3, 0.1, rounds, 2.0))  # fmt: skip
    monkeypatch.setattr(probes, "_COLD", [True])
    a = [RunConfig(seed=s, rounds=10, clients_per_round=3) for s in (7, 8)]
    probe_plan(rates, a, DEVICE, 30)
    assert rates.warmup == 2.0 and probes._COLD == [False]
    guess = rates.estimate(a, DEVICE)
    assert guess.seconds == pytest.approx(2 * (1 + 3 + 1.1) + 2.0)
    assert "a process's first run +2.0 s" in guess.source_text("r")


def test_no_probe_at_0_seconds_or_past_its_time(tmp_path, monkeypatch):
    rates = _two_settings(tmp_path)
    monkeypatch.setattr(probes, "run_probe", lambda *a, **k: pytest.fail("probed"))
    probe_plan(rates, [RunConfig(rounds=10, clients_per_round=3)], DEVICE, 0)
    # a setting whose probe rounds at the store's rate would outlast the probe's time
    probe_plan(rates, [RunConfig(rounds=10, clients_per_round=5)], DEVICE, 1.0)
    assert rates.probes == {} and rates.speed == 1.0
    assert rates.estimate([RunConfig(rounds=10, clients_per_round=5)], DEVICE).seconds == 20


def test_a_run_that_stops_at_its_target_counts_its_kins_rounds(tmp_path):
    """Seeds 0-2 stopped at rounds 8, 12, 10 of 50 (1 s a round): seed 3 expects 10 rounds;
    another lr has no kin: its 50 rounds, and the line says it may stop sooner."""
    target = {"rounds": 50, "stop_at_target": True, "target_acc": 0.5}
    for seed, ran in ((0, 8), (1, 12), (2, 10)):
        _finished(tmp_path, RunConfig(seed=seed, **target), ran, rounds_run=ran)
    rates = Rates.read(tmp_path, shipped=False)
    kin = RunConfig(seed=3, **target)
    assert rates.expected_rounds(kin) == 10
    guess = rates.estimate([kin], DEVICE)
    assert guess.seconds == pytest.approx(10.0)
    assert "1 runs stop at their target: their rounds are the median" in guess.source_text("r")
    other = RunConfig(seed=3, lr=0.5, **target)
    guess = rates.estimate([other], DEVICE)
    assert guess.seconds == pytest.approx(50.0)
    assert "1 runs may stop at their target sooner: counted at their full" in (
        guess.source_text("r"))  # fmt: skip


def test_sweep_dry_run_probes_here(tmp_path, one_thread):
    """The real command: a tiny sweep with nothing run anywhere is estimated from its probe
    (the probe's folder is temporary: nothing recorded in --results)."""
    from conftest import TINY_SETS

    r = invoke("sweep", "--seeds", "0,1", *TINY_SETS, "--threads", "1", "--dry-run",
               "--probe", "20", "--results", tmp_path / "res")  # fmt: skip
    assert r.exit_code == 0, r.output
    line = next(x for x in r.output.splitlines() if x.startswith("expected time:"))
    assert "2 runs from a probe here now (1 settings" in line, line
    assert not (tmp_path / "res").exists() or not any((tmp_path / "res").iterdir())
    r = invoke("sweep", "--seeds", "0", *TINY_SETS, "--dry-run", "--results", tmp_path / "r2")
    assert "expected time: unknown" in r.output  # FEDBENCH_PROBE=0 in the tests: none


def test_reproduce_dry_run_probes_here(tmp_path, one_thread, private_cache):
    """The real command: a quick FedProx table with no runs anywhere, estimated from a probe;
    the probe records nothing in --results."""
    r = invoke("reproduce", "fedprox", "--dataset", "synthetic-iid", "--tables", "adaptive-mu",
               "--scale", "quick", "--threads", "1", "--dry-run", "--probe", "20",
               "--results", tmp_path / "r")  # fmt: skip
    assert r.exit_code == 0, r.output
    note = next(x for x in r.output.splitlines() if x.startswith("estimate: "))
    assert "runs from a probe here now (1 settings" in note, r.output
    assert "expected unknown" not in r.output
    assert not list((tmp_path / "r").rglob("run.json"))
