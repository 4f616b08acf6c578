"""The docs' generated sections (verdicts in README.md; methods, config, presets and paper
tables in docs/*.md) match the code and the committed table files, `fedbench docs` finds and
rewrites a stale one wherever it lives, and the README stays a front page."""

import shutil
from pathlib import Path

from click.testing import CliRunner

from fedbench.cli import cli
from fedbench.cli.docs import short_scale

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"


def docs(*args):
    return CliRunner().invoke(cli, ["docs", *map(str, args)], obj={})


def copy_docs(tmp_path) -> Path:
    """README.md, docs/*.md and the table files in a scratch repository."""
    shutil.copy(README, tmp_path / "README.md")
    shutil.copytree(ROOT / "docs", tmp_path / "docs")
    (tmp_path / "tables").mkdir()
    for path in (ROOT / "tables").glob("*.md"):
        shutil.copy(path, tmp_path / "tables" / path.name)
    return tmp_path


def test_generated_sections_are_current():
    r = docs("--root", ROOT)
    assert r.exit_code == 0, f"{r.output.strip()} (from the repository root)"


def test_readme_is_a_front_page():
    assert len(README.read_bytes()) <= 10_000, "README.md over 10 kB: move the detail to docs/"


def test_stale_section_found_and_rewritten(tmp_path):
    root = copy_docs(tmp_path)
    methods = root / "docs" / "methods.md"
    text = methods.read_text()
    methods.write_text(text.replace("| fedavg ", "| fedavgx", 1))
    r = docs("--root", root)
    assert r.exit_code == 1
    assert r.output.strip().endswith(
        "generated sections stale (docs/methods.md: methods); run fedbench docs --write"
    )
    r = docs("--root", root, "--write")
    assert r.exit_code == 0 and "rewrote docs/methods.md: methods" in r.output
    assert methods.read_text() == text
    assert docs("--root", root).exit_code == 0


def test_verdicts_follow_the_table_files(tmp_path):
    """The README's row of a table is its file's claims line and scale line as they stand, in
    whatever words the claims summary uses."""
    root = copy_docs(tmp_path)
    table = root / "tables" / "tau_fmnist.md"
    lines = table.read_text().splitlines()
    claims = next(i for i, x in enumerate(lines) if x.startswith("**claims: "))
    lines[claims] = "**claims: 1 reproduced, 3 not reproduced, 1 inconclusive**"
    scale = next(i for i, x in enumerate(lines) if x.startswith("<!-- scale: "))
    lines[scale] = "<!-- scale: cut: rounds 100 (paper 200); N 50; K 10; seeds 0 (paper 0,1,2) -->"
    table.write_text("\n".join(lines) + "\n")
    r = docs("--root", root, "--write")
    assert r.exit_code == 0 and "rewrote README.md: verdicts" in r.output
    readme = (root / "README.md").read_text().splitlines()
    row = next(x for x in readme if "(tables/tau_fmnist.md)" in x)
    assert row == (
        "| [tau](tables/tau_fmnist.md) | fmnist | FedLGA (TCYB 2023) Table VI "
        "| 1 reproduced, 3 not reproduced, 1 inconclusive "
        "| cut: rounds 100 (paper 200); seeds 0 (paper 0,1,2) |"
    )
    (root / "tables" / "tau_fmnist.md").unlink()
    assert docs("--root", root, "--write").exit_code == 0
    assert "(tables/tau_fmnist.md)" not in (root / "README.md").read_text()


def test_short_scale():
    assert short_scale("full: rounds 200; N 50; K 10; seeds 0,1,2") == "full"
    assert short_scale("cut: rounds 25 (paper 50); N 50; K 10 (paper 50); seeds 0 (paper 0,1)") == (
        "cut: rounds 25 (paper 50); K 10 (paper 50); seeds 0 (paper 0,1)"
    )
    assert short_scale("cut: rounds 200; preset default instead of the paper's") == (
        "cut: preset default instead of the paper's"
    )
    assert short_scale(None) == "?"


def test_each_section_lives_once(tmp_path):
    root = copy_docs(tmp_path)
    usage = root / "docs" / "usage.md"
    text = usage.read_text()
    extra = root / "docs" / "extra.md"
    extra.write_text("<!-- generated: presets -->\nx\n<!-- end -->\n")
    r = docs("--root", root)
    assert r.exit_code == 2 and r.output.count("\n") == 1
    assert "'<!-- generated: presets -->'" in r.output
    assert "found in docs/extra.md, docs/usage.md" in r.output
    extra.unlink()
    usage.write_text(text.replace("<!-- generated: presets -->", "", 1))
    r = docs("--root", root)
    assert r.exit_code == 2 and "found in none of README.md, docs/*.md" in r.output
    usage.write_text(text)
    extra.write_text("<!-- generated: nosuch -->\nx\n<!-- end -->\n")
    r = docs("--root", root)
    assert r.exit_code == 2 and "docs/extra.md: unknown generated section 'nosuch'" in r.output
    r = docs("--root", tmp_path / "none")
    assert r.exit_code == 2 and "no README.md there" in r.output


def test_config_table_has_every_field():
    import dataclasses

    from fedbench.config import RunConfig

    text = (ROOT / "docs" / "usage.md").read_text()
    assert all(f"| {f.name} " in text for f in dataclasses.fields(RunConfig))


def test_help_lists_come_from_the_registries():
    from fedbench.methods import METHODS
    from fedbench.tables import TABLES

    out = CliRunner().invoke(cli, ["table", "--help"], obj={}, terminal_width=400).output
    assert all(name in out for name, spec in TABLES.items() if spec.is_table)
    out = CliRunner().invoke(cli, ["train", "--help"], obj={}, terminal_width=400).output
    assert ", ".join(METHODS) in out
