"""A paper table's figure with many panels wraps them in rows a page can hold, drawn by the
CLI from the shipped store: sfl-fmnist-lr's six C x K panels (versus) were one 6:1 strip."""

from __future__ import annotations

import shutil
from pathlib import Path

import matplotlib.image as mpimg
import pytest
from click.testing import CliRunner

from fedbench.cli import cli
from fedbench.results.shipped_store import STORE_ENV, Store

REPO = Path(__file__).resolve().parents[1]
STORE = REPO / "results" / "shipped"


@pytest.mark.skipif("sfl-fmnist-lr" not in Store(STORE).groups(), reason="grid not shipped")
def test_six_panels_wrap_into_two_rows_of_three(tmp_path, monkeypatch):
    monkeypatch.setenv(STORE_ENV, str(STORE))
    shutil.copytree(REPO / "tables", tmp_path / "tables")
    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(cli, ["plot", "sfl-fmnist-lr", "--out", "fig"], obj={})
    assert r.exit_code == 0, r.output
    height, width = mpimg.imread(tmp_path / "fig" / "sfl-fmnist-lr.png").shape[:2]
    assert 1.5 < width / height < 3.0, (width, height)  # 3 panels wide, 2 high (+ legend)
