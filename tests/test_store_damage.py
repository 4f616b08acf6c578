"""A damaged shipped-store file (wrong columns, truncated) is one line naming the file, what is
wrong and what to do; commands that do not need that group go on. The store is made by
`fedbench publish` from real `fedbench sweep` runs."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest
from conftest import invoke

import fedbench
from fedbench.results.shipped_store import STORE_ENV

TINY = ["--set", "rounds=2", "--set", "N=6", "--set", "K=3", "--set", "local_steps=2",
        "--set", "eval_train=false"]  # fmt: skip
SWEEP = ["sweep", "--methods", "fedavg,fedprox", "--seeds", "0", *TINY, "--threads", "1"]


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """R: two real runs; S: a store with group a (the fedavg run) and group b (fedprox)."""
    base = tmp_path_factory.mktemp("damage")
    res, store = base / "R", base / "S"
    assert invoke(*SWEEP, "--quiet", "--results", res).exit_code == 0
    names = sorted(p.name for p in res.iterdir() if (p / "run.json").is_file())
    for group, name in zip("ab", names):
        r = invoke("publish", "--run", name, "--group", group, "--results", res, "--store", store)
        assert r.exit_code == 0, r.output
    return res, store, names


@pytest.fixture
def store(made, tmp_path, monkeypatch):
    import shutil

    res, store, names = made
    copy = tmp_path / "S"
    shutil.copytree(store, copy)
    monkeypatch.setenv(STORE_ENV, str(copy))
    monkeypatch.setattr("fedbench.results.shipped_store._DEFAULT", {})
    return res, copy, names


def drop_column(path, column):
    pq.write_table(pq.read_table(path).drop([column]), path)


def truncate(path):
    path.write_bytes(path.read_bytes()[:300])


def test_a_group_with_wrong_columns_is_named_and_the_others_are_read(store, tmp_path):
    res, s, (fedavg_run, fedprox_run) = store
    drop_column(s / "a" / "runs.parquet", "method_params")
    r = invoke(*SWEEP, "--dry-run", "--results", tmp_path / "empty")
    assert r.exit_code == 0, r.output
    warning = [ln for ln in r.output.splitlines() if "runs.parquet" in ln]
    assert len(warning) == 1 and str(s / "a" / "runs.parquet") in warning[0], r.output
    assert "lacks the column(s) method_params" in warning[0] and "git checkout" in warning[0]
    assert "1 already done, 1 to run" in r.output  # group b's run is still shipped
    runs, _ = fedbench.load_runs(tmp_path / "empty", shipped=True)
    assert list(runs["run_id"]) == [fedprox_run]


def test_publish_into_a_damaged_group_is_refused_naming_the_file(store):
    res, s, names = store
    drop_column(s / "a" / "runs.parquet", "method_params")
    truncate(s / "b" / "rounds.parquet")
    for group, bad in (("a", "a/runs.parquet"), ("b", "b/rounds.parquet")):
        r = invoke("publish", *[x for n in names for x in ("--run", n)], "--group", group,
                   "--results", res, "--store", s)  # fmt: skip
        assert r.exit_code == 2, r.output
        error = r.output.strip().splitlines()[-1]
        assert error.startswith("Error: shipped store file") and str(s / bad) in error, error
        assert "Traceback" not in r.output and "KeyError" not in r.output


def test_a_truncated_rounds_file_is_named_where_its_rounds_are_read(store, tmp_path):
    res, s, (fedavg_run, _) = store
    truncate(s / "a" / "rounds.parquet")
    r = invoke("publish", "--run", fedavg_run, "--group", "c", "--results", res, "--store", s)
    assert r.exit_code == 0 and "0 run(s) added, 1 already shipped" in r.output, r.output
    with pytest.warns(UserWarning, match=r"a/rounds.parquet is unreadable"):
        runs, rounds = fedbench.load_runs(tmp_path / "empty", shipped=True)
    assert len(runs) == 1 and set(rounds["run_id"]) == set(runs["run_id"])


def test_empty_run_and_group_names_are_refused_before_any_write(store):
    res, s, names = store
    before = sorted(p.relative_to(s) for p in s.rglob("*"))
    for args in (("--run", ""), ("--run", "  "), ("--run", names[0], "--group", "")):
        r = invoke("publish", *args, "--results", res, "--store", s)
        assert r.exit_code == 2 and "Traceback" not in r.output, r.output
        assert len(r.output.strip().splitlines()) == 1, r.output
    assert sorted(p.relative_to(s) for p in s.rglob("*")) == before


def test_a_named_run_skipped_as_damaged_is_said_skipped_not_missing(store, tmp_path):
    import shutil

    res, s, (fedavg_run, fedprox_run) = store
    shutil.copytree(res, tmp_path / "R")  # the module's runs stay whole for the other tests
    res = tmp_path / "R"
    (res / fedprox_run / "rounds.parquet").write_bytes(b"not parquet")
    r = invoke("publish", "--run", fedavg_run, "--run", fedprox_run, "--group", "c",
               "--on-error", "skip", "--results", res, "--store", s)  # fmt: skip
    assert r.exit_code == 0, r.output
    assert "no run" not in r.output and "skipped" in r.output and fedprox_run in r.output


def test_a_store_column_of_another_type_is_one_line_naming_the_file(store, tmp_path):
    import pyarrow as pa

    _, s, _ = store
    res = tmp_path / "R"  # a run the store does not hold yet (seed 1)
    sweep = [x if x != "0" else "1" for x in SWEEP]
    assert invoke(*sweep, "--methods", "fedavg", "--quiet", "--results", res).exit_code == 0
    new = [p.name for p in res.iterdir() if (p / "run.json").is_file()]
    path = s / "a" / "runs.parquet"
    t = pq.read_table(path)
    i = t.column_names.index("seed")
    pq.write_table(t.set_column(i, "seed", pa.array(["zero"] * len(t))), path)
    r = invoke("publish", "--run", new[0], "--group", "a", "--results", res, "--store", s)
    assert r.exit_code == 2 and "Traceback" not in r.output, r.output
    error = r.output.strip().splitlines()[-1]
    assert str(path) in error and "git checkout" in error and "ArrowTypeError" not in error


def _group_of_both(made, tmp_path, monkeypatch):
    """A store whose group g holds both runs (one publish), as FEDBENCH_STORE."""
    res, _, names = made
    s = tmp_path / "S2"
    r = invoke("publish", *[x for n in names for x in ("--run", n)], "--group", "g",
               "--results", res, "--store", s)  # fmt: skip
    assert r.exit_code == 0 and "2 run(s) added" in r.output, r.output
    monkeypatch.setenv(STORE_ENV, str(s))
    monkeypatch.setattr("fedbench.results.shipped_store._DEFAULT", {})
    return s / "g"


def _fewer_rows(path):
    """rounds.parquet less its last row, its footer and publish token kept: it reads."""
    t = pq.read_table(path)
    pq.write_table(t.slice(0, len(t) - 1).replace_schema_metadata(t.schema.metadata), path)


@pytest.mark.parametrize(
    "damage, why",
    [(truncate, "is unreadable"), (_fewer_rows, "has 5 rows where runs.parquet says 6")],
)
def test_a_damaged_rounds_file_makes_its_group_to_run_in_one_line(
    made, tmp_path, monkeypatch, damage, why
):
    """sweep --dry-run counted a shipped run done without reading its group's rounds.parquet:
    now the footer is read once per group, and a damaged group's runs are to run."""
    from fedbench.results.shipped_store import Store

    group = _group_of_both(made, tmp_path, monkeypatch)
    damage(group / "rounds.parquet")
    read = []
    footer = Store._footer_problem
    monkeypatch.setattr(Store, "_footer_problem", lambda s, g: read.append(g) or footer(s, g))
    r = invoke(*SWEEP, "--dry-run", "--results", tmp_path / "empty")
    assert r.exit_code == 0, r.output
    said = [ln for ln in r.output.splitlines() if "rounds.parquet" in ln]
    assert len(said) == 1 and said[0].startswith("rerunning: shipped store file"), r.output
    assert str(group / "rounds.parquet") in said[0] and why in said[0], said
    assert "git checkout --" in said[0]
    assert "0 already done, 2 to run" in r.output and read == ["g"], (r.output, read)
    assert "shipped runs" not in r.output  # none is used


