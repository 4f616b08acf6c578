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


def _methods() -> str:
    from fedbench.cli.info import markdown, method_rows

    return markdown(method_rows())


def _presets() -> str:
    from fedbench.cli.info import markdown, preset_rows

    return markdown(preset_rows())


def _tables() -> str:
    from fedbench.cli.info import markdown
    from fedbench.cli.table import spec_rows

    tables = spec_rows(figures=False)
    figures = [
        {**row, "name": f"{row['name']} (figure only)"}
        for row in spec_rows(figures=True)
        if row["name"] not in {t["name"] for t in tables}
    ]
    return markdown(tables + figures)


GENERATORS = {"methods": _methods, "presets": _presets, "tables": _tables}


def _schema(columns) -> str:
    from fedbench.cli.info import markdown

    def cell(text: str) -> str:  # a | inside a cell would end it
        return text.replace("|", "\\|")

    rows = [
        {"column": f"`{c.name}`", "type": c.type, "unit": c.unit or "–",
         "when present": cell(c.when), "null / NaN means": cell(c.null)}
        for c in columns
    ]  # fmt: skip
    return markdown(rows)


def _rounds_columns() -> str:
    from fedbench.results.schema import rounds_columns

    return _schema(rounds_columns())


def _runs_columns() -> str:
    from fedbench.results.export import runs_columns

    return _schema(runs_columns())


def _run_json() -> str:
    from fedbench.cli.info import markdown
    from fedbench.results.schema import RUN_KEYS, SCHEMA_VERSION

    rows = [{"key": f"`{k}`", "type": t, "what": w} for k, t, w in RUN_KEYS]
    return f"schema_version {SCHEMA_VERSION}; every key is present, null where it does not " \
        f"apply.\n\n{markdown(rows)}"  # fmt: skip


# docs/results-schema.md: the records' columns, from fedbench.results.schema and .export
SCHEMA_GENERATORS = {
    "rounds-columns": _rounds_columns,
    "runs-columns": _runs_columns,
    "run-json": _run_json,
}
SCHEMA_DOC = "docs/results-schema.md"


def render(text: str, generators: dict = GENERATORS, what: str = "README") -> str:
    """text with every generated section rewritten from the registries."""
    found = [m.group(2) for m in SECTION.finditer(text)]
    unknown = sorted(set(found) - set(generators))
    if unknown:
        raise FedbenchError(
            f"unknown generated section {unknown[0]!r}; fedbench generates: {', '.join(generators)}"
        )
    missing = [name for name in generators if found.count(name) != 1]
    if missing:
        raise FedbenchError(
            f"{what} needs one '<!-- generated: {missing[0]} -->' ... '<!-- end -->' section"
        )
    made = {name: make() for name, make in generators.items()}
    return SECTION.sub(lambda m: f"{m.group(1)}{made[m.group(2)]}\n{m.group(4)}", text)


def stale_sections(text: str, generators: dict = GENERATORS, what: str = "README") -> list[str]:
    """The generated sections whose text differs from what the registries give now."""
    new = {m.group(2): m.group(3) for m in SECTION.finditer(render(text, generators, what))}
    return [m.group(2) for m in SECTION.finditer(text) if new[m.group(2)] != m.group(3)]


@click.command()
@click.option(
    "--readme",
    default="README.md",
    show_default=True,
    type=click.Path(dir_okay=False),
    help="The README holding the generated sections.",
)
@click.option(
    "--schema-doc",
    default=SCHEMA_DOC,
    show_default=True,
    type=click.Path(dir_okay=False),
    help="The records' schema document (its column tables are generated too).",
)
@click.option("--write", is_flag=True, help="Rewrite the stale sections (default: only check).")
def docs(readme, schema_doc, write):
    """Check (or, with --write, rewrite) README's tables generated from the registries: the
    methods, the presets and the paper tables, each between `<!-- generated: NAME -->` and
    `<!-- end -->`; and the column tables of docs/results-schema.md. Exits 1 naming the stale
    sections.

    \b
    Examples:
      fedbench docs              # after adding a method, preset or table
      fedbench docs --write
    """
    files = [(readme, "--readme", GENERATORS, "README"),
             (schema_doc, "--schema-doc", SCHEMA_GENERATORS, "the schema document")]  # fmt: skip
    stale_files = []
    for name, option, generators, what in files:
        path = Path(name)
        if not path.is_file():
            raise FedbenchError(f"{option} {name} not found; run from the repository or give it")
        text = path.read_text()
        stale = stale_sections(text, generators, what)
        if write:
            if stale:
                path.write_text(render(text, generators, what))
            click.echo(f"rewrote {', '.join(stale)} in {path}" if stale else f"{path} is current")
        elif stale:
            stale_files.append(f"{path}: generated tables stale ({', '.join(stale)})")
        else:
            click.echo(f"{path}: generated tables current")
    if stale_files:
        raise OneLineError(f"{'; '.join(stale_files)}; run {WRITE}", 1)


COMMANDS = [docs]
