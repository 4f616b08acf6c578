"""The Python API: `fedbench.train` (a config or preset + overrides -> run.json and rounds,
a finished run returned as stored) and `fedbench.load_runs` (a results folder as a runs and a
rounds DataFrame); `import fedbench` stays light."""

import subprocess
import sys

import pandas as pd
import pytest

import fedbench
from fedbench.config import RunConfig
from fedbench.errors import FedbenchError
from fedbench.testing import registries_restored, write_fake_run

FAST = dict(preset="default", rounds=2, N=6, K=3, E=2, threads=1)


def test_importing_fedbench_loads_nothing_heavy():
    out = subprocess.run(
        [sys.executable, "-c", "import sys, fedbench; print(' '.join(sys.modules))"],
        capture_output=True,
        text=True,
        check=True,
    )
    loaded = set(out.stdout.split())
    assert not {"torch", "pandas", "numpy", "fedbench.api", "fedbench.config"} & loaded


def test_train_returns_the_records_and_then_the_stored_run(tmp_path):
    meta, rounds = fedbench.train(results=tmp_path, **FAST)
    assert meta["status"] == "complete" and meta["config"]["num_clients"] == 6
    assert list(rounds["round"]) == [0, 1, 2]
    again, stored = fedbench.train(results=tmp_path, **FAST)  # already done: not rerun
    assert again["run_id"] == meta["run_id"] and again["started"] == meta["started"]
    assert list(stored["test_acc"]) == list(rounds["test_acc"])
    assert len(list(tmp_path.glob("fedavg-*"))) == 1
    cfg = RunConfig(**{**meta["config"], "method": "fedprox", "method_params": {"mu": 0.5}})
    meta2, _ = fedbench.train(cfg, results=tmp_path, threads=1)
    assert meta2["config"]["method_params"] == {"mu": 0.5}
    with pytest.raises(FedbenchError, match="unknown method 'nosuch'"):
        fedbench.train(results=tmp_path, method="nosuch", **FAST)


def test_train_a_plugin_method(tmp_path):
    from pathlib import Path

    example = Path(__file__).resolve().parents[1] / "examples" / "fedavg_l1" / "fedavg_l1.py"
    with registries_restored():
        meta, _ = fedbench.train(results=tmp_path, plugins=[example], method="fedavg_l1",
                                 lam=0.05, **FAST)  # fmt: skip
    assert meta["config"]["method_params"] == {"lam": 0.05}
    assert meta["plugins"][0]["path"] == str(example)


def test_load_runs_reads_methods_and_datasets_in_one_call(tmp_path):
    runs = [
        RunConfig(rounds=3),
        RunConfig(rounds=4, method="scaffold"),
        RunConfig(rounds=2, method="sfl", local_steps=2),
        RunConfig(
            rounds=3,
            method="fedprox",
            method_params={"mu": 0.1},
            dataset="fmnist",
            partition="pclass",
        ),  # fmt: skip
    ]
    for cfg in runs:
        write_fake_run(tmp_path, cfg)
    runs_df, rounds = fedbench.load_runs(tmp_path, shipped=False)
    assert len(runs_df) == 4 and set(runs_df["method"]) == {"fedavg", "scaffold", "sfl", "fedprox"}
    assert {"config_hash", "status", "lr", "param.mu", "best_acc", "data_fingerprint"} <= set(
        runs_df.columns
    )
    assert list(rounds.columns[:2]) == ["run_id", "round"] and len(rounds) == 4 + 5 + 3 + 4
    merged = rounds.merge(runs_df[["run_id", "method"]], on="run_id")
    assert merged.groupby("method").size().to_dict() == {"fedavg": 4, "scaffold": 5, "sfl": 3,
                                                         "fedprox": 4}  # fmt: skip
    only, _ = fedbench.load_runs(tmp_path, dataset="fmnist", where={"mu": 0.1})
    assert list(only["method"]) == ["fedprox"]
    empty, none = fedbench.load_runs(tmp_path / "nothing")
    assert isinstance(empty, pd.DataFrame) and empty.empty and none.empty
    with pytest.raises(FedbenchError, match="does not exist"):
        fedbench.load_runs(tmp_path / "nothing", shipped=False)


