"""fedbench check: the committed reference passes, regressions exit 1 with a readable diff."""

import json

import pytest
from conftest import invoke

from fedbench.check import QUICK, check_configs
from fedbench.check.arithmetic import ARITHMETIC
from fedbench.testing import curve_until, write_fake_run

pytestmark = pytest.mark.usefixtures("one_thread")


# two paper-scale checks, read from made-up runs (the arithmetic checks are not in --only)
PAIR = ("fedavg-synthetic", "fedprox-stragglers")
ONLY = ("--only", ",".join(PAIR))


def fake_check_runs(results, hit=3, top=0.95, seconds=0.01, device="cpu (fake)"):
    """PAIR's runs, made up: target 0.9 first reached at round `hit`."""
    for cfg in check_configs(PAIR).values():
        df = curve_until(top, hit, cfg.target_acc, cfg.rounds)
        df["round_seconds"] = [0.0] + [seconds] * cfg.rounds
        df["cum_seconds"] = df["round_seconds"].cumsum()
        write_fake_run(results, cfg, df, device_name=device)


def test_quick_check_passes_against_the_committed_reference():
    r = invoke("check", "--quick", "--no-timing")
    assert r.exit_code == 0, r.output
    n = len(QUICK) + len(ARITHMETIC)
    assert f"ok: {n} check(s) within tolerance" in r.output and "REGRESSED" not in r.output
    # the claim's direction is asserted
    assert "fedprox-stragglers-90 vs fedavg-drop-90" in r.output


def test_update_then_check_the_same_results(tmp_path):
    res, ref = tmp_path / "results", tmp_path / "ref.json"
    fake_check_runs(res)
    r = invoke("check", *ONLY, "--results", res, "--reference", ref, "--update")
    assert r.exit_code == 0, r.output
    data = json.loads(ref.read_text())
    assert set(data["checks"]) == set(PAIR) and data["arithmetic"] == {}
    assert data["checks"]["fedavg-synthetic"]["rounds_to_target"] == 3
    r = invoke("check", *ONLY, "--results", res, "--reference", ref)
    assert r.exit_code == 0 and "ok: 2 check(s)" in r.output, r.output


def test_regressions_exit_1_with_a_readable_diff(tmp_path):
    good, bad, ref = tmp_path / "good", tmp_path / "bad", tmp_path / "ref.json"
    fake_check_runs(good, hit=3, top=0.95, seconds=0.01)
    assert invoke("check", *ONLY, "--results", good, "--reference", ref, "--update").exit_code == 0
    fake_check_runs(bad, hit=6, top=0.91, seconds=0.05)  # later, lower and 5x slower
    r = invoke("check", *ONLY, "--results", bad, "--reference", ref)
    assert r.exit_code == 1, r.output
    assert r.output.count("REGRESSED") == 2 * 4  # best, final, rounds, s/round for both checks
    last = r.output.strip().splitlines()[-1]
    assert last.startswith("Error: 8 regression(s): fedavg-synthetic best_acc 0.95 -> 0.91")
    # within tolerances: nothing regresses; timings on another device kind are not compared
    r = invoke(
        "check",
        *ONLY,
        "--results",
        bad,
        "--reference",
        ref,
        "--acc-tol",
        "0.05",
        "--rounds-tol",
        "1",
        "--speed-factor",
        "10",
    )
    assert r.exit_code == 0, r.output
    other = tmp_path / "gpu"
    fake_check_runs(other, hit=3, top=0.95, seconds=1.0, device="NVIDIA H100")
    r = invoke("check", *ONLY, "--results", other, "--reference", ref)
    assert r.exit_code == 0 and "not compared (reference on cpu (fake))" in r.output, r.output


@pytest.mark.parametrize(
    "args,needle",
    [
        (["--reference", "/no/such.json"], "no reference at /no/such.json"),
        (["--only", "nosuch"], "unknown check 'nosuch'"),
    ],
)
def test_check_errors_are_one_line(args, needle):
    r = invoke("check", *args)
    assert r.exit_code == 2 and r.output.count("\n") == 1 and needle in r.output, r.output


def test_results_without_the_check_runs(tmp_path):
    (tmp_path / "r").mkdir()
    r = invoke("check", *ONLY, "--results", tmp_path / "r")
    assert r.exit_code == 2 and "has no finished run of check fedavg-synthetic" in r.output
