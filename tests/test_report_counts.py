"""tables/README.md's counts are REPORT.md's (issue 34, item 8): `fedbench docs --write` copies
REPORT's outcome table into the 'report-counts' section, with totals over the tables decided
from runs; a table read from a file of an earlier machine counts nothing ('–')."""

from __future__ import annotations

from pathlib import Path

from fedbench.cli.docs import _report_counts, place_of

REPO = Path(__file__).resolve().parents[1]


def test_report_counts_are_reports_table_and_its_totals(tmp_path):
    (tmp_path / "tables").mkdir()
    (tmp_path / "tables" / "README.md").write_text("x\n")
    (tmp_path / "tables" / "REPORT.md").write_text(
        "# Paper tables\n\ntext\n\n"
        "| table | dataset | paper | reproduced | not reproduced | inconclusive | n/a | scale |\n"
        "|---|---|---|---|---|---|---|---|\n"
        "| a | d | p | 1 | 2 | 3 | 0 | full |\n"
        "| b | d | p | 0 | 1 | 1 | 2 | cut |\n"
        "| c (file) | d | p | – | – | – | – | cut |\n"
        "\n## a (d): p\n\n- reproduced: ...\n"
    )
    text = _report_counts(place_of(tmp_path / "tables" / "README.md", tmp_path))
    assert text.startswith(
        "From the runs here: 1 reproduced, 3 not reproduced, 4 inconclusive, 2 n/a"
    )
    assert text.splitlines()[-1] == "| c (file) | d | p | – | – | – | – | cut |"
    assert "## a" not in text


def test_the_committed_readme_holds_the_reports_counts():
    readme = (REPO / "tables" / "README.md").read_text()
    made = _report_counts(place_of(REPO / "tables" / "README.md", REPO))
    assert f"<!-- generated: report-counts -->\n{made}\n<!-- end -->" in readme
    assert "14 of 16 claims" not in readme  # the counts from before the rule are gone
