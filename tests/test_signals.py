"""SIGINT and SIGTERM (fedbench/training/signals.py): a run stops at the end of its round, is
recorded `interrupted` with a checkpoint, its claim released, and the command exits 130 (Ctrl-C)
or 143 (SIGTERM); sweeps likewise, inline, stacked and through pool workers. Real signals to
real processes, and the handler's rules in this process."""

from __future__ import annotations

import os
import signal
import time

import pytest
from conftest import invoke
from resume_helpers import (
    assert_same_rounds,
    fedbench_env,
    run_jsons,
    run_to_end,
    signal_at,
)

from fedbench.assembly import build_config
from fedbench.training import signals
from fedbench.training.checkpoint import Policy
from fedbench.training.runner import train

# ---------------------------------------------------------------- the handler's rules


def _wait_for_signal(seconds: float = 5.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        time.sleep(0.01)


def test_without_a_round_loop_a_signal_stops_at_once():
    with signals.handling():
        with pytest.raises(signals.Interrupted) as stop:
            os.kill(os.getpid(), signal.SIGTERM)
            _wait_for_signal()
    assert stop.value.signum == signal.SIGTERM and signals.exit_code(stop.value) == 143


def test_in_a_round_loop_the_first_signal_asks_and_the_second_stops(capfd):
    with signals.handling(), signals.checking():
        os.kill(os.getpid(), signal.SIGINT)
        _wait_for_signal(0.2)
        assert signals.requested() == signal.SIGINT  # asked; the loop stops at the round's end
        with pytest.raises(signals.Interrupted) as stop:
            os.kill(os.getpid(), signal.SIGINT)
            _wait_for_signal()
    assert signals.exit_code(stop.value) == 130
    assert "stopping at the end of the round" in capfd.readouterr().err
    assert signals.requested() is None  # the block's end forgets it


def test_a_round_that_does_not_end_within_the_grace_is_stopped(monkeypatch):
    monkeypatch.setenv("FEDBENCH_STOP_GRACE", "0.2")
    with signals.handling(), signals.checking():
        os.kill(os.getpid(), signal.SIGTERM)
        with pytest.raises(signals.Interrupted) as stop:
            _wait_for_signal()  # a round that never ends
    assert stop.value.signum == signal.SIGTERM


def test_a_worker_only_asks_until_told_to_stop_now():
    with signals.handling(worker=True):
        os.kill(os.getpid(), signal.SIGTERM)  # idle: asked, nothing raised
        _wait_for_signal(0.2)
        assert signals.requested() == signal.SIGTERM
        with signals.checking():
            os.kill(os.getpid(), signal.SIGINT)  # a terminal's Ctrl-C and the sweep's forward
            os.kill(os.getpid(), signal.SIGTERM)
            _wait_for_signal(0.2)
            with pytest.raises(signals.Interrupted):
                os.kill(os.getpid(), signals.STOP_NOW)
                _wait_for_signal()


def test_the_handlers_are_put_back():
    before = {s: signal.getsignal(s) for s in signals.HANDLED}
    with signals.handling():
        pass
    assert {s: signal.getsignal(s) for s in signals.HANDLED} == before


@pytest.mark.parametrize(("stop", "code"), [(KeyboardInterrupt(), 130), ("SIGTERM", 143)])
def test_any_command_stopped_exits_128_plus_the_signal(tmp_path, monkeypatch, stop, code):
    if stop == "SIGTERM":
        stop = signals.Interrupted(signal.SIGTERM)

    def stopped(*a, **k):
        raise stop

    monkeypatch.setattr("fedbench.results.index.RunIndex.__init__", stopped)
    r = invoke("table", "summary", "--results", tmp_path)
    assert r.exit_code == code, r.output
    assert "Aborted" not in r.output and "interrupted (SIG" in r.output


# ---------------------------------------------------------------- real processes


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_train_stopped_by_a_signal_is_interrupted_and_resumes(tmp_path, one_thread, sig, code):
    results = tmp_path / "r"
    cmd = ["train", "--rounds", 30, "--threads", 1, "--results", results, "-q"]
    env = fedbench_env()
    assert signal_at(cmd, results, 5, env, sig=sig) == code
    ((name, meta),) = run_jsons(results).items()
    assert meta["status"] == "interrupted" and meta["checkpoint_round"] >= 5
    assert meta["rows"] == meta["checkpoint_round"] + 1  # stopped at the round's end
    assert (results / name / "checkpoint.pt").exists()
    assert not list((results / ".claims").glob("*.lock"))
    if sig == signal.SIGINT:
        return  # resuming is the same after either
    done = run_to_end(cmd, env)
    assert done.returncode == 0, done.stdout + done.stderr
    cfg = build_config(None, None, {"rounds": "30"})
    train(cfg, tmp_path / "clean", checkpoint=Policy(rounds=0, minutes=0))
    assert_same_rounds(results / name, tmp_path / "clean" / name)


SWEEP = ["sweep", "--seeds", "0,1", "--set", "rounds=30", "--set", "E=4", "--threads", 1, "-q"]
EXECUTORS = {"inline": [], "stack": ["--stack"], "pool": ["--jobs", "2"]}


@pytest.mark.parametrize(
    "executor",
    [pytest.param(e, marks=[pytest.mark.slow] if e == "pool" else []) for e in EXECUTORS],
)
def test_a_sweep_stopped_by_sigterm_leaves_no_running_record_and_no_claim(tmp_path, executor):
    results = tmp_path / "r"
    cmd = [*SWEEP, *EXECUTORS[executor], "--results", results]
    env = fedbench_env(FEDBENCH_FASTPATH="0")
    assert signal_at(cmd, results, 3, env, sig=signal.SIGTERM) == 143
    metas = run_jsons(results)
    assert metas and all(m["status"] in ("complete", "interrupted") for m in metas.values())
    stopped = [n for n, m in metas.items() if m["status"] == "interrupted"]
    assert stopped and all((results / n / "checkpoint.pt").exists() for n in stopped)
    assert not list((results / ".claims").glob("*.lock"))
    done = run_to_end(cmd, env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "resumed from round" in done.stdout
    metas = run_jsons(results)
    assert len(metas) == 2 and all(m["status"] == "complete" for m in metas.values())
