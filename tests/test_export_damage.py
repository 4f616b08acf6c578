"""Runs a `fedbench sweep` really wrote, then damaged: export validates each rounds.parquet as
the index does for table and publish (no round column, text where numbers belong), and the
index (so publish, export and table) refuses a run.json whose config no run could have
(lr=inf, nan, negative), naming file and field; --on-error skip leaves the run out, said."""

from __future__ import annotations

import json
import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import invoke, one_line_error

TINY = ["--set", "rounds=2", "--set", "N=6", "--set", "K=3", "--set", "local_steps=2",
        "--set", "eval_train=false"]  # fmt: skip


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """Two real runs (fedavg, fedprox) in R."""
    res = tmp_path_factory.mktemp("exportdamage") / "R"
    sweep = ["sweep", "--methods", "fedavg,fedprox", "--seeds", "0", *TINY, "--threads", "1"]
    assert invoke(*sweep, "--quiet", "--results", res).exit_code == 0
    return res, sorted(p.name for p in res.iterdir() if (p / "run.json").is_file())


@pytest.fixture
def runs(made, tmp_path):
    res, names = made
    shutil.copytree(res, tmp_path / "R")
    return tmp_path / "R", names


def drop_round(path):
    pq.write_table(pq.read_table(path).drop(["round"]), path)


def as_text(column):
    def edit(path):
        t = pq.read_table(path)
        i = t.schema.get_field_index(column)
        pq.write_table(t.set_column(i, column, t[column].cast(pa.string())), path)

    return edit


@pytest.mark.parametrize("damage", [drop_round, as_text("round"), as_text("test_acc")])
def test_export_names_a_damaged_rounds_file_or_leaves_its_run_out(runs, tmp_path, damage):
    res, (bad, good) = runs
    damage(res / bad / "rounds.parquet")
    line = one_line_error(invoke("export", "--results", res, "--out", tmp_path / "o"))
    assert f"{bad}/rounds.parquet has" in line and "--on-error skip" in line, line
    assert not (tmp_path / "o" / "runs.parquet").exists()

    r = invoke("export", "--results", res, "--out", tmp_path / "o", "--on-error", "skip")
    assert r.exit_code == 0, r.output
    assert f"skipped: {res / bad / 'rounds.parquet'} has" in " ".join(r.output.split()), r.output
    exported = pq.read_table(tmp_path / "o" / "runs.parquet").column("run_id").to_pylist()
    rounds = pq.read_table(tmp_path / "o" / "rounds.parquet")
    assert exported == [good] and set(rounds.column("run_id").to_pylist()) == {good}
    assert rounds.schema.field("round").type == pa.int64()


def set_lr(run_dir, value):
    path = run_dir / "run.json"
    meta = json.loads(path.read_text())
    meta["config"]["lr"] = value
    path.write_text(json.dumps(meta))  # inf and nan as JSON's Infinity / NaN, as Python reads


@pytest.mark.parametrize("lr, says", [(float("inf"), "lr must be a finite number"),
                                      (float("nan"), "lr must be a finite number"),
                                      (-1.0, "lr must be > 0")])  # fmt: skip
def test_publish_refuses_a_run_whose_config_no_run_could_have(runs, tmp_path, lr, says):
    res, (bad, good) = runs
    set_lr(res / bad, lr)
    publish = ["publish", "--run", bad, "--run", good, "--group", "g", "--results", res,
               "--store", tmp_path / "S"]  # fmt: skip
    line = one_line_error(invoke(*publish))
    assert f"{bad}/run.json" in line and says in line, line
    assert not (tmp_path / "S" / "g" / "runs.parquet").exists()

    r = invoke(*publish, "--on-error", "skip")
    assert r.exit_code == 0 and "1 run(s) added" in r.output, r.output
    assert f"{bad}/run.json has a config" in " ".join(r.output.split()), r.output
    shipped = pq.read_table(tmp_path / "S" / "g" / "runs.parquet").column("run_id").to_pylist()
    assert shipped == [good]


def test_reading_commands_skip_such_a_run_with_a_line(runs, tmp_path):
    res, (bad, good) = runs
    set_lr(res / bad, float("inf"))
    line = one_line_error(invoke("table", "summary", "--results", res))
    assert f"{bad}/run.json" in line and "lr must be a finite number" in line, line
    r = invoke("export", "--results", res, "--out", tmp_path / "o", "--on-error", "skip")
    assert r.exit_code == 0 and "(1 runs)" in r.output and "lr must be" in r.output, r.output