def test_load_runs_needs_no_torch(tmp_path):
    write_fake_run(tmp_path, RunConfig(rounds=2))
    code = (
        f"import sys, fedbench\nruns, rounds = fedbench.load_runs({str(tmp_path)!r})\n"
        "assert len(runs) == 1 and len(rounds) == 3\nprint('torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "False", out.stdout + out.stderr


# ------------------------------------------------ folders the CLI wrote, and the shipped store

TINY_SETS = ["--set", "N=6", "--set", "K=3", "--set", "local_steps=2", "--set", "eval_train=false"]


def _cli(*args):
    from conftest import invoke

    r = invoke(*args, "--threads", "1")
    assert r.exit_code == 0, r.output
    return r


def test_load_runs_reads_what_train_and_sweep_wrote(tmp_path, one_thread):
    """rounds.parquet written by the CLI holds run_id already (it crashed load_runs)."""
    res = tmp_path / "r"
    _cli("train", "--preset", "default", "--rounds", "2", *TINY_SETS, "--results", res)
    _cli("sweep", "--methods", "fedavg,fedprox", "--grid", "mu=0,1", "--seeds", "1",
         "--set", "rounds=2", *TINY_SETS, "--results", res, "--quiet")  # fmt: skip
    runs, rounds = fedbench.load_runs(res, shipped=False)
    assert len(runs) == 4 and set(runs["source"]) == {"results"}
    assert (
        list(rounds.columns[:2]) == ["run_id", "round"]
        and list(rounds.columns).count("run_id") == 1
    )
    assert rounds.groupby("run_id").size().to_dict() == dict.fromkeys(runs["run_id"], 3)
    only, _ = fedbench.load_runs(res, shipped=False, method="fedprox", where={"mu": 1})
    assert len(only) == 1 and only["param.mu"].iloc[0] == 1


def test_load_runs_reads_the_shipped_store(monkeypatch):
    from pathlib import Path

    from fedbench.results.shipped_store import _DEFAULT, default_store

    shipped = Path(__file__).resolve().parents[1] / "results" / "shipped"
    monkeypatch.setenv("FEDBENCH_STORE", str(shipped))
    monkeypatch.setattr("fedbench.results.shipped_store._DEFAULT", {**_DEFAULT})
    shipped_ids = {row["run_id"] for _, row in default_store().rows()}
    assert shipped_ids, "no shipped store in this tree"
    runs, rounds = fedbench.load_runs("no-such-folder", shipped=True)
    assert set(runs["source"]) == {"shipped"} and set(runs["run_id"]) <= shipped_ids
    assert len(runs) > 100 and set(rounds["run_id"]) == set(runs["run_id"])
    assert list(rounds.columns).count("run_id") == 1


@pytest.mark.parametrize(
    "kwargs, says",
    [
        (dict(shipped="no"), "shipped must be True or False"),
        (dict(on_error="ignore"), "on_error must be 'skip' or 'fail'"),
        (dict(where="s=1"), "where must be a list"),
        (dict(plugins="mine.py"), "plugins must be a list"),
        (dict(where={"nosuch": 1}), "nosuch is not a config field"),
        (dict(method=5), "method must be a name or None"),
    ],
)
def test_load_runs_refuses_bad_arguments_as_the_cli_does(tmp_path, kwargs, says):
    with pytest.raises(FedbenchError, match=says):
        fedbench.load_runs(tmp_path, **kwargs)


@pytest.mark.parametrize(
    "kwargs, says",
    [
        (dict(overwrite="no"), "overwrite must be True or False"),
        (dict(threads=0), "threads must be a whole number"),
        (dict(nosuchfield=1), "unknown key 'nosuchfield'"),
    ],
)
def test_train_refuses_bad_arguments_before_running(tmp_path, kwargs, says):
    args = {**FAST, **kwargs}
    with pytest.raises(FedbenchError, match=says):
        fedbench.train(results=tmp_path, **args)
    assert not list(tmp_path.iterdir())


def test_load_runs_of_a_table_are_the_runs_fedbench_table_uses(tmp_path):
    """Issue 32 item 5: the API selects a paper table's runs with the CLI's selection code
    (fedbench.tables.selection), from folders the CLI's own run writer makes."""
    from fedbench.identity import run_id
    from fedbench.sweep import table_configs
    from fedbench.tables import get_table
    from fedbench.tables.selection import make_selection

    sel = make_selection("synthetic-iid", None, None, (), tmp_path)
    configs, _ = table_configs(get_table("dissimilarity"), sel)
    for cfg in configs[:3]:
        write_fake_run(tmp_path, cfg)
    other = RunConfig(dataset="synthetic", seed=77)  # a run no table cell names
    write_fake_run(tmp_path, other)
    runs_df, _ = fedbench.load_runs(
        tmp_path, shipped=False, table="dissimilarity", dataset="synthetic-iid"
    )
    assert sorted(runs_df["run_id"]) == sorted(run_id(c) for c in configs[:3])
    with pytest.raises(FedbenchError, match="table dissimilarity has no dataset 'mnist'"):
        fedbench.load_runs(tmp_path, shipped=False, table="dissimilarity", dataset="mnist")
