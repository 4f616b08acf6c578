"""Hostile files in results/ as a class: deep nesting, huge strings, FIFOs, links to devices and
to files elsewhere, sockets, oversized files, wrong types. Every reader (table, table summary,
plot, sweep planning, export, publish, calibrate's lookup, fedbench.load_runs) passes them over
with one line naming the file: exit 2 by default, `--on-error skip` lets the others proceed;
never a hang, a traceback, a RecursionError or an unbounded read (fedbench/safe_read.py)."""

from __future__ import annotations

import json
import os
import signal
import socket
from pathlib import Path

import pytest
from conftest import (
    TINY_TABLE,
    invoke,
    one_line_error,
    reading_commands,
    stragglers_runs,
)

import fedbench
from fedbench import safe_read
from fedbench.errors import FedbenchError
from fedbench.safe_read import JSON_CAP, Refused, read_json

pytestmark = pytest.mark.usefixtures("one_thread", "private_cache")

TABLE = TINY_TABLE


@pytest.fixture(autouse=True)
def no_hang():
    """A reader that blocks (a FIFO opened without O_NONBLOCK) fails the test, not the suite."""

    def alarm(*_):
        raise TimeoutError("a reader hung on a hostile file")

    old = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(120)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


def _plant(path: Path, kind: str, outside: Path) -> None:
    """Replace the file at path with a hostile one of this kind."""
    path.unlink()
    if kind == "nested":
        path.write_text("[" * 200_000 + "]" * 200_000)
    elif kind == "deep object":
        path.write_text('{"a":' * 100_000 + "1" + "}" * 100_000)
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "dev-zero":
        path.symlink_to("/dev/zero")
    elif kind == "dev-null":
        path.symlink_to("/dev/null")
    elif kind == "link":  # a good copy elsewhere: still not read through the link
        (outside / "copy").write_bytes(b"{}")
        path.symlink_to(outside / "copy")
    elif kind == "folder":
        path.mkdir()
    elif kind == "socket":
        s = socket.socket(socket.AF_UNIX)
        s.bind(str(path))
        s.close()
    elif kind == "oversized":  # sparse: refused by its size, never read
        with open(path, "wb") as f:
            f.truncate(JSON_CAP + 1 if path.suffix == ".json" else safe_read.PARQUET_CAP + 1)


KINDS = ["nested", "deep object", "fifo", "dev-zero", "dev-null", "link", "folder", "socket",
         "oversized"]  # fmt: skip
WHY = {
    "nested": "nested too deep",
    "deep object": "nested too deep",
    "fifo": "a FIFO",
    "dev-zero": "a link",
    "dev-null": "a link",
    "link": "a link",
    "folder": "a folder",
    "socket": "a socket",
    "oversized": "over its cap",
}


def _check_readers(tmp_path: Path, res: Path, bad: Path, why: str) -> None:
    """Every reader: one line naming `bad` (exit 2), and with --on-error skip the others."""
    skip = ["--results", res, "--on-error", "skip"]
    commands = [
        *reading_commands(tmp_path),
        ["export", "--out", tmp_path / "x"],
        ["publish", "--table", "stragglers", *TABLE, "--store", tmp_path / "store"],
    ]
    for cmd in commands:
        line = one_line_error(invoke(*cmd, "--results", res))
        assert str(bad) in line and why in line, (cmd, line)
        r = invoke(*cmd, *skip)
        assert r.exit_code == 0, (cmd, r.output)
        assert "skipped" in r.output and str(bad) in r.output.replace("\n", ""), (cmd, r.output)
        assert "Traceback" not in r.output and "RecursionError" not in r.output
    sweep = ["sweep", "--table", "stragglers", *TABLE, "--results", res, "--quiet", "--dry-run"]
    line = one_line_error(invoke(*sweep, "--damaged", "stop"))
    assert str(bad) in line, line
    r = invoke(*sweep)  # planning passes it over, names it, and plans the others
    assert r.exit_code == 0 and str(bad) in r.output.replace("\n", ""), r.output
    with pytest.raises(FedbenchError, match=why):
        fedbench.load_runs(res, on_error="fail")
    with pytest.warns(UserWarning, match="skipped: .*" + why):
        runs, _ = fedbench.load_runs(res)
    assert len(runs) >= 8


@pytest.mark.parametrize(
    "name,kind",
    [("run.json", k) for k in KINDS]
    + [("rounds.parquet", k) for k in ("fifo", "dev-zero", "link", "folder", "oversized")],
)
def test_a_hostile_run_file_is_passed_over_by_every_reader(tmp_path, name, kind):
    res, outside = tmp_path / "r", tmp_path / "outside"
    outside.mkdir()
    bad = stragglers_runs(res)[0] / name
    _plant(bad, kind, outside)
    _check_readers(tmp_path, res, bad, WHY[kind])


