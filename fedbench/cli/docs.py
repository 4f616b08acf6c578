"""`fedbench docs`: the documentation's generated sections, each between
`<!-- generated: NAME -->` and `<!-- end -->` in README.md or one of docs/*.md: the methods,
presets and paper tables from the registries, the config fields from fedbench/config.py, and the
verdicts of the committed table files (tables/*.md, read as `fedbench table report` reads them).
The records' columns (docs/results-schema.md) come from fedbench/results/schema.py and
export.py. Each section lives in exactly one of those files. tests/test_docs.py fails
while any differs from what `fedbench docs --write` would write."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

import click

from fedbench import config
from fedbench.atomic import atomic_write_bytes
from fedbench.cli.common import OneLineError
from fedbench.errors import FedbenchError

SECTION = re.compile(r"(<!-- generated: ([\w-]+) -->\n)(.*?)(<!-- end -->)", re.S)
WRITE = "fedbench docs --write"


@dataclass(frozen=True)
class Place:
    """Where a section is written: the repository root, and the path from the file holding the
    section back to it (for links)."""

    root: Path
    to_root: str  # "" for README.md, "../" for docs/NAME.md


def _plugin_names() -> set[str]:
    """The names loaded plugins registered: the documentation lists fedbench's own names,
    whatever plugins a command loaded (--plugin, FEDBENCH_PLUGINS, entry points)."""
    from fedbench.plugins import LOADED  # `fedbench --help` loads no plugins module

    if not LOADED:
        return set()
    from fedbench.contracts import plugin_names

    return {n for names in plugin_names().values() for n in names}


def _methods(place: Place) -> str:
    from fedbench.cli.info import method_rows

    theirs = _plugin_names()
    return _markdown([r for r in method_rows() if r["method"] not in theirs])


def _presets(place: Place) -> str:
    from fedbench.cli.info import preset_rows

    return _markdown(preset_rows())


def _config(place: Place) -> str:
    """The config fields in fedbench/config.py's order: default, paper alias, allowed values and
    the comment beside the field in its source."""
    import dataclasses

    comments = _field_comments(config)
    alias = {field: short for short, field in config.ALIASES.items()}
    theirs = _plugin_names()
    rows = []
    for f in dataclasses.fields(config.RunConfig):
        default = f.default_factory() if f.default is dataclasses.MISSING else f.default
        allowed = config.CHOICES.get(f.name) or config.BOUNDS.get(f.name) or ""
        if isinstance(allowed, tuple):
            allowed = tuple(a for a in allowed if a not in theirs)
        rows.append(
            {
                "field": f.name + (f" ({alias[f.name]})" if f.name in alias else ""),
                "default": "none" if default is None else str(default),
                "values": ", ".join(allowed) if isinstance(allowed, tuple) else str(allowed),
                "what": comments.get(f.name, ""),
            }
        )
    return _markdown(rows)


def _field_comments(module) -> dict[str, str]:
    """RunConfig's field -> the comment on the field's line in the module's source."""
    import ast
    import inspect

    source = inspect.getsource(module)
    lines = source.splitlines()
    cls = next(
        n for n in ast.parse(source).body if isinstance(n, ast.ClassDef) and n.name == "RunConfig"
    )
    return {
        node.target.id: lines[node.lineno - 1].partition("  # ")[2].strip()
        for node in cls.body
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
    }


def _markdown(rows: list[dict], pad: bool = True) -> str:
    """A GitHub table of rows, with '|' inside a cell escaped so it stays one cell; pad=False
    leaves the columns unaligned (fewer bytes: the README has a size limit)."""
    from fedbench.cli.info import markdown

    cells = [{k: str(v).replace("|", "\\|") for k, v in row.items()} for row in rows]
    if pad:
        return markdown(cells)
    lines = [list(cells[0]), ["---"] * len(cells[0])] + [list(c.values()) for c in cells]
    return "\n".join(f"| {' | '.join(line)} |" for line in lines)


def _tables(place: Place) -> str:
    from fedbench.cli.table import spec_rows

    theirs = _plugin_names()
    tables = [r for r in spec_rows(figures=False) if r["name"] not in theirs]
    figures = [
        {**row, "name": f"{row['name']} (figure only)"}
        for row in spec_rows(figures=True)
        if row["name"] not in {t["name"] for t in tables} | theirs
    ]
    return _markdown(tables + figures)


