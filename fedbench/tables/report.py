"""tables/REPORT.md: every paper table found in results/, with its claims' verdicts, its scale
(the paper's rounds, devices and seeds, or the cut the runs used) and the commands that made it.

Which runs a table was made from is read from the "made by:" header of its files in the tables
folder (`fedbench table NAME [options] --format md`); every table is also tried at the paper's
own setting. A table enters the report when at least one of its cells has a finished run;
a table file whose runs are not in the results folder, or fewer of them than it was made from
(made elsewhere, or its runs since lost), enters from the file itself: its header (scale,
compute) and its old numbers, marked as such, with no verdict counted (report_files).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from fedbench.errors import FedbenchError
from fedbench.tables.decision import RULE
from fedbench.tables.evaluate import absent_data, evaluate_table
from fedbench.tables.render import header_lines, substitute_line, write_guarded
from fedbench.tables.report_files import (  # noqa: F401 (_made_by, _file_header: for tests)
    NOT_COUNTED,
    FileEntry,
    _file_header,
    _file_run_count,
    _made_by,
    file_section,
    from_files,
    parse_table_command,
    read_table_file,
)
from fedbench.tables.result import Selection, TableResult
from fedbench.tables.spec import TABLES, TableSpec, cell_config
from fedbench.tables.verdicts import OUTCOMES, claim_lines, outcome_counts

SCALE_FIELDS = (("rounds", "rounds"), ("num_clients", "N"), ("clients_per_round", "K"))


@dataclass
class Entry:
    result: TableResult
    table_command: str
    file: str | None
    ignored: list[str]
    fit_line: str | None = None  # --calibrated: what was fitted, to which cell

    @property
    def name(self) -> str:
        return self.result.spec.name


def _candidates(
    tables_dir: Path, results: str
) -> list[tuple[TableSpec, Selection, str, str | None, list]]:
    """(spec, selection, table command, file, ignored options): the tables folder's files first,
    then each table and dataset at the paper's setting."""
    out, seen = [], set()

    def add(spec, sel, cmd, file, ignored):
        key = (
            spec.name,
            sel.dataset,
            sel.seeds,
            sel.preset,
            tuple(sorted(sel.sets.items())),
            "--calibrated" in ignored,  # the fit's values are applied later: not in sel yet
        )
        if key not in seen:
            seen.add(key)
            out.append((spec, sel, cmd, file, ignored))

    for path in sorted(tables_dir.glob("*.md")) if tables_dir.is_dir() else []:
        cmd = _made_by(path)
        parsed = parse_table_command(cmd, results) if cmd else None
        if parsed:
            name, sel, ignored = parsed
            if sel.dataset is None or sel.dataset in TABLES[name].datasets:
                add(TABLES[name], sel, cmd, path.name, ignored)
    # a table's file covers its dataset (or all of them): no second entry at the paper's setting
    # (a --calibrated file does not: the table at the paper's own values is another table)
    covered = {
        (spec.name, sel.dataset) for spec, sel, _, _, ign in out if "--calibrated" not in ign
    }
    for spec in TABLES.values():
        if spec.is_table and spec.seeds:  # tables of runs (not data-stats)
            for ds in spec.datasets:
                if (spec.name, None) in covered or (spec.name, ds) in covered:
                    continue
                cmd = f"fedbench table {spec.name} --dataset {ds} --format md"
                add(spec, Selection(dataset=ds, results=results), cmd, None, [])
    return out


def table_scale(result: TableResult) -> tuple[bool, str]:
    """Whether the runs found used the paper's rounds, N, K and seeds, and what differs."""
    used: dict[str, set] = {label: set() for _, label in SCALE_FIELDS}
    paper: dict[str, set] = {label: set() for _, label in SCALE_FIELDS}
    seeds_used, seeds_paper = set(), set()
    for c in result.cells:
        if c.cell.kind != "runs":
            continue
        seeds_paper.update(c.cell.seeds or result.spec.seeds)
        for seed, rec in c.records:
            seeds_used.add(seed)
            want = cell_config(c.cell, seed)
            for fld, label in SCALE_FIELDS:
                used[label].add(rec.meta.get("config", {}).get(fld))
                paper[label].add(getattr(want, fld))
    parts, full = [], True
    for _, label in SCALE_FIELDS:
        if used[label] != paper[label]:
            full = False
            parts.append(f"{label} {_join(used[label])} (paper {_join(paper[label])})")
        else:
            parts.append(f"{label} {_join(used[label])}")
    if not seeds_paper <= seeds_used:
        full = False
        parts.append(f"seeds {_join(seeds_used)} (paper {_join(seeds_paper)})")
    else:
        parts.append(f"seeds {_join(seeds_used)}")
    if result.selection.preset:
        full = False
        parts.append(f"preset {result.selection.preset} instead of the paper's")
    cells = [c for c in result.cells if c.cell.kind == "runs" and c.status != "unavailable"]
    short = sum(c.status == "partial" for c in cells)
    empty = sum(c.status == "missing" for c in cells)
    if short or empty:  # the seeds above are the union: say which cells have fewer
        full = False
        parts.append(
            f"cells {len(cells) - short - empty} of {len(cells)} with every seed, "
            f"{short} with fewer, {empty} without runs"
        )
    return full, ("full: " if full else "cut: ") + "; ".join(parts)


