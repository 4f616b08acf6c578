"""What the docs and help texts tell a newcomer resolves (issue 31, item 15): every documented
`fedbench ...` command names a real command and real options, every file it names exists,
help texts point to sections that exist, the schema number and run statuses are the code's, the
--config example loads, and the plugin example's README states what a fresh clone prints."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import click
import pytest
from conftest import invoke

from fedbench.cli import cli
from fedbench.testing import registries_restored

ROOT = Path(__file__).resolve().parents[1]
DOCS = [
    ROOT / "README.md",
    *sorted((ROOT / "docs").glob("*.md")),
    *sorted((ROOT / "examples").glob("*/README.md")),
]
FENCE = re.compile(r"^\s*(```|~~~)")


def fenced_commands(text: str) -> list[str]:
    """The `fedbench ...` lines of fenced blocks, continuation lines joined, comments cut."""
    out, fenced, pending = [], False, ""
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            continue
        line = pending + line.split(" #")[0].strip()
        pending = line[:-1] + " " if line.endswith("\\") else ""
        if not pending and line.startswith("fedbench "):
            out.append(line)
    return out


def help_examples() -> list[str]:
    """The Examples lines of every command's help."""
    out = []

    def walk(cmd: click.Command) -> None:
        for line in (cmd.help or "").splitlines():
            line = line.split(" #")[0].strip()
            if line.startswith("fedbench ") and not line.endswith("\\"):
                out.append(line)
        for sub in getattr(cmd, "commands", {}).values():
            walk(sub)

    walk(cli)
    return out


def resolve(line: str) -> list[str]:
    """What is wrong with one documented command line ([] when it resolves)."""
    words = shlex.split(line.replace("$P", "examples/fedavg_l1/fedavg_l1.py"))[1:]
    cmd: click.Command = cli
    while isinstance(cmd, click.Group) and words and words[0] in cmd.commands:
        cmd = cmd.commands[words.pop(0)]
    if isinstance(cmd, click.Group):
        return [f"{line}: no such command {words[:1]}"] if words and words[0][0] != "-" else []
    known = {o for p in cmd.params for o in (*p.opts, *p.secondary_opts)} | {"--help"}
    wrong = [f"{line}: {w.split('=')[0]} is not an option of fedbench {cmd.name}"
             for w in words if w.startswith("--") and w.split("=")[0] not in known]  # fmt: skip
    wrong += [f"{line}: {w} does not exist" for w in words
              if w.startswith("examples/") and not (ROOT / w).exists()]  # fmt: skip
    return wrong


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_documented_commands_resolve(doc):
    problems = [p for line in fenced_commands(doc.read_text()) for p in resolve(line)]
    assert not problems, "\n".join(problems)


def test_help_examples_resolve():
    lines = help_examples()
    assert len(lines) > 30
    problems = [p for line in lines for p in resolve(line)]
    assert not problems, "\n".join(problems)


def test_help_texts_point_to_sections_that_exist():
    usage = (ROOT / "docs" / "usage.md").read_text()
    sections = set(re.findall(r"^#+ (.+)$", usage, re.M))
    sources = [p.read_text() for p in (ROOT / "fedbench").rglob("*.py")]
    assert not [s for s in sources if "(see README)" in s]
    pointed = {m for s in sources for m in re.findall(r"docs/usage\.md, ([A-Z][a-z]+)", s)}
    assert pointed and pointed <= sections, pointed - sections


def test_usage_states_the_codes_schema_and_statuses():
    from fedbench.results.records import STATUSES
    from fedbench.results.schema import SCHEMA_VERSION

    usage = (ROOT / "docs" / "usage.md").read_text()
    assert f"`schema_version` (now {SCHEMA_VERSION})" in usage
    listed = re.search(r"status \(([^)]*)", usage).group(1)
    assert all(s in listed for s in STATUSES), listed


def test_the_config_example_loads():
    from fedbench.assembly import build_config

    cfg = build_config(None, str(ROOT / "examples" / "run.toml"), {"lr": "0.03"})
    assert (cfg.method, cfg.method_params, cfg.lr) == ("fedprox", {"mu": 0.1}, 0.03)


def test_the_plugin_readme_says_what_a_fresh_clone_prints(tmp_path, monkeypatch):
    monkeypatch.setenv("FEDBENCH_STORE", str(ROOT / "results" / "shipped"))
    readme = " ".join((ROOT / "examples" / "fedavg_l1" / "README.md").read_text().split())
    plugin = ROOT / "examples" / "fedavg_l1" / "fedavg_l1.py"
    with registries_restored():  # the plugin's method leaves with it
        r = invoke("table", "stragglers", "--dataset", "synthetic-1-1", "--plugin", plugin,
                   "--add-method", "fedavg_l1", "--results", tmp_path / "none")  # fmt: skip
    assert r.exit_code == 0, r.output
    said = re.search(r"^claims: .*$", r.output, re.M).group(0)
    assert said == "claims: 3 of 4 reproduced, 0 not reproduced, 1 inconclusive"
    assert f"`{said}`" in readme and "A fresh clone" in readme