def _verdicts(place: Place) -> str:
    """One row per committed paper-table file (tables/*.md), read as `fedbench table report`
    reads a table file: its claims line as it stands (none counted where REPORT.md reads the
    file for want of its runs), and its scale line ('full', or 'cut' and
    what differs from the paper)."""
    from fedbench.tables.report import read_table_file
    from fedbench.tables.report_files import reported_from_file
    from fedbench.tables.spec import TABLES

    rows = []
    folder = place.root / "tables"
    report = folder / "REPORT.md"
    report_text = report.read_text(errors="replace") if report.is_file() else ""
    for path in sorted(folder.glob("*.md")) if folder.is_dir() else []:
        entry = read_table_file(path, "results")
        if entry is None or not (TABLES[entry.name].is_table and TABLES[entry.name].seeds):
            continue  # not a paper table of runs (data-stats, the folder's README, REPORT)
        spec = TABLES[entry.name]
        calibrated = "".join(f" ({k})" for k in ("calibrated", "substitute") if k in entry.header)
        claims = entry.claims[0].removeprefix("claims: ") if entry.claims else "none in the file"
        if reported_from_file(report_text, path.name):  # as REPORT: runs not shipped
            claims = "none (old file)"
        rows.append(
            {
                "table": f"[{entry.name}{calibrated}]({place.to_root}tables/{path.name})",
                "dataset": entry.dataset or ", ".join(spec.datasets),
                "paper": spec.source,
                "claims": claims,
                "scale": short_scale(entry.header.get("scale")),
            }
        )
    return _markdown(rows, pad=False) if rows else "(no paper-table files in tables/)"


def _report_counts(place: Place) -> str:
    """tables/REPORT.md's outcome table, the one source of the verdict counts (`fedbench table
    report` decides them from the runs), and its totals."""
    report = place.root / "tables" / "REPORT.md"
    lines = report.read_text(errors="replace").splitlines() if report.is_file() else []
    start = next((i for i, x in enumerate(lines) if x.startswith("| table |")), None)
    if start is None:
        return "(no tables/REPORT.md: run `fedbench table report`)"
    rows = [x for x in lines[start:] if x.startswith("|")]
    rows = rows[: next((i for i, x in enumerate(rows[2:], 2) if not x), len(rows))]
    totals = [0, 0, 0, 0]
    for row in rows[2:]:
        cells = [c.strip() for c in row.strip("|").split("|")]
        for i, c in enumerate(cells[3:7]):
            totals[i] += int(c) if c.isdigit() else 0
    head = (
        f"From the runs here: {totals[0]} reproduced, {totals[1]} not reproduced, "
        f"{totals[2]} inconclusive, {totals[3]} n/a; '–': a table read from a file of an "
        "earlier machine, no verdict counted (copied from REPORT.md by `fedbench docs --write`)."
    )
    return "\n".join([head, "", *rows])


def short_scale(line: str | None) -> str:
    """A table file's scale line cut to its verdict and what differs from the paper:
    'cut: rounds 25 (paper 50); N 50; seeds 0 (paper 0,1,2)' -> 'cut: rounds 25 (paper 50);
    seeds 0 (paper 0,1,2)'; 'full: ...' -> 'full'; no line -> '?'."""
    if not line:
        return "?"
    word, _, rest = line.partition(":")
    differs = [p.strip() for p in rest.split(";") if "paper" in p or "instead" in p or "cells" in p]
    return f"{word}: {'; '.join(differs)}" if differs and word != "full" else word


def _schema(columns) -> str:
    rows = [
        {"column": f"`{c.name}`", "type": c.type, "unit": c.unit or "–", "when present": c.when,
         "null / NaN means": c.null}
        for c in columns
    ]  # fmt: skip
    return _markdown(rows)


def _rounds_columns(place: Place) -> str:
    """rounds.parquet's columns (fedbench.results.schema), every method's fields included."""
    from fedbench.results.schema import rounds_columns

    return _schema(rounds_columns())


def _runs_columns(place: Place) -> str:
    """The exported runs table's columns (fedbench.results.export)."""
    from fedbench.results.export import runs_columns

    return _schema(runs_columns())


def _run_json(place: Place) -> str:
    from fedbench.results.schema import RUN_KEYS, SCHEMA_VERSION

    rows = [{"key": f"`{k}`", "type": t, "what": w} for k, t, w in RUN_KEYS]
    return (
        f"schema_version {SCHEMA_VERSION}; every key is present, null where it does not "
        f"apply.\n\n{_markdown(rows)}"
    )


