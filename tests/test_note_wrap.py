"""Note lines printed under a table or plot wrap at the terminal's width, 80 off a terminal,
as the claim lines do (issue 31); words (paths, commands) are never split."""

from __future__ import annotations

from pathlib import Path

from conftest import invoke

STORE = Path(__file__).resolve().parents[1] / "results" / "shipped"
FRAME = set("│┃┡┗┏└┌├╇━─┳┻╋╹╻")  # a rich table's own lines are as wide as it is


def prose(output: str) -> list[str]:
    """The lines after the table (its title and frame are as wide as it is), but `wrote PATH`."""
    lines = output.splitlines()
    last = max((i for i, ln in enumerate(lines) if FRAME & set(ln)), default=-1)
    return [ln for ln in lines[last + 1 :] if not ln.startswith("wrote ")]


def test_paper_table_notes_fit_80_columns_off_a_terminal(tmp_path, monkeypatch):
    monkeypatch.setenv("FEDBENCH_STORE", str(STORE))  # the shipped runs, as a fresh clone has
    r = invoke("table", "tau", "--dataset", "fmnist")
    assert r.exit_code == 0, r.output
    lines = prose(r.output)
    assert max(len(x) for x in lines) <= 80, [x for x in lines if len(x) > 80]
    assert any(x.startswith("note: ") for x in lines) and any("FedSAM" in x for x in lines)
    r = invoke("plot", "tau", "--dataset", "fmnist", "--out", tmp_path)
    assert r.exit_code == 0, r.output
    lines = prose(r.output)
    assert any(x.startswith("note: ") for x in lines), r.output
    assert max(len(x) for x in lines) <= 80, [x for x in lines if len(x) > 80]


def test_the_summary_note_of_stacked_runs_fits_80_columns(tmp_path):
    sweep = ["sweep", "--methods", "fedavg", "--seeds", "0,1", "--stack", "--threads", "1",
             "--set", "rounds=2", "--set", "N=6", "--set", "K=3", "--set", "local_steps=2",
             "--set", "eval_train=false", "--quiet", "--results", tmp_path]  # fmt: skip
    assert invoke(*sweep).exit_code == 0
    r = invoke("table", "summary", "--results", tmp_path)
    assert r.exit_code == 0, r.output
    lines = prose(r.output)
    note = [i for i, x in enumerate(lines) if x.startswith("note: 2 run(s) trained in stacks")]
    assert note and lines[note[0] + 1].startswith("  "), lines  # continued under its text
    assert max(len(x) for x in lines) <= 80, lines