def test_the_sweep_reruns_a_damaged_groups_run_and_a_local_run_stands_in(
    made, tmp_path, monkeypatch
):
    res, _, names = made
    group = _group_of_both(made, tmp_path, monkeypatch)
    truncate(group / "rounds.parquet")
    one = ["--methods", "fedavg", "--quiet", "--results", tmp_path / "new"]
    r = invoke(*SWEEP, *one)
    assert r.exit_code == 0 and "rerunning: shipped store file" in r.output, r.output
    assert [p.name for p in (tmp_path / "new").iterdir() if p.name[0] != "."] == [names[0]]
    r = invoke(*SWEEP, "--dry-run", "--results", res)  # both runs are here, finished
    assert r.exit_code == 0 and "2 already done, 0 to run" in r.output, r.output
    said = [ln for ln in r.output.splitlines() if "rounds.parquet" in ln]
    assert len(said) == 1 and said[0].startswith("note: shipped store file"), r.output
    assert "a local run of it is used" in said[0] and "shipped runs" not in r.output


def test_a_sound_group_is_done_and_its_footer_read_once(made, tmp_path, monkeypatch):
    from fedbench.results.shipped_store import Store

    _group_of_both(made, tmp_path, monkeypatch)
    read = []
    footer = Store._footer_problem
    monkeypatch.setattr(Store, "_footer_problem", lambda s, g: read.append(g) or footer(s, g))
    r = invoke(*SWEEP, "--dry-run", "--results", tmp_path / "empty")
    assert r.exit_code == 0 and "2 already done, 0 to run" in r.output, r.output
    assert read == ["g"] and "rounds.parquet" not in r.output