def _join(values) -> str:
    vals = sorted(v for v in values if v is not None)
    return ",".join(str(v) for v in vals) or "?"


def collect(
    results: Path | str,
    tables_dir: Path | str,
    on_error: str = "fail",
    absent: list | None = None,
    shipped: bool = True,
) -> list[Entry]:
    """The tables with runs here (and in the shipped store unless shipped=False: a quick
    reproduction's report is of its own runs only); `absent` gets a line per table whose data
    is not here."""
    from fedbench.data.locate import downloads_off
    from fedbench.results import RunIndex

    index = RunIndex(results, on_error=on_error, must_exist=False, shipped=shipped)  # once
    with downloads_off():  # a report reads what is here, never downloads
        return _collect(results, tables_dir, on_error, index, [] if absent is None else absent)


def _collect(results, tables_dir, on_error, index, absent: list) -> list[Entry]:
    entries = []
    for spec, sel, cmd, file, ignored in _candidates(Path(tables_dir), str(results)):
        fit_line = None
        if "--calibrated" in ignored:
            from fedbench.tables.calibration import calibrated_selection

            ignored = [w for w in ignored if w != "--calibrated"]
            try:
                sel, fit_line = calibrated_selection(spec, sel)
            except FedbenchError:  # no fit in this results folder: the file's runs are not here
                continue
        result = evaluate_table(spec, results, sel, on_error=on_error, index=index)
        if not any(c.n > 0 for c in result.cells if c.cell.kind == "runs"):
            absent += absent_data(result)
            continue
        if file and result.run_count() < _file_run_count(Path(tables_dir) / file):
            continue  # fewer of its runs here than the file was made from: report the file
        entries.append(Entry(result, cmd, file, ignored, fit_line))
    return entries


def not_here(
    entries: list[Entry], tables_dir: Path | str, file_entries: list[FileEntry] = ()
) -> list[str]:
    """Lines for every table and dataset with no finished run in the results folder and no file
    of it at the paper's setting reported instead: the command that fills it."""
    have = {(e.name, ds) for e in entries for ds in _datasets(e)}
    for f in file_entries:
        if "calibrated" not in f.header:  # a calibrated file is not the paper's setting
            have |= {(f.name, ds) for ds in ([f.dataset] if f.dataset else TABLES[f.name].datasets)}
    out = []
    for spec in TABLES.values():
        if not (spec.is_table and spec.seeds):
            continue
        for ds in spec.datasets:
            if (spec.name, ds) not in have:
                cmd = f"fedbench sweep --table {spec.name} --dataset {ds}"
                out.append(f"- {spec.name} ({ds}), {spec.source}: `{cmd}`")
    return out


def _datasets(e: Entry) -> list[str]:
    return (
        [e.result.selection.dataset] if e.result.selection.dataset else list(e.result.spec.datasets)
    )


