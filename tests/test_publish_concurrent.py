"""`fedbench publish` with concurrent writers: one publish at a time (<store>/.publish.lock, a
dead holder's lock taken over), both files of a group from one publish (a generation token),
and no temporary file left in the store by SIGTERM or by a killed publish. Runs are real ones,
written by `fedbench sweep`."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from conftest import invoke

from fedbench.results.publish_lock import LOCK
from fedbench.results.shipped_store import Store

TINY = ["--set", "rounds=2", "--set", "N=6", "--set", "K=3", "--set", "local_steps=2",
        "--set", "eval_train=false", "--threads", "1", "--quiet"]  # fmt: skip


def sweep(res: Path, seed: int) -> list[str]:
    """Two real finished runs (fedavg, fedprox) in res; their folder names."""
    r = invoke("sweep", "--methods", "fedavg,fedprox", "--seeds", seed, *TINY, "--results", res)
    assert r.exit_code == 0, r.output
    return sorted(p.name for p in res.iterdir() if (p / "run.json").is_file())


def publish_args(res: Path, store: Path, names: list[str]) -> list[str]:
    runs = [x for n in names for x in ("--run", n)]
    return ["publish", *runs, "--group", "g", "--results", str(res), "--store", str(store)]


def group_state(store: Path) -> tuple[set, set]:
    """(run ids in runs.parquet, run ids in rounds.parquet); both files from one publish."""
    runs, rounds = (pq.read_table(store / "g" / f"{n}.parquet") for n in ("runs", "rounds"))
    gen = [t.schema.metadata[b"fedbench.generation"] for t in (runs, rounds)]
    assert gen[0] == gen[1], "runs.parquet and rounds.parquet from different publishes"
    return set(runs.column("run_id").to_pylist()), set(rounds.column("run_id").to_pylist())


def leftovers(store: Path) -> list[str]:
    return sorted(str(p.relative_to(store)) for p in store.rglob(".*") if p.name != ".gitkeep")


@pytest.fixture(scope="module")
def two_folders(tmp_path_factory):
    base = tmp_path_factory.mktemp("runs")
    return [(base / f"r{s}", sweep(base / f"r{s}", s)) for s in (0, 1)]


def test_two_concurrent_publishes_keep_every_run(two_folders, tmp_path):
    store = tmp_path / "S"
    store.mkdir()
    (store / LOCK).write_text(f'{{"pid": {os.getpid()}}}')  # held: both start, then wait
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    procs = [
        subprocess.Popen([sys.executable, "-m", "fedbench", *publish_args(res, store, names)],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        for res, names in two_folders
    ]  # fmt: skip
    import time

    time.sleep(3)
    (store / LOCK).unlink()  # both wake together and race for the lock
    outs = [p.communicate(timeout=300)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    assert all("2 run(s) added" in out for out in outs), outs
    runs, rounds = group_state(store)
    assert len(runs) == 4 and rounds == runs
    assert leftovers(store) == []


def test_a_dead_publishers_lock_and_temp_files_are_cleaned(two_folders, tmp_path):
    (res, names), _ = two_folders
    store = tmp_path / "S"
    (store / "g").mkdir(parents=True)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()  # fmt: skip
    (store / LOCK).write_text(f'{{"pid": {dead}}}')  # a publish killed -9
    for junk in (".runs.publish", ".rounds.parquet.x1y2.tmp"):
        (store / "g" / junk).write_bytes(b"half")
    r = invoke(*publish_args(res, store, names))
    assert r.exit_code == 0 and "2 run(s) added" in r.output, r.output
    assert leftovers(store) == [] and len(group_state(store)[0]) == 2


def test_sigterm_during_a_publish_leaves_no_temp_file(two_folders, tmp_path, monkeypatch):
    (res, names), _ = two_folders
    store = tmp_path / "S"
    import fedbench.results.export as export

    real = export.write_table

    def write_then_term(table, path, what):
        real(table, path, what)
        if path.name == ".rounds.publish":  # both temp files written, none swapped in
            os.kill(os.getpid(), signal.SIGTERM)

    monkeypatch.setattr(export, "write_table", write_then_term)
    r = invoke(*publish_args(res, store, names))
    assert r.exit_code == 143, r.output
    assert leftovers(store) == [] and not (store / "g" / "runs.parquet").exists()


def test_a_group_from_two_publishes_is_refused_naming_it(two_folders, tmp_path):
    from fedbench.errors import FedbenchError

    store = tmp_path / "S"
    for res, names in two_folders:
        assert invoke(*publish_args(res, store, names)).exit_code == 0
    first = store / "g" / "rounds.parquet"
    table = pq.read_table(first)
    meta = {**table.schema.metadata, b"fedbench.generation": b"another"}
    pq.write_table(table.replace_schema_metadata(meta), first)  # killed between the renames
    s = Store(store)
    group, row = s.rows()[0]
    with pytest.raises(FedbenchError, match="from different publishes; restore both from git"):
        s.rounds(group, row["run_id"])
