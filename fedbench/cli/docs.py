"""`fedbench docs`: README's generated tables (methods, presets, paper tables) from the
registries, between `<!-- generated: NAME -->` and `<!-- end -->`. tests/test_docs.py fails
while README.md differs from what `fedbench docs --write` would write."""

from __future__ import annotations

import re
from pathlib import Path

import click

from fedbench.cli.common import OneLineError
from fedbench.errors import FedbenchError

SECTION = re.compile(r"(<!-- generated: ([\w-]+) -->\n)(.*?)(<!-- end -->)", re.S)
WRITE = "fedbench docs --write"


def _builtin(obj) -> bool:
    """Not a plugin's (README documents fedbench's own names, whatever plugins are loaded)."""
    from fedbench.plugins import owner

    return owner(getattr(obj, "__module__", "") or "") is None


def _methods() -> str:
    from fedbench.cli.info import markdown, method_rows
    from fedbench.methods import METHODS

    return markdown([r for r in method_rows() if _builtin(METHODS[r["method"]])])


def _presets() -> str:
    from fedbench.cli.info import markdown, preset_rows

    return markdown(preset_rows())


def _tables() -> str:
    from fedbench.cli.info import markdown
    from fedbench.cli.table import spec_rows
    from fedbench.tables import TABLES

    tables = [r for r in spec_rows(figures=False) if _builtin(TABLES[r["name"]].build)]
    figures = [
        {**row, "name": f"{row['name']} (figure only)"}
        for row in spec_rows(figures=True)
        if row["name"] not in {t["name"] for t in tables} and _builtin(TABLES[row["name"]].build)
    ]
    return markdown(tables + figures)


GENERATORS = {"methods": _methods, "presets": _presets, "tables": _tables}


def render(text: str) -> str:
    """text with every generated section rewritten from the registries."""
    found = [m.group(2) for m in SECTION.finditer(text)]
    unknown = sorted(set(found) - set(GENERATORS))
    if unknown:
        raise FedbenchError(
            f"unknown generated section {unknown[0]!r}; fedbench generates: {', '.join(GENERATORS)}"
        )
    missing = [name for name in GENERATORS if found.count(name) != 1]
    if missing:
        raise FedbenchError(
            f"README needs one '<!-- generated: {missing[0]} -->' ... '<!-- end -->' section"
        )
    made = {name: make() for name, make in GENERATORS.items()}
    return SECTION.sub(lambda m: f"{m.group(1)}{made[m.group(2)]}\n{m.group(4)}", text)


def stale_sections(text: str) -> list[str]:
    """The generated sections whose text differs from what the registries give now."""
    new = {m.group(2): m.group(3) for m in SECTION.finditer(render(text))}
    return [m.group(2) for m in SECTION.finditer(text) if new[m.group(2)] != m.group(3)]


@click.command()
@click.option(
    "--readme",
    default="README.md",
    show_default=True,
    type=click.Path(dir_okay=False),
    help="The README holding the generated sections.",
)
@click.option("--write", is_flag=True, help="Rewrite the stale sections (default: only check).")
def docs(readme, write):
    """Check (or, with --write, rewrite) README's tables generated from the registries: the
    methods, the presets and the paper tables, each between `<!-- generated: NAME -->` and
    `<!-- end -->`. Exits 1 naming the stale sections.

    \b
    Examples:
      fedbench docs              # after adding a method, preset or table
      fedbench docs --write
    """
    path = Path(readme)
    if not path.is_file():
        raise FedbenchError(f"--readme {readme} not found; run from the repository or give it")
    text = path.read_text()
    stale = stale_sections(text)
    if write:
        if stale:
            path.write_text(render(text))
        click.echo(f"rewrote {', '.join(stale)} in {path}" if stale else f"{path} is current")
    elif stale:
        raise OneLineError(f"{path}: generated tables stale ({', '.join(stale)}); run {WRITE}", 1)
    else:
        click.echo(f"{path}: generated tables current")


COMMANDS = [docs]