GENERATORS = {
    "verdicts": _verdicts,
    "methods": _methods,
    "presets": _presets,
    "config": _config,
    "tables": _tables,
    "rounds-columns": _rounds_columns,  # docs/results-schema.md
    "runs-columns": _runs_columns,
    "run-json": _run_json,
    "report-counts": _report_counts,  # tables/README.md
}


def doc_files(root: Path) -> list[Path]:
    """The files that may hold generated sections: README.md, docs/*.md, tables/README.md."""
    files = [root / "README.md"] if (root / "README.md").is_file() else []
    tables = [root / "tables" / "README.md"] if (root / "tables" / "README.md").is_file() else []
    return files + sorted((root / "docs").glob("*.md")) + tables


def where_sections(root: Path) -> dict[str, Path]:
    """Each generated section's file; a one-line error when one is unknown, missing or in two
    places."""
    seen: dict[str, list[Path]] = {}
    for path in doc_files(root):
        for m in SECTION.finditer(path.read_text()):
            if m.group(2) not in GENERATORS:
                raise FedbenchError(
                    f"{_rel(path, root)}: unknown generated section {m.group(2)!r}; "
                    f"fedbench generates: {', '.join(GENERATORS)}"
                )
            seen.setdefault(m.group(2), []).append(path)
    for name in GENERATORS:
        places = seen.get(name, [])
        if len(places) != 1:
            where = ", ".join(_rel(p, root) for p in places) or "none of README.md, docs/*.md"
            raise FedbenchError(
                f"one '<!-- generated: {name} -->' ... '<!-- end -->' section needed in "
                f"README.md or docs/*.md; found in {where}"
            )
    return {name: places[0] for name, places in seen.items()}


def render(text: str, place: Place) -> str:
    """text with every generated section rewritten."""
    made: dict[str, str] = {}

    def section(m: re.Match) -> str:
        if m.group(2) not in made:
            made[m.group(2)] = GENERATORS[m.group(2)](place)
        return f"{m.group(1)}{made[m.group(2)]}\n{m.group(4)}"

    return SECTION.sub(section, text)


def place_of(path: Path, root: Path) -> Place:
    up = os.path.relpath(root, path.parent)
    return Place(root, "" if up == "." else up.replace(os.sep, "/") + "/")


def stale_sections(root: Path) -> dict[Path, list[str]]:
    """Per file, the generated sections whose text differs from what fedbench gives now."""
    out: dict[Path, list[str]] = {}
    for path in sorted(set(where_sections(root).values())):
        text = path.read_text()
        new = {m.group(2): m.group(3) for m in SECTION.finditer(render(text, place_of(path, root)))}
        stale = [m.group(2) for m in SECTION.finditer(text) if new[m.group(2)] != m.group(3)]
        if stale:
            out[path] = stale
    return out


def _rel(path: Path, root: Path) -> str:
    return os.path.relpath(path, root)


def _listing(stale: dict[Path, list[str]], root: Path) -> str:
    return "; ".join(f"{_rel(p, root)}: {', '.join(names)}" for p, names in stale.items())


@click.command()
@click.option(
    "--root",
    default=".",
    show_default=True,
    type=click.Path(file_okay=False),
    help="The repository: README.md, docs/ and tables/ are read from here.",
)
@click.option("--write", is_flag=True, help="Rewrite the stale sections (default: only check).")
def docs(root, write):
    """Check (or, with --write, rewrite) the documentation's generated sections: the methods,
    presets, config fields and paper-tables lists from the code, and the verdicts of the
    committed table files (tables/*.md), each between `<!-- generated: NAME -->` and
    `<!-- end -->` in README.md or a docs/*.md file. Exits 1 naming the stale sections.

    \b
    Examples:
      fedbench docs              # after adding a method, preset or table, or new table files
      fedbench docs --write
    """
    base = Path(root)
    if not (base / "README.md").is_file():
        raise FedbenchError(f"--root {root}: no README.md there; run from the repository")
    stale = stale_sections(base)
    if write:
        for path in stale:
            atomic_write_bytes(path, render(path.read_text(), place_of(path, base)).encode())
        click.echo(f"rewrote {_listing(stale, base)}" if stale else "generated sections current")
    elif stale:
        raise OneLineError(f"generated sections stale ({_listing(stale, base)}); run {WRITE}", 1)
    else:
        click.echo("generated sections current")


COMMANDS = [docs]
