"""Paper-table files in the tables folder whose runs are not in the results folder or the
shipped store (made on an earlier machine, their runs since lost): `fedbench table report` shows
their old numbers, labelled as from such a file, and counts no verdict from them (their
verdicts were decided on runs no longer here, many before the decision rule existed)."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from fedbench.tables.result import Selection
from fedbench.tables.spec import TABLES

IGNORED = {"--format": 1, "--out": 1, "--results": 1, "--on-error": 1}  # flag -> values taken
OLD_OUTCOME = re.compile(r"^(reproduced|not reproduced|inconclusive|n/a|measured): ")
NOT_COUNTED = (
    "old numbers from a file made on an earlier machine (its runs are not in the shipped "
    "store): no verdict counted until they are rerun and shipped"
)


def _own(file: str) -> str:
    return f"`{file}`'s own header and old numbers"


def reported_from_file(report_text: str, file: str) -> bool:
    """Whether REPORT.md's text reads this table file as a file (no verdict counted)."""
    return _own(file) in report_text


@dataclass
class FileEntry:
    """A paper table known only from its file: what the file's head and claims block say."""

    name: str
    dataset: str | None
    file: str
    table_command: str
    sweep_command: str
    header: dict[str, str]  # 'made by', 'fedbench', 'device', 'compute', 'scale', 'calibrated'
    claims: list[str]  # 'claims: k of n reproduced ...', then one line per claim

    @property
    def full(self) -> bool | None:
        scale = self.header.get("scale")
        return None if scale is None else scale.startswith("full")


def read_table_file(path: Path, results: str) -> FileEntry | None:
    """The FileEntry of a paper table's md file (None for any other file)."""
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return None
    cmd = _made_by(path)
    parsed = parse_table_command(cmd, results) if cmd else None
    if not parsed:
        return None
    name, sel, ignored = parsed
    header = _file_header(lines)
    claims: list[str] = []
    for i, line in enumerate(lines):
        if line.startswith("**claims: ") and line.endswith("**"):
            claims.append(line.strip("*"))
            claims += [x[2:] for x in lines[i + 1 :] if x.startswith("- ")]
            break
    opts = Selection(seeds=sel.seeds, preset=sel.preset, sets=sel.sets).options()
    sweep = " ".join(
        filter(
            None,
            [
                f"fedbench sweep --table {name}",
                f"--dataset {sel.dataset}" if sel.dataset else "",
                opts,
                "--calibrated" if "--calibrated" in ignored else "",
            ],
        )
    )
    return FileEntry(name, sel.dataset, path.name, cmd, sweep, header, claims)


FILE_HEADER_KEYS = (
    "made by: ",
    "fedbench ",
    "device: ",
    "compute: ",
    "scale: ",
    "calibrated: ",
    "substitute: ",
)


def _file_header(lines: list[str]) -> dict[str, str]:
    """A table file's leading '<!-- key: value -->' lines, by key ('made by', 'compute', ...)."""
    header: dict[str, str] = {}
    for line in lines:
        if not (line.startswith("<!-- ") and line.endswith(" -->")):
            break
        text = line[5:-4].strip()
        key = next((k for k in FILE_HEADER_KEYS if text.startswith(k)), None)
        if key:
            header[key.rstrip(": ")] = text.removeprefix(key).strip()
    return header


def parse_table_command(command: str, results: str) -> tuple[str, Selection, list[str]] | None:
    """(table name, selection, options not understood) of a 'fedbench table NAME ...' line;
    --calibrated stays in the options (the caller applies the fit)."""
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    if len(words) < 3 or words[:2] != ["fedbench", "table"] or words[2] not in TABLES:
        return None
    sel, ignored, sets = Selection(results=results), [], {}
    it = iter(words[3:])
    for w in it:
        flag, _, inline = w.partition("=") if w.startswith("--") else (w, "", "")
        value = inline or None
        if flag in ("--dataset", "--seeds", "--preset", "--set", "--spread") or flag in IGNORED:
            value = value if value is not None else next(it, "")
        if flag == "--dataset":
            sel.dataset = value
        elif flag == "--seeds":
            sel.seeds = tuple(int(s) for s in value.split(",") if s.strip())
        elif flag == "--preset":
            sel.preset = value
        elif flag == "--set":
            k, _, v = value.partition("=")
            sets[k.strip()] = v
        elif flag not in IGNORED and flag not in ("--spread", "--calibrated"):
            ignored.append(w)
    if "--calibrated" in words:
        ignored.append("--calibrated")
    sel.sets = sets
    return words[2], sel, ignored


def _made_by(path: Path) -> str | None:
    try:
        head = path.read_text(errors="replace").splitlines()[:1]
    except OSError:
        return None
    if head and "made by: " in head[0]:
        return head[0].split("made by: ", 1)[1].removesuffix("-->").strip()
    return None


def _file_run_count(path: Path) -> int:
    """How many runs a table file says it was made from (its 'compute: N runs' line; 0 if none)."""
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return 0
    words = _file_header(lines).get("compute", "").split()
    return int(words[0]) if words and words[0].isdigit() else 0


def from_files(entries: list, tables_dir: Path | str, results: str) -> list[FileEntry]:
    """The tables folder's paper-table files that no entry was made from (their runs are not in
    the results folder): reported from the file."""
    used = {e.file for e in entries if e.file}
    folder = Path(tables_dir)
    out = []
    for path in sorted(folder.glob("*.md")) if folder.is_dir() else []:
        if path.name in used:
            continue
        f = read_table_file(path, results)
        if f and TABLES[f.name].is_table and TABLES[f.name].seeds:  # tables of runs
            out.append(f)
    return out


def file_section(f: FileEntry) -> list[str]:
    spec, h = TABLES[f.name], f.header
    marks = "".join(f" ({k})" for k in ("calibrated", "substitute") if k in h)
    out = [
        "",
        f"## {f.name}{marks} ({f.dataset or ', '.join(spec.datasets)}): {spec.source}, "
        f"{spec.title} (from its file)",
        "",
        f"- {NOT_COUNTED}; what follows is {_own(f.file)} "
        f"(fedbench {h.get('fedbench', '?')}, device: {h.get('device', 'not in the file')})",
        *([f"- calibrated: {h['calibrated']}"] if "calibrated" in h else []),
        *([f"- substitute: {h['substitute']}"] if "substitute" in h else []),
        f"- scale: {h.get('scale', 'not in the file (made before fedbench wrote it)')}",
        f"- runs made by: `{f.sweep_command}`",
        f"- table made by: `{f.table_command}` (file `{f.file}`)",
        *([f"- compute: {h['compute']}"] if "compute" in h else []),
    ]
    if f.claims:  # the claims with the file's numbers, its old verdict words taken off
        out += ["", "**no verdict counted** (the file's old numbers, per claim):", ""]
        out += [f"- {OLD_OUTCOME.sub('', c)}" for c in f.claims[1:]]
    else:
        out += ["", "No verdicts in the file (made before fedbench checked claims): rerun it."]
    return out