def render_report(
    entries: list[Entry],
    command: str,
    date: str | None = None,
    missing: list[str] = (),
    file_entries: list[FileEntry] = (),
) -> str:
    runs = report_run_count(entries, file_entries)
    head = [*header_lines(command, date=date), f"compute: {runs} runs summed over its tables"]
    lines = [f"<!-- {h} -->" for h in head]
    lines += [
        "# Paper tables: verdicts and scale",
        "",
        "Every paper table with finished runs in the results folder. 'full' means the runs used "
        "the paper's rounds, devices (N, K) and seeds; 'cut' says what differs. A table marked "
        "'(file)' has fewer of its runs here than it was made from (or none): it shows the "
        f"{NOT_COUNTED} ('–'); its scale is what its file says "
        "('?': the file predates fedbench writing its scale).",
        "",
        f"Each claim is decided over seeds by one rule ({RULE}). The three outcome columns "
        "count a table's claims, decided here from its runs; n/a: cells without a number.",
        "",
        "| table | dataset | paper | reproduced | not reproduced | inconclusive | n/a | scale |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for e in entries:
        full, scale = table_scale(e.result)
        ds = e.result.selection.dataset or ", ".join(e.result.spec.datasets)
        k = outcome_counts(e.result)
        counts = " | ".join(str(k[o]) for o in (*OUTCOMES, "n/a"))
        lines.append(
            f"| {_entry_name(e)} | {ds} | {e.result.spec.source} | {counts} | "
            f"{'full' if full else 'cut'} |"
        )
    for f in file_entries:
        spec = TABLES[f.name]
        counts = " | ".join("–" for _ in (*OUTCOMES, "n/a"))  # no verdict from a file
        scale = {True: "full", False: "cut", None: "?"}[f.full]
        name = f.name + "".join(f" ({k})" for k in ("calibrated", "substitute") if k in f.header)
        name += " (file)"
        ds = f.dataset or ", ".join(spec.datasets)
        lines.append(f"| {name} | {ds} | {spec.source} | {counts} | {scale} |")
    for e in entries:
        lines += _section(e)
    for f in file_entries:
        lines += file_section(f)
    if missing:
        lines += [
            "",
            "## Tables with no runs here",
            "",
            "No finished run in the results folder (data not on this machine, or not run yet); "
            "each line is the command that fills it.",
            "",
            *missing,
        ]
    return "\n".join(lines) + "\n"


def report_run_count(entries: list[Entry], file_entries: list[FileEntry] = ()) -> int:
    """The runs a report stands on: each table's runs (read here, or as its file says)."""
    from_files = 0
    for f in file_entries:
        words = f.header.get("compute", "").split()
        from_files += int(words[0]) if words and words[0].isdigit() else 0
    return sum(e.result.run_count() for e in entries) + from_files


def _entry_name(e: Entry) -> str:
    """The table's name, marked where its runs are calibrated or its data a substitute."""
    sub = e.result.spec.substitute(e.result.selection.dataset)
    return e.name + (" (calibrated)" if e.fit_line else "") + (" (substitute)" if sub else "")


def _section(e: Entry) -> list[str]:
    r, sel = e.result, e.result.selection
    ds = sel.dataset or ", ".join(r.spec.datasets)
    sweep = f"fedbench sweep --table {e.name}" + (
        f" --dataset {sel.dataset}" if sel.dataset else ""
    )
    opts = Selection(seeds=sel.seeds, preset=sel.preset, sets=sel.sets).options()
    if e.fit_line:  # the fit's values are in sel.sets; the sweep takes them from the fit
        opts = " ".join(filter(None, [Selection(seeds=sel.seeds).options(), "--calibrated"]))
    sub = substitute_line(r)
    out = [
        "",
        f"## {_entry_name(e)} ({ds}): {r.spec.source}, {r.spec.title}",
        "",
        *([f"- {e.fit_line}"] if e.fit_line else []),
        *([f"- {sub}"] if sub else []),
        f"- scale: {table_scale(r)[1]}",
        f"- runs made by: `{sweep}{' ' + opts if opts else ''}`",
        f"- table made by: `{e.table_command}`" + (f" (file `{e.file}`)" if e.file else ""),
        f"- {r.compute_line()}",
    ]
    if e.ignored:
        out.append(f"- options of that command this report did not apply: {' '.join(e.ignored)}")
    claims = claim_lines(r, rule=False)
    if claims:
        out += ["", f"**{claims[0]}**", ""] + [f"- {c.strip()}" for c in claims[1:]]
    return out


def write_report(
    results: Path | str,
    tables_dir: Path | str,
    on_error: str = "fail",
    date: str | None = None,
    shipped: bool = True,
) -> tuple[Path, list[Entry], list[FileEntry], list[str]]:
    absent: list[str] = []
    entries = collect(results, tables_dir, on_error, absent, shipped)
    file_entries = from_files(entries, tables_dir, str(results))
    if not entries and not file_entries:
        raise FedbenchError(
            f"no paper table has finished runs in {results}; run fedbench sweep --table NAME first"
        )
    cmd = "fedbench table report" + (f" --results {results}" if str(results) != "results" else "")
    cmd += f" --out {tables_dir}" if str(tables_dir) != "tables" else ""
    path = Path(tables_dir) / "REPORT.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    missing = not_here(entries, tables_dir, file_entries)
    text = render_report(entries, cmd, date, missing, file_entries)
    write_guarded(path, text, report_run_count(entries, file_entries))
    return path, entries, file_entries, absent
