"""README's generated tables (methods, presets, paper tables) match the registries, and
`fedbench docs` finds and rewrites a stale one."""

from pathlib import Path

from click.testing import CliRunner

from fedbench.cli import cli

README = Path(__file__).resolve().parents[1] / "README.md"
SCHEMA_DOC = README.parent / "docs" / "results-schema.md"


def docs(*args):
    if "--schema-doc" not in args:
        args = (*args, "--schema-doc", str(SCHEMA_DOC))
    return CliRunner().invoke(cli, ["docs", *map(str, args)], obj={})


def test_readme_generated_tables_are_current():
    r = docs("--readme", str(README))
    assert r.exit_code == 0, f"{r.output.strip()} (from the repository root)"


def test_stale_section_found_and_rewritten(tmp_path):
    text = README.read_text()
    stale = text.replace("| fedavg ", "| fedavgx", 1)
    assert stale != text
    readme = tmp_path / "README.md"
    readme.write_text(stale)
    r = docs("--readme", str(readme))
    assert r.exit_code == 1
    assert r.output.strip().endswith("generated tables stale (methods); run fedbench docs --write")
    r = docs("--readme", str(readme), "--write")
    assert r.exit_code == 0 and "rewrote methods" in r.output
    assert readme.read_text() == text


def test_missing_or_unknown_section_is_one_line(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text(README.read_text().replace("<!-- generated: presets -->", "", 1))
    r = docs("--readme", str(readme))
    assert r.exit_code == 2 and r.output.count("\n") == 1
    assert "README needs one '<!-- generated: presets -->'" in r.output
    readme.write_text("<!-- generated: nosuch -->\nx\n<!-- end -->\n")
    r = docs("--readme", str(readme))
    assert r.exit_code == 2 and "unknown generated section 'nosuch'" in r.output
    r = docs("--readme", str(tmp_path / "none.md"))
    assert r.exit_code == 2 and "not found" in r.output


def test_help_lists_come_from_the_registries():
    from fedbench.methods import METHODS
    from fedbench.tables import TABLES

    out = CliRunner().invoke(cli, ["table", "--help"], obj={}, terminal_width=400).output
    assert all(name in out for name, spec in TABLES.items() if spec.is_table)
    out = CliRunner().invoke(cli, ["train", "--help"], obj={}, terminal_width=400).output
    assert ", ".join(METHODS) in out


def test_schema_doc_is_generated_from_the_code(tmp_path):
    """docs/results-schema.md's column tables come from fedbench.results.schema and .export:
    a column changed in the code makes the check fail until `fedbench docs --write`."""
    text = SCHEMA_DOC.read_text()
    assert "| `run_id` " in text and "| `test_acc` " in text and "fraction (0-1" in text
    stale = text.replace("| `order` ", "| `orderx`", 1)
    assert stale != text
    doc = tmp_path / "schema.md"
    doc.write_text(stale)
    r = docs("--readme", README, "--schema-doc", doc)
    assert r.exit_code == 1 and "generated tables stale (rounds-columns)" in r.output
    r = docs("--readme", README, "--schema-doc", doc, "--write")
    assert r.exit_code == 0 and doc.read_text() == text