def test_a_run_folder_that_is_a_link_is_reported_not_read(tmp_path):
    res = tmp_path / "r"
    dirs = stragglers_runs(res)
    elsewhere = tmp_path / "elsewhere"
    dirs[0].rename(elsewhere)
    dirs[0].symlink_to(elsewhere, target_is_directory=True)
    line = one_line_error(invoke("table", "summary", "--results", res))
    assert str(dirs[0]) in line and "a link" in line, line
    r = invoke("table", "summary", "--results", res, "--on-error", "skip")
    assert r.exit_code == 0 and "skipped" in r.output, r.output


@pytest.mark.parametrize(
    "change, words",
    [
        (lambda m: m["config"].update(rounds="2"), "config.rounds is '2', not an integer"),
        (lambda m: m["config"].update(lr=[0.1]), "config.lr is [0.1], not a number"),
        (lambda m: m["config"].update(seed=0.5), "config.seed is 0.5, not an integer"),
        (lambda m: m["config"].update(method="x" * 5_000_000), "text of 5000000 characters"),
        (lambda m: m.update(rows="3"), "rows is '3', not an integer"),
        (lambda m: m["data"].update(fingerprint=[1]), "data.fingerprint is [1], not text"),
        (lambda m: m.update(device_name={"a": 1}), "device_name is {'a': 1}, not text"),
    ],
)
def test_a_run_json_of_wrong_types_is_named_not_read(tmp_path, change, words):
    res = tmp_path / "r"
    dirs = stragglers_runs(res)
    path = dirs[0] / "run.json"
    meta = json.loads(path.read_text())
    change(meta)
    path.write_text(json.dumps(meta))
    for cmd in (["table", "summary"], ["table", "stragglers", *TABLE],
                ["plot", "curves", "--out", tmp_path / "c"]):  # fmt: skip
        line = one_line_error(invoke(*cmd, "--results", res))
        assert str(path) in line and words in line and len(line) < 600, line
        r = invoke(*cmd, "--results", res, "--on-error", "skip")
        assert r.exit_code == 0 and str(path) in r.output.replace("\n", ""), r.output


def test_a_finished_run_without_a_summary_is_noted(tmp_path):
    res = tmp_path / "r"
    dirs = stragglers_runs(res)
    path = dirs[0] / "run.json"
    meta = json.loads(path.read_text())
    del meta["summary"]
    path.write_text(json.dumps(meta))
    r = invoke("table", "summary", "--results", res)
    assert r.exit_code == 0, r.output
    assert "no summary" in r.output and str(path) in r.output.replace("\n", ""), r.output


def test_a_hostile_calibration_fit_is_named(tmp_path):
    from fedbench.tables.calibration import calibration_path, load_fit

    path = calibration_path(tmp_path, "tau", "fmnist")
    path.parent.mkdir(parents=True)
    os.mkfifo(path)
    with pytest.raises(FedbenchError, match="a FIFO"):
        load_fit(tmp_path, "tau", "fmnist")


def test_a_hostile_claim_file_is_taken_over_without_a_hang(tmp_path, monkeypatch):
    """A FIFO or a link to /dev/zero as a claim's lock file: read as no claimant (never
    blocking), taken over when old enough; the link is removed, never what it points to."""
    from fedbench.results import locks

    monkeypatch.setattr(locks, "UNREADABLE_STALE_SECONDS", -1.0)
    for i, make in enumerate((os.mkfifo, lambda p: p.symlink_to("/dev/zero"))):
        claim = locks.RunClaim(tmp_path, f"run{i}")
        claim.folder.mkdir(exist_ok=True)
        make(claim.path)
        assert claim.holder() == {}
        assert claim.acquire() and claim.path.is_file() and not claim.path.is_symlink()
        claim.release()


def test_read_json_bounds(tmp_path):
    """The one bounded read: caps by fstat before reading, depth turned into a one-line
    refusal, a link in the last component refused, regular files read."""
    good = tmp_path / "good.json"
    good.write_text('{"a": [1, 2]}')
    assert read_json(good) == {"a": [1, 2]}
    with pytest.raises(Refused, match="over its cap of"):
        read_json(good, cap=4)
    link = tmp_path / "link.json"
    link.symlink_to(good)
    with pytest.raises(Refused, match="is a link"):
        read_json(link)
    with pytest.raises(FileNotFoundError):
        read_json(tmp_path / "none.json")
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 200_000 + "]" * 200_000)
    with pytest.raises(Refused, match="nested too deep") as e:
        read_json(deep)
    assert isinstance(e.value, ValueError) and str(deep) in str(e.value)
