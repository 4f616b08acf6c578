"""`sweep --damaged rerun|stop`: what a sweep does with a finished run whose files are damaged
(table and plot's `--on-error skip` leaves such a run out; the sweep's old `--on-error` meant
"rerun" and is still taken, with a deprecation note)."""

from __future__ import annotations

from conftest import TINY, invoke, one_line_error, tiny

from fedbench.testing import fake_rounds, write_fake_run

SETS = [x for k, v in {"rounds": "2", **TINY}.items() for x in ("--set", f"{k}={v}")]


def _damaged(tmp_path):
    run = write_fake_run(tmp_path, tiny(), fake_rounds(2))
    (run / "rounds.parquet").write_bytes(b"truncated")
    return ["sweep", "--preset", "default", *SETS, "--results", tmp_path, "--dry-run"]


def test_damaged_stop_names_the_run_and_the_option_that_reruns_it(tmp_path):
    line = one_line_error(invoke(*_damaged(tmp_path), "--damaged", "stop"))
    assert "rounds.parquet" in line and "--damaged rerun" in line


def test_damaged_rerun_is_the_default(tmp_path):
    sweep = _damaged(tmp_path)
    for extra in ([], ["--damaged", "rerun"]):
        r = invoke(*sweep, *extra)
        assert r.exit_code == 0 and "rerunning:" in r.output and "1 to run" in r.output, r.output


def test_the_old_on_error_spelling_still_works_with_a_note(tmp_path):
    sweep = _damaged(tmp_path)
    r = invoke(*sweep, "--on-error", "skip")
    assert r.exit_code == 0 and "1 to run" in r.output, r.output
    assert "deprecated: sweep --on-error skip is now --damaged rerun" in r.output
    r = invoke(*sweep, "--on-error", "fail")
    assert r.exit_code == 2 and "--on-error fail is now --damaged stop" in r.output
    one_line_error(invoke(*sweep, "--on-error", "skip", "--damaged", "rerun"))
