"""A dataset that is not here is one short line (issue 31, item 9): the folders looked in,
resolved and deduplicated, none a user cannot have (the development checkout's ../shared/data),
$FEDBENCH_DATA named, `fedbench data get NAME`; no download attempt when downloads are off."""

import pytest
from conftest import invoke


@pytest.fixture
def fresh_clone(tmp_path, monkeypatch):
    """A folder with no data next to it, an empty home and cache, downloads off."""
    work = tmp_path / "clone"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "home" / ".cache"))
    monkeypatch.setenv("FEDBENCH_NO_DOWNLOAD", "1")
    monkeypatch.delenv("FEDBENCH_DATA", raising=False)
    return work


def not_found_line(*args) -> str:
    r = invoke("train", "--preset", "fedprox-mnist", "--threads", "1", *args)
    assert r.exit_code == 2, r.output
    assert "downloading" not in r.output
    lines = r.output.strip().splitlines()
    assert len(lines) == 1, r.output
    return lines[0]


def test_the_line_is_short_and_says_how_to_get_the_data(fresh_clone):
    line = not_found_line("--results", fresh_clone / "r")
    assert line.startswith("Error: mnist not found (looked in ./data/MNIST/raw, ")
    assert "~/.cache/fedbench/MNIST/raw; $FEDBENCH_DATA is not set)" in line
    assert "shared" not in line and ".." not in line
    assert "`fedbench data get mnist`" in line and len(line) < 330, len(line)


def test_fedbench_data_is_named_and_folders_are_not_repeated(fresh_clone, monkeypatch):
    monkeypatch.setenv("FEDBENCH_DATA", "data")  # the same folder as ./data
    line = not_found_line("--results", fresh_clone / "r")
    looked = line.split("(looked in ")[1].split("); ")[0]
    assert looked.startswith("$FEDBENCH_DATA, ") and looked.endswith("; $FEDBENCH_DATA = data")
    assert "$FEDBENCH_DATA/MNIST/raw" in looked and "./data/MNIST/raw" not in looked
