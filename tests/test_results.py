"""Records on disk: Parquet round trip, determinism, refusing reruns, corrupt files."""

import json

import pandas as pd
import pytest

from fedbench.assembly import build_config
from fedbench.errors import FedbenchError
from fedbench.identity import config_hash, run_id
from fedbench.results import load_summaries, read_run, summarize
from fedbench.training.runner import train

TIMING = ["round_seconds", "cum_seconds", "eval_seconds"]


def small_cfg(**over):
    o = {"rounds": "3", "N": "6", "K": "3", "E": "2", "device": "cpu"}
    o.update(over)
    return build_config(None, None, o)


def test_parquet_round_trip_and_run_json(tmp_path):
    cfg = small_cfg()
    meta, df = train(cfg, tmp_path)
    run_dir = tmp_path / run_id(cfg)
    back = pd.read_parquet(run_dir / "rounds.parquet")
    pd.testing.assert_frame_equal(back, df)
    assert list(back["round"]) == [0, 1, 2, 3]
    assert back["clients"].iloc[1].tolist() and len(back["clients"].iloc[1]) == 3
    j = json.loads((run_dir / "run.json").read_text())
    assert j["status"] == "complete" and j["config"]["rounds"] == 3
    assert j["config_hash"] == config_hash(cfg) and j["torch_version"] and j["device"] == "cpu"
    assert j["summary"]["rounds_run"] == 3
    part = pd.read_parquet(run_dir / "partition.parquet")
    assert part["client"].nunique() == 6


def test_same_seed_same_numbers(tmp_path):
    cfg = small_cfg()
    _, a = train(cfg, tmp_path / "a")
    _, b = train(cfg, tmp_path / "b")
    pd.testing.assert_frame_equal(a.drop(columns=TIMING), b.drop(columns=TIMING))
    _, c = train(small_cfg(seed="1"), tmp_path / "c")
    assert not a["test_loss"].equals(c["test_loss"])


def test_refuses_rerun_unless_overwrite(tmp_path):
    cfg = small_cfg(rounds="1")
    train(cfg, tmp_path)
    with pytest.raises(FedbenchError, match="--overwrite"):
        train(cfg, tmp_path)
    train(cfg, tmp_path, overwrite=True)


def test_stop_at_target_ends_the_run_at_the_first_hit(tmp_path):
    cfg = small_cfg(rounds="8")
    _, full = train(cfg, tmp_path / "full")
    target = float(full["test_acc"].iloc[2])  # reached by round 2 at the latest
    hit = int(full.loc[full["test_acc"] >= target, "round"].iloc[0])
    assert 1 <= hit < 8
    stop = small_cfg(rounds="8", target_acc=str(target), stop_at_target="true")
    meta, df = train(stop, tmp_path / "stop")
    assert meta["status"] == "complete" and meta["stopped_at_target"] == hit
    assert list(df["round"]) == list(range(hit + 1))
    assert meta["summary"]["rounds_to_target"] == hit
    pd.testing.assert_frame_equal(
        df.drop(columns=[*TIMING, "run_id"]),  # two configs: two run ids
        full.drop(columns=[*TIMING, "run_id"]).iloc[: hit + 1],
    )


def test_summary_rounds_and_seconds_to_target():
    df = pd.DataFrame(
        {
            "round": [0, 1, 2, 3],
            "test_acc": [0.1, 0.5, 0.7, 0.8],
            "round_seconds": [0.0, 2.0, 2.0, 4.0],
            "cum_seconds": [0.0, 2.0, 4.0, 8.0],
        }
    )
    s = summarize(df, 0.65)
    assert s["rounds_to_target"] == 2 and s["seconds_to_target"] == 4.0
    assert s["best_acc"] == 0.8 and s["mean_round_seconds"] == pytest.approx(8 / 3)
    assert summarize(df, 0.9)["rounds_to_target"] is None


def test_corrupt_parquet_is_named(tmp_path):
    cfg = small_cfg(rounds="1")
    train(cfg, tmp_path)
    path = tmp_path / run_id(cfg) / "rounds.parquet"
    path.write_bytes(path.read_bytes()[:50])
    with pytest.raises(FedbenchError) as e:
        read_run(tmp_path / run_id(cfg))
    assert str(path) in str(e.value) and "\n" not in str(e.value)
    df, problems = load_summaries(tmp_path, on_error="skip")
    assert df.empty and len(problems) == 1


def test_atomic_writes_leave_no_temp_file_and_readable_permissions(tmp_path):
    import os
    import stat

    from fedbench.atomic import atomic_write_json

    path = tmp_path / "r" / "run.json"
    atomic_write_json(path, {"a": 1})
    assert json.loads(path.read_text()) == {"a": 1}
    assert [p.name for p in path.parent.iterdir()] == ["run.json"]
    mask = os.umask(0)
    os.umask(mask)
    # what a plain open() gives (results shared by a cluster stay readable), not mkstemp's 0600
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~mask
