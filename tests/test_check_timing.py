"""`fedbench check`'s timing does not fail on a loaded machine and compares only on the same
device (issue 24): fresh runs are timed in CPU seconds per round (median after the first round),
and "same device" is the same CPU model, instruction set and threads, or GPU."""

import json
import subprocess
import sys

import pytest
from click.testing import CliRunner

from fedbench import check
from fedbench.check import Tolerances, same_device, speed_row
from fedbench.cli import cli

EPYC = "cpu (AMD EPYC, x86_64, AVX512, 1 threads)"


@pytest.mark.parametrize(
    "a,b,same",
    [
        (EPYC, EPYC, True),
        (EPYC, "cpu (AMD EPYC, x86_64, AVX512, 2 threads)", False),  # threads change timings
        (EPYC, "cpu (Intel Xeon, x86_64, AVX512, 1 threads)", False),  # another model
        (EPYC, "cpu (AMD EPYC, x86_64, AVX2, 1 threads)", False),  # another instruction set
        ("cpu (x86_64, 1 threads)", "cpu (x86_64, 1 threads)", False),  # no model recorded
        ("NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3", True),
        (None, None, False),
    ],
)
def test_same_device_means_the_same_cpu_model(a, b, same):
    assert same_device(a, b) is same


def test_cpu_seconds_are_compared_where_both_have_them():
    ref = {"device_name": EPYC, "cpu_round_seconds": 0.002, "median_round_seconds": 0.002}
    # a loaded machine: wall time 10x, CPU time as before -> ok
    busy = {"device_name": EPYC, "cpu_round_seconds": 0.0025, "median_round_seconds": 0.02}
    row = speed_row("c", ref, busy, Tolerances())
    assert (row.metric, row.status, row.allowed) == ("CPU s/round", "ok", "<= 0.006")
    # the engine got slower: CPU time 4x -> regressed
    slow = {**busy, "cpu_round_seconds": 0.008}
    assert speed_row("c", ref, slow, Tolerances()).status == "REGRESSED"
    # runs read from --results have wall seconds only
    read = {"device_name": EPYC, "median_round_seconds": 0.007}
    row = speed_row("c", ref, read, Tolerances())
    assert (row.metric, row.status) == ("s/round", "REGRESSED")
    # another device, an old reference, --no-timing: shown, not compared
    other = {**busy, "device_name": "cpu (Intel Xeon, x86_64, AVX2, 1 threads)"}
    assert speed_row("c", ref, other, Tolerances()).status == f"not compared (reference on {EPYC})"
    old = {"device_name": "cpu (x86_64, 1 threads)", "mean_round_seconds": 0.007}
    assert speed_row("c", old, busy, Tolerances()).status.startswith("not compared (the reference")
    row = speed_row("c", ref, slow, Tolerances(timing=False))
    assert row.status == "not compared (--no-timing)"


def test_a_checks_cpu_time_is_the_median_round_after_the_first(tmp_path, monkeypatch):
    """run_timed reads this process's CPU clock at each round: rounds 0..3 of a 3-round run at
    CPU 0, 10 (round 1 compiles), 11, 13 -> rounds 2 and 3 took 1 and 2 -> median 1.5."""
    clock = iter([0.0, 10.0, 11.0, 13.0])
    monkeypatch.setattr(check, "cpu_now", lambda: next(clock))
    cfg = check.build_config(
        "default", None, {"rounds": "3", "N": "4", "K": "2", "local_steps": "1", "device": "cpu"}
    )
    error, cpu = check.run_timed(cfg, tmp_path, threads=1)
    assert error is None and cpu == 1.5


def test_a_fresh_check_records_its_cpu_seconds(tmp_path):
    ref = tmp_path / "ref.json"
    r = CliRunner().invoke(
        cli, ["check", "--only", "fedavg-synthetic", "--reference", str(ref), "--update"], obj={}
    )
    assert r.exit_code == 0, r.output
    got = json.loads(ref.read_text())["checks"]["fedavg-synthetic"]
    assert 0 < got["cpu_round_seconds"] < 1 and got["device_name"].startswith("cpu (")
    assert got["median_round_seconds"] > 0


@pytest.mark.slow
def test_check_quick_passes_beside_two_busy_processes():
    """The issue's case: `fedbench check --quick` on a machine kept busy by two processes that
    spin for the whole check (on top of whatever else runs)."""
    spin = [sys.executable, "-c", "while True: pass"]
    busy = [subprocess.Popen(spin) for _ in range(2)]
    try:
        for _ in range(3):
            r = CliRunner().invoke(cli, ["check", "--quick"], obj={})
            assert r.exit_code == 0, r.output
    finally:
        for p in busy:
            p.kill()
            p.wait()
