"""Claim lines are wrapped at the terminal's width, 80 off a terminal (issue 31, item 13); the
Markdown file keeps each claim whole on one line."""

from pathlib import Path

from conftest import invoke

STORE = Path(__file__).resolve().parents[1] / "results" / "shipped"


def test_claim_lines_fit_80_columns_off_a_terminal_and_stay_whole_in_markdown(
    tmp_path, monkeypatch
):
    monkeypatch.setenv("FEDBENCH_STORE", str(STORE))  # the shipped runs: claims with numbers
    r = invoke("table", "stragglers", "--dataset", "mnist")
    assert r.exit_code == 0, r.output
    claims = r.output[r.output.index("claims: ") :].splitlines()
    assert len(claims) > 8 and max(len(x) for x in claims) <= 80, claims
    assert any(x.startswith("  reproduced: ") for x in claims)
    assert any(x.startswith("    ") for x in claims)  # a continuation, under the text
    r = invoke("table", "stragglers", "--dataset", "mnist", "--format", "md", "--out", tmp_path)
    assert r.exit_code == 0, r.output
    md = (tmp_path / "stragglers_mnist.md").read_text().splitlines()
    whole = [x for x in md if "- reproduced: keeping stragglers' partial work" in x]
    assert len(whole) == 1 and whole[0].rstrip().endswith("paper: Fig. 1)") and len(whole[0]) > 200
