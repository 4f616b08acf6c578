"""`table report` never downloads (issue 31, item 12): a table whose data is not here (FedProx's
data-stats) is one line saying so, with downloads allowed."""

import shutil
from pathlib import Path

import pytest
from conftest import invoke

from fedbench.data import download

TABLES = Path(__file__).resolve().parents[1] / "tables"


@pytest.fixture
def no_data(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "home" / ".cache"))
    monkeypatch.delenv("FEDBENCH_DATA", raising=False)
    monkeypatch.setenv("FEDBENCH_STORE", str(TABLES.parent / "results" / "shipped"))
    monkeypatch.delenv("FEDBENCH_NO_DOWNLOAD", raising=False)  # downloads allowed
    fetched = []
    monkeypatch.setattr(download, "fetch", lambda name, *a, **k: fetched.append(name))
    out = tmp_path / "tables"
    out.mkdir()
    shutil.copy(TABLES / "data-stats.md", out)
    return out, fetched


def test_report_does_not_download_and_says_the_data_is_absent(no_data):
    out, fetched = no_data
    r = invoke("table", "report", "--out", out)
    assert fetched == [] and "downloading" not in r.output, r.output
    lines = [x for x in r.output.splitlines() if x.startswith("data-stats")]
    assert lines == [
        "data-stats: not evaluated, its data is not here (femnist, mnist, sent140, shakespeare); "
        "get it with `fedbench data get femnist mnist sent140 shakespeare`, or point "
        "$FEDBENCH_DATA at it"
    ], r.output