def test_a_rounds_column_of_another_type_is_named_by_the_sweep(store, tmp_path):
    """round as text in a store group (footer readable): the sweep reruns it, naming it."""
    import pyarrow as pa

    res, s, names = store
    path = s / "a" / "rounds.parquet"
    t = pq.read_table(path)
    i = t.column_names.index("round")
    text = pa.array([str(v) for v in t.column("round").to_pylist()])
    pq.write_table(t.set_column(i, "round", text).replace_schema_metadata(t.schema.metadata), path)
    r = invoke(*SWEEP, "--dry-run", "--results", tmp_path / "empty")
    assert r.exit_code == 0 and "1 already done, 1 to run" in r.output, r.output
    assert f"{path} has a round column of string, not int64" in r.output, r.output


def test_a_runs_column_of_another_type_is_named_by_the_sweep(store, tmp_path):
    """seed as text in runs.parquet left the run out unsaid (its config did not hash)."""
    import pyarrow as pa

    _, s, _ = store
    path = s / "a" / "runs.parquet"
    t = pq.read_table(path)
    i = t.column_names.index("seed")
    seeds = pa.array([str(v) for v in t.column("seed").to_pylist()])
    pq.write_table(t.set_column(i, "seed", seeds).replace_schema_metadata(t.schema.metadata), path)
    r = invoke(*SWEEP, "--dry-run", "--results", tmp_path / "empty")
    assert r.exit_code == 0 and "1 already done, 1 to run" in r.output, r.output
    said = [ln for ln in r.output.splitlines() if "runs.parquet" in ln]
    assert len(said) == 1 and f"{path} has a seed column of string, not int64" in said[0], said


def test_a_damaged_groups_runs_are_not_said_used(store, tmp_path):
    """A paper table looks a missing cell's record up again (find, after finished): the note
    counted the damaged group's run as a shipped run used."""
    from fedbench.results import RunIndex
    from fedbench.results.shipped_store import Store

    _, s, _ = store
    truncate(s / "a" / "rounds.parquet")
    index = RunIndex(tmp_path / "empty", on_error="skip", must_exist=False, shipped=Store(s))
    keys = {rec.group: rec.key for rec in index.records()}
    assert index.finished(keys["a"]) is None and index.find(keys["a"]) is not None
    assert index.finished(keys["b"]) is not None
    assert len(index.problems) == 1 and str(s / "a" / "rounds.parquet") in index.problems[0]
    assert [n for n in index.notes if "shipped runs" in n] == [
        "note: 1 run(s) used here are shipped runs (the store in results/shipped, read-only; "
        "fedbench publish adds to it)"
    ]


def test_fedbench_store_naming_a_file_is_refused_in_one_line(store, tmp_path, monkeypatch):
    _, s, _ = store
    monkeypatch.setenv(STORE_ENV, str(s / "a" / "runs.parquet"))
    for args in (SWEEP + ["--dry-run"], ["table", "stragglers", "--seeds", "0"]):
        r = invoke(*args, "--results", tmp_path / "empty")
        assert r.exit_code == 2, r.output
        assert r.output.strip() == (
            f"Error: {STORE_ENV}={s / 'a' / 'runs.parquet'} is not a folder; set it to the "
            "shipped store's folder (a clone's results/shipped) or to none"
        ), r.output
