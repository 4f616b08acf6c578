"""What a run or sweep prints while it runs off a terminal (a log file: plain lines, not a
redrawn bar), the options that choose how much, and reading results/ while runs write it:
`fedbench table summary` beside a live `fedbench train` shows it running, never damaged."""

from __future__ import annotations

import re
import signal
import time

import pytest
from conftest import TINY, invoke
from resume_helpers import fedbench_env, run_jsons, start

from fedbench.training import signals
from fedbench.training.checkpoint import Policy
from fedbench.training.runner import train


def _wait_for(predicate, proc, seconds=240):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        assert proc.poll() is None, "the process ended first"
        time.sleep(0.05)
    return False


def _stop(proc) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.wait()


def test_train_into_a_log_file_prints_progress_lines_while_it_runs(tmp_path):
    log = tmp_path / "log"
    with open(log, "w") as out:
        proc = start(
            ["train", "--rounds", 2000, "--threads", 1, "--results", tmp_path / "r"],
            fedbench_env(FEDBENCH_PROGRESS_SECONDS="0.5"),
            out,
        )
        try:
            assert _wait_for(lambda: len(re.findall(r"round \d+/2000", log.read_text())) >= 3, proc)
            assert proc.poll() is None  # lines came while the run goes on
        finally:
            _stop(proc)
    text = log.read_text()
    assert "\x1b[" not in text and "━" not in text  # no terminal codes, no bar
    line = re.search(r"round (\d+)/2000  acc [\d.]+  loss [\d.]+  [\d.]+ s/round  ETA", text)
    assert line, text


def test_a_sweep_into_a_log_file_prints_a_line_per_finished_run(tmp_path):
    log = tmp_path / "log"
    args = ["sweep", "--grid", "rounds=3,2000", "--threads", 1, "--results", tmp_path / "r"]
    with open(log, "w") as out:
        proc = start(args, fedbench_env(), out)
        try:
            assert _wait_for(lambda: "[1/2]" in log.read_text(), proc)
        finally:
            _stop(proc)
    assert re.search(
        r"\[1/2\] fedavg-synthetic-s0-\w+  complete  best acc [\d.]+  3 rounds", log.read_text()
    )


def test_how_much_train_prints(tmp_path, one_thread):
    sets = [x for k, v in TINY.items() for x in ("--set", f"{k}={v}")]
    args = ["train", *sets, "--rounds", 3, "--threads", 1]
    quiet = invoke(*args, "--results", tmp_path / "q", "-q")
    assert quiet.exit_code == 0 and not re.search(r"round \d+/3", quiet.output)
    default = invoke(*args, "--results", tmp_path / "d")
    assert default.exit_code == 0
    assert re.findall(r"round (\d)/3", default.output) == ["0", "1", "3"]  # first, last, 10 s
    verbose = invoke(*args, "--results", tmp_path / "v", "-v")
    assert re.findall(r"round (\d)/3", verbose.output) == ["0", "1", "2", "3"]
    both = invoke(*args, "--results", tmp_path / "b", "-q", "--log-level", "debug")
    assert both.exit_code == 2 and "contradict" in both.output


# ---------------------------------------------------------------- reading while runs write


def _no_damage_claimed(output: str) -> None:
    assert "corrupt" not in output and "delete" not in output and "skipped" not in output


def test_table_summary_beside_a_live_train_shows_it_running(tmp_path):
    results = tmp_path / "r"
    proc = start(["train", "--rounds", 5000, "--threads", 1, "--results", results, "-q"],
                 fedbench_env())  # fmt: skip
    try:
        assert _wait_for(lambda: run_jsons(results), proc)
        for _ in range(5):
            r = invoke("table", "summary", "--results", results)
            assert r.exit_code == 0, r.output
            assert "running" in r.output, r.output
            _no_damage_claimed(r.output)
            time.sleep(0.2)
        r = invoke("plot", "curves", "--results", results, "--out", tmp_path / "c")
        assert r.exit_code == 0, r.output
        _no_damage_claimed(r.output)
    finally:
        _stop(proc)
    r = invoke("table", "summary", "--results", results)  # its process is gone
    assert r.exit_code == 0 and "killed" in r.output and "resumes" in r.output, r.output
    _no_damage_claimed(r.output)


def test_table_summary_shows_an_interrupted_run_with_its_rounds_so_far(tmp_path, one_thread):
    from conftest import tiny

    def stop_at_2(rec):
        if rec["round"] == 2:
            signals.request(signal.SIGTERM)

    with pytest.raises(signals.Interrupted):
        try:
            train(tiny(rounds="5"), tmp_path, on_round=stop_at_2, checkpoint=Policy(0, 0))
        finally:
            signals.reset()
    r = invoke("table", "summary", "--results", tmp_path)
    assert r.exit_code == 0 and "interrupted" in r.output, r.output
    _no_damage_claimed(r.output)
