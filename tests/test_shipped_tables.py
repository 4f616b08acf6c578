"""A fresh clone redraws the committed tables from the shipped store (results/shipped) alone:
every committed table file of runs, regenerated in an empty folder by the command in its first
line, is the same bytes (or is refused because the store holds fewer of its runs than the file
was made from: the file stands), and `fedbench table report` rewrites tables/REPORT.md as
committed. Skipped while the store is empty (before the first `fedbench publish`)."""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from fedbench.cli import cli
from fedbench.results.shipped_store import STORE_ENV, Store
from fedbench.tables import TABLES
from fedbench.tables.report import _made_by

REPO = Path(__file__).resolve().parents[1]
STORE = REPO / "results" / "shipped"
pytestmark = pytest.mark.skipif(not Store(STORE).groups(), reason="no shipped runs yet")


@pytest.fixture
def clone(tmp_path, monkeypatch):
    """An empty folder holding a copy of tables/, reading the repository's store."""
    monkeypatch.setenv(STORE_ENV, str(STORE))
    shutil.copytree(REPO / "tables", tmp_path / "tables")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _table_files() -> list[Path]:
    out = []
    for path in sorted((REPO / "tables").glob("*.md")):
        cmd = _made_by(path)
        words = shlex.split(cmd) if cmd else []
        if words[:2] == ["fedbench", "table"] and words[2] in TABLES and TABLES[words[2]].seeds:
            out.append(path)
    return out


@pytest.mark.parametrize("path", _table_files(), ids=lambda p: p.stem)
def test_committed_table_redraws_from_the_store(clone, path):
    words = shlex.split(_made_by(path))[1:]
    r = CliRunner().invoke(cli, words, obj={})
    new = (clone / "tables" / path.name).read_bytes()
    if r.exit_code == 2:
        assert "not replaced" in r.output, r.output
    else:
        assert r.exit_code == 0, r.output
    assert new == path.read_bytes(), f"{path.name} differs when redrawn from the store"


def test_report_leaves_the_committed_file(clone):
    r = CliRunner().invoke(cli, ["table", "report"], obj={})
    assert r.exit_code == 0, r.output
    committed = (REPO / "tables" / "REPORT.md").read_bytes()
    assert (clone / "tables" / "REPORT.md").read_bytes() == committed
