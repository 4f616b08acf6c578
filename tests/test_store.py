"""The shipped store (results/shipped): `fedbench publish` adds a table's runs once (identity +
data fingerprint), `table`/`sweep`/`report` read them beside the results folder and say so, a
table file is never replaced by one made from fewer runs, and the same runs give the same bytes.
`fedbench export` writes runs and rounds losslessly."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from fedbench.cli import cli
from fedbench.results import RunIndex
from fedbench.results.export import meta_from_row
from fedbench.results.schema import normalise_meta
from fedbench.results.shipped_store import SIZE_BUDGET, STORE_ENV, Store, store_root
from fedbench.tables import Selection, cell_config, get_table
from fedbench.testing import fake_rounds, write_fake_run

REPO = Path(__file__).resolve().parents[1]
SETS = {"rounds": "5", "N": "6", "K": "3", "local_steps": "2", "device": "cpu"}
SEL = ["--dataset", "synthetic-1-1", "--preset", "default", "--seeds", "0,1"]
SEL += [x for k, v in SETS.items() for x in ("--set", f"{k}={v}")]


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], obj={})


def fake_stragglers(res: Path, seeds=(0, 1)) -> int:
    """Fake runs of every stragglers cell on Synthetic(1,1); returns how many."""
    spec = get_table("stragglers")
    sel = Selection("synthetic-1-1", tuple(seeds), "default", SETS, str(res))
    n = 0
    for i, cell in enumerate(c for c in spec.cells("synthetic-1-1") if c.metric == "final_acc"):
        for seed in seeds:
            cfg = cell_config(cell, seed, sel.preset, sel.sets)
            top = 0.5 + 0.03 * i + 0.01 * seed
            write_fake_run(res, cfg, fake_rounds(cfg.rounds, top=top, loss0=1 + i / 10))
            n += 1
    return n


@pytest.fixture
def published(tmp_path, monkeypatch):
    """R: fake stragglers runs; S: a store they were published into (FEDBENCH_STORE=S)."""
    res, store = tmp_path / "R", tmp_path / "S"
    n = fake_stragglers(res)
    r = invoke("publish", "--table", "stragglers", *SEL, "--results", res, "--store", store)
    assert r.exit_code == 0, r.output
    assert f"{n} run(s) added, 0 already shipped" in r.output
    monkeypatch.setenv(STORE_ENV, str(store))
    return res, store, n


def test_publish_writes_sorted_zstd_files_once(published):
    res, store, n = published
    runs = pq.read_table(store / "stragglers_synthetic-1-1" / "runs.parquet")
    rounds = pq.read_table(store / "stragglers_synthetic-1-1" / "rounds.parquet")
    assert runs.num_rows == n and rounds.num_rows == n * 6
    ids = runs.column("run_id").to_pylist()
    assert ids == sorted(ids) and rounds.column("run_id").to_pylist() == sorted(
        rounds.column("run_id").to_pylist()
    )
    meta = pq.read_metadata(store / "stragglers_synthetic-1-1" / "rounds.parquet")
    assert meta.row_group(0).column(0).compression == "ZSTD"
    # again, or into another group: nothing new (identity + data fingerprint)
    for group in ([], ["--group", "other"]):
        r = invoke("publish", "--table", "stragglers", *SEL, "--results", res, "--store", store,
                   *group)  # fmt: skip
        assert r.exit_code == 0 and f"0 run(s) added, {n} already shipped" in r.output, r.output
    assert not (store / "other").exists()


def test_a_table_reads_the_store_in_an_empty_folder(published, tmp_path, monkeypatch):
    res, store, n = published
    monkeypatch.chdir(tmp_path)  # no results/ here
    local = invoke("table", "stragglers", *SEL, "--results", res)
    shipped = invoke("table", "stragglers", *SEL)
    assert shipped.exit_code == 0, shipped.output
    assert "does not exist" not in shipped.output
    assert f"note: {n} run(s) used here are shipped runs" in shipped.output
    table = shipped.output.split("note:")[0]
    assert table == local.output.split("note:")[0]  # the same cells either way
    r = invoke("sweep", "--table", "stragglers", *SEL, "--dry-run")
    assert r.exit_code == 0 and "0 to run" in r.output.replace("  ", " "), r.output
    r = invoke("plot", "stragglers", *SEL, "--out", tmp_path / "fig")  # figures redraw too
    assert r.exit_code == 0 and (tmp_path / "fig" / "stragglers_synthetic-1-1.png").is_file()


def test_regenerating_a_table_gives_the_same_bytes_and_never_fewer_runs(
    published, tmp_path, monkeypatch
):
    res, store, n = published
    out = tmp_path / "tables"
    args = ["table", "stragglers", *SEL, "--format", "md", "--out", out]
    assert invoke(*args).exit_code == 0
    path = out / "stragglers_synthetic-1-1.md"
    first = path.read_bytes()
    assert b"UTC" not in first and f"compute: {n} runs".encode() in first
    r = invoke(*args)
    assert r.exit_code == 0 and "up to date" in r.output and path.read_bytes() == first
    # with fewer runs (no store, half the results): refused, the file stands
    half = tmp_path / "half"
    fake_stragglers(half, seeds=(0,))
    env_args = [*args, "--results", half]
    monkeypatch.setenv(STORE_ENV, "none")
    r = invoke(*env_args)
    assert r.exit_code == 2 and f"was made from {n} runs, this one from {n // 2}" in r.output
    assert path.read_bytes() == first
    for fmt in ("csv", "latex"):  # a csv's head is in NAME.csv.json, its data only in the csv
        assert invoke(*args[:-4], "--format", fmt, "--out", out, "--results", res).exit_code == 0
    assert not any(line.startswith("#") for line in (out / "stragglers_synthetic-1-1.csv").open())
    head = json.loads((out / "stragglers_synthetic-1-1.csv.json").read_text())["header"]
    assert any(h.startswith("compute: ") for h in head)
    r = invoke(*env_args[:-6], "--format", "csv", "--out", out, "--results", half)
    assert r.exit_code == 2 and "not replaced" in r.output


def test_report_twice_is_the_same_bytes(published, tmp_path):
    out = tmp_path / "tables"
    assert invoke("table", "stragglers", *SEL, "--format", "md", "--out", out).exit_code == 0
    r = invoke("table", "report", "--out", out)
    assert r.exit_code == 0, r.output
    first = (out / "REPORT.md").read_bytes()
    assert invoke("table", "report", "--out", out).exit_code == 0
    assert (out / "REPORT.md").read_bytes() == first and b"UTC" not in first


def test_export_is_lossless(tmp_path):
    res = tmp_path / "R"
    fake_stragglers(res, seeds=(0,))
    r = invoke("export", "--results", res, "--out", tmp_path / "E")
    assert r.exit_code == 0, r.output
    runs = pq.read_table(tmp_path / "E" / "runs.parquet").to_pylist()
    for row in runs:
        meta = json.loads((res / row["run_id"] / "run.json").read_text())
        back = meta_from_row(row)
        want = normalise_meta(meta)
        assert back == want
    rounds = pq.read_table(tmp_path / "E" / "rounds.parquet")
    assert rounds.num_rows == 6 * len(runs)
    assert b"fedbench.made_by" in pq.read_schema(tmp_path / "E" / "rounds.parquet").metadata
    r = invoke("export", "--table", "stragglers", *SEL, "--results", res, "--out", tmp_path / "T")
    assert r.exit_code == 0 and f"({len(runs)} runs)" in r.output, r.output


def test_publish_refuses_past_the_size_budget(tmp_path, monkeypatch):
    res = tmp_path / "R"
    fake_stragglers(res, seeds=(0,))
    monkeypatch.setattr("fedbench.results.shipped_store.SIZE_BUDGET", 100)
    r = invoke("publish", "--table", "stragglers", *SEL, "--results", res, "--store",
               tmp_path / "S")  # fmt: skip
    assert r.exit_code == 2 and "over its budget" in r.output
    assert not list((tmp_path / "S").rglob("*.parquet"))


def test_the_repository_store_is_within_budget_and_not_ignored():
    root = REPO / "results" / "shipped"
    assert Store(root).size() <= SIZE_BUDGET
    probe = "results/shipped/tau_fmnist/runs.parquet"
    ignored = subprocess.run(["git", "check-ignore", "-q", probe], cwd=REPO).returncode == 0
    assert not ignored, ".gitignore must let the shipped store in"


def test_store_found_from_the_source_tree(monkeypatch):
    monkeypatch.delenv(STORE_ENV)
    assert store_root() == REPO / "results" / "shipped"
    monkeypatch.setenv(STORE_ENV, "none")
    assert store_root() is None
    assert len(RunIndex(REPO / "nosuch", must_exist=False, shipped=True)) == 0


def test_load_frames_reads_local_and_shipped(published, tmp_path):
    from fedbench.results import load_frames

    res, store, n = published
    extra = tmp_path / "more"
    fake_stragglers(extra, seeds=(2,))  # runs not shipped
    runs, rounds = load_frames(extra)
    assert runs["source"].value_counts().to_dict() == {"shipped": n, "local": n // 2}
    assert set(rounds["run_id"]) == set(runs["run_id"]) and len(rounds) == 6 * len(runs)
    runs, _ = load_frames(extra, shipped=False)
    assert set(runs["source"]) == {"local"} and len(runs) == n // 2


def test_a_run_from_a_build_without_some_config_fields_keeps_its_identity(tmp_path):
    """A run.json written before a config field existed (here server_opt and slow_work, whose
    defaults are the old behaviour) is shipped beside runs that have them: the runs table's
    column is null for it, and read back the field takes its default, so the shipped run
    matches its config as its own folder does."""
    res, store = tmp_path / "R", tmp_path / "S"
    fake_stragglers(res, seeds=(0,))
    old = sorted(res.glob("*/run.json"))[0]
    meta = json.loads(old.read_text())
    for field in ("server_opt", "slow_work"):
        meta["config"].pop(field)
    old.write_text(json.dumps(meta))
    local = {r.run_id: r.key for r in RunIndex(res).records()}
    r = invoke("publish", "--table", "stragglers", *SEL, "--seeds", "0", "--results", res,
               "--store", store)  # fmt: skip
    assert r.exit_code == 0, r.output
    shipped = RunIndex(tmp_path / "none", must_exist=False, shipped=Store(store))
    assert {r.run_id: r.key for r in shipped.records()} == local
