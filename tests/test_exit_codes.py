"""docs/exit-codes.md is what the CLI does (issue 24): every documented code is listed, and the
ones a test can provoke in-process (0, 1, 2) come from the commands the table names."""

import re
import shutil
from pathlib import Path

import pytest
from conftest import invoke

from fedbench.check import QUICK, check_configs
from fedbench.testing import curve_until, write_fake_run

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "exit-codes.md"


def documented() -> dict[int, str]:
    """{code: meaning} of the doc's table."""
    rows = re.findall(r"^\| (\d+) \| ([^|]+) \|", DOC.read_text(), re.M)
    return {int(code): meaning.strip() for code, meaning in rows}


def test_the_doc_lists_the_codes_and_the_readme_links_it():
    assert sorted(documented()) == [0, 1, 2, 75, 130, 143]  # 75: reproduce's budget ended
    from fedbench.sweep.budget import EXIT_BUDGET

    assert "budget ended first" in documented()[EXIT_BUDGET]
    assert "(docs/exit-codes.md)" in (ROOT / "README.md").read_text()
    assert "(exit-codes.md)" in (ROOT / "docs" / "usage.md").read_text()


def test_0_done(tmp_path):
    assert invoke("presets").exit_code == 0
    r = invoke("sweep", "--dry-run", "--results", tmp_path / "r")
    assert r.exit_code == 0, r.output


def _check_runs(results, top):
    for cfg in check_configs(QUICK).values():
        df = curve_until(top, 3, cfg.target_acc, cfg.rounds)
        df["round_seconds"] = [0.0] + [0.01] * cfg.rounds
        write_fake_run(results, cfg, df, device_name="cpu (fake)")


def test_1_what_ran_failed_or_regressed(tmp_path):
    """check finds a regression; docs finds stale tables."""
    good, bad, ref = tmp_path / "good", tmp_path / "bad", tmp_path / "ref.json"
    _check_runs(good, 0.95)
    assert (
        invoke("check", "--quick", "--results", good, "--reference", ref, "--update").exit_code == 0
    )
    _check_runs(bad, 0.80)
    r = invoke("check", "--quick", "--results", bad, "--reference", ref)
    assert r.exit_code == 1 and "regression(s)" in r.output, r.output
    repo = tmp_path / "repo"
    for folder in ("docs", "tables"):
        shutil.copytree(ROOT / folder, repo / folder)
    text = (ROOT / "README.md").read_text()
    assert "| [adaptive-mu]" in text  # a row of a generated section, made stale:
    (repo / "README.md").write_text(text.replace("| [adaptive-mu]", "| [ADAPTIVE-mu]", 1))
    r = invoke("docs", "--root", repo)
    assert r.exit_code == 1 and "stale" in r.output, r.output


@pytest.mark.parametrize(
    "args",
    [
        ["train", "--set", "lr=inf"],
        ["train", "--results", ""],
        ["train", "--preset", "nosuch"],
        ["--nosuch"],
        ["sweep", "--grid", "lr=" + ",".join(str(i + 1) for i in range(101)),
         "--grid", "rho=" + ",".join(str(i / 100) for i in range(100)), "--dry-run"],
        ["train", "--set", "batch_size=2000000000"],
    ],
)  # fmt: skip
def test_2_refused_before_any_work(tmp_path, args, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = invoke(*args)
    assert r.exit_code == 2, r.output
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("Error: "), r.stderr
    assert list(tmp_path.iterdir()) == []
