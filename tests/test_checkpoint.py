"""Checkpoints (fedbench/training/checkpoint.py), in this process: when they are written, what
resumes from them (bit for bit), and what does not (damaged, foreign, linked, hostile files, an
--overwrite), without ever failing the run for it."""

from __future__ import annotations

import json
import logging
import os
import pickle
import signal

import pytest
import torch
from conftest import invoke, tiny
from resume_helpers import assert_same_rounds

from fedbench.errors import FedbenchError
from fedbench.identity import config_hash, run_id
from fedbench.training import signals
from fedbench.training.checkpoint import FILE, MAX_SHARE, Checkpointer, Policy, read_state, sealed
from fedbench.training.runner import train

NEVER = Policy(rounds=0, minutes=0)
EVERY = Policy(rounds=1, minutes=0)


class Stop(Exception):
    pass


def stop_at(r: int):
    def on_round(rec):
        if rec["round"] == r:
            raise Stop()

    return on_round


def clean_run(tmp_path, cfg):
    train(cfg, tmp_path / "clean", checkpoint=NEVER)
    return tmp_path / "clean" / run_id(cfg)


def test_policy_from_the_environment_and_options(monkeypatch):
    assert Policy.from_env() == Policy(rounds=0, minutes=2.0)
    monkeypatch.setenv("FEDBENCH_CHECKPOINT_ROUNDS", "5")
    monkeypatch.setenv("FEDBENCH_CHECKPOINT_MINUTES", "0")
    assert Policy.from_env() == Policy(rounds=5, minutes=0.0)
    assert Policy.from_env(rounds=2, minutes=1.5) == Policy(rounds=2, minutes=1.5)
    monkeypatch.setenv("FEDBENCH_CHECKPOINT_ROUNDS", "often")
    with pytest.raises(FedbenchError, match="FEDBENCH_CHECKPOINT_ROUNDS"):
        Policy.from_env()
    with pytest.raises(FedbenchError):
        Policy(rounds=-1)
    with pytest.raises(FedbenchError):
        Policy(minutes=float("nan"))


def test_the_policy_is_not_part_of_a_runs_identity(monkeypatch):
    before = config_hash(tiny())
    monkeypatch.setenv("FEDBENCH_CHECKPOINT_ROUNDS", "1")
    assert config_hash(tiny()) == before


def test_when_a_checkpoint_is_due(tmp_path, monkeypatch):
    clock = [100.0]
    monkeypatch.setattr("fedbench.training.checkpoint.time.monotonic", lambda: clock[0])
    by_rounds = Checkpointer(tmp_path, Policy(rounds=3, minutes=0), None, None)
    assert [r for r in range(1, 10) if by_rounds.due(r)] == [3, 6, 9]
    by_time = Checkpointer(tmp_path, Policy(rounds=0, minutes=2), None, None)
    clock[0] += 119
    assert not by_time.due(1)
    clock[0] += 1
    assert by_time.due(2)
    # a checkpoint that took 10 s to write: the next waits 10 / MAX_SHARE = 200 s, not 120
    by_time.write_seconds, by_time.last = 10.0, clock[0]
    clock[0] += 120
    assert not by_time.due(3)
    clock[0] += 10 / MAX_SHARE - 120
    assert by_time.due(4)
    assert not Checkpointer(tmp_path, NEVER, None, None).due(1)


# every path a round can take (fedbench.training.engine.ROUND_PATHS) and methods with state
RESUMES = {
    "compiled (logreg)": {},
    "fused (torch loop)": {"fastpath": False},
    "stepwise (fedsam)": {"method": "fedsam"},
    "window (mlp)": {"model": "mlp", "hidden": "8"},
    "scaffold state": {"method": "scaffold"},
    "mimelite state": {"method": "mimelite"},
    "adaptive mu": {"method": "fedprox", "mu": "0.1", "adaptive": "true"},
    "server momentum": {"server_momentum": "0.9"},
    "server adam": {"server_opt": "adam", "server_lr": "0.01"},
    "sequential (sfl)": {"method": "sfl"},
}


@pytest.mark.parametrize("case", list(RESUMES))
def test_a_failed_run_resumes_from_its_checkpoint_to_the_same_records(
    tmp_path, one_thread, case, monkeypatch
):
    from fedbench.training import fastpath

    sets = dict(RESUMES[case])
    if sets.pop("fastpath", True) is False:
        monkeypatch.setattr(fastpath, "ENABLED", False)
    cfg = tiny(rounds="6", **sets)
    with pytest.raises(Stop):
        train(cfg, tmp_path / "r", on_round=stop_at(4), checkpoint=EVERY)
    folder = tmp_path / "r" / run_id(cfg)
    meta = json.loads((folder / "run.json").read_text())
    # round 4 was recorded, but the stop came before its checkpoint: round 3 is kept
    assert meta["status"] == "failed" and meta["checkpoint_round"] == 3 and meta["rows"] == 5
    meta, _ = train(cfg, tmp_path / "r", checkpoint=EVERY)
    assert meta["status"] == "complete" and meta["resumed"] == [3]
    assert not (folder / FILE).exists()
    assert_same_rounds(folder, clean_run(tmp_path, cfg))


def test_a_stop_request_checkpoints_the_round_and_records_interrupted(tmp_path, one_thread):
    cfg = tiny(rounds="6")

    def on_round(rec):
        if rec["round"] == 2:
            signals.request(signal.SIGTERM)  # as the handler of a first SIGTERM does

    try:
        with pytest.raises(signals.Interrupted) as stop:
            train(cfg, tmp_path / "r", on_round=on_round, checkpoint=NEVER)
    finally:
        signals.reset()
    assert signals.exit_code(stop.value) == 143
    folder = tmp_path / "r" / run_id(cfg)
    meta = json.loads((folder / "run.json").read_text())
    assert meta["status"] == "interrupted" and meta["checkpoint_round"] == 2
    assert (folder / FILE).exists() and not list((tmp_path / "r" / ".claims").glob("*.lock"))
    meta, _ = train(cfg, tmp_path / "r", checkpoint=NEVER)
    assert meta["resumed"] == [2] and meta["started"] <= meta["ended"]  # whole seconds
    assert_same_rounds(folder, clean_run(tmp_path, cfg))


def _interrupted(tmp_path, cfg):
    with pytest.raises(Stop):
        train(cfg, tmp_path / "r", on_round=stop_at(3), checkpoint=EVERY)
    return tmp_path / "r" / run_id(cfg)


def _garbage(folder, tmp_path):
    (folder / FILE).write_bytes(b"not a checkpoint")


def _foreign(folder, tmp_path):
    other = tiny(rounds="6", seed="1")
    with pytest.raises(Stop):
        train(other, tmp_path / "o", on_round=stop_at(3), checkpoint=EVERY)
    os.replace(tmp_path / "o" / run_id(other) / FILE, folder / FILE)


def _link(folder, tmp_path):
    outside = tmp_path / "outside.pt"
    os.replace(folder / FILE, outside)
    (folder / FILE).symlink_to(outside)


class Payload:
    """Unpickling it would create a file: a weights-only load must refuse it."""

    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return (open, (self.path, "w"))


def _hostile(folder, tmp_path):
    with open(folder / FILE, "wb") as f:
        pickle.dump({"format": 1, "payload": Payload(tmp_path / "pwned")}, f)


def _rewritten(folder, change, keep_hash: bool):
    """The checkpoint with `change` made to its state (its SHA-256 kept, or made anew)."""
    outer = torch.load(folder / FILE, weights_only=True)
    state = read_state(folder / FILE)
    change(state)
    new = sealed(state)
    if keep_hash:
        new["sha256"] = outer["sha256"]
    torch.save(new, folder / FILE)


def _rows_edited(folder, tmp_path):  # records changed after writing: the hash says so
    _rewritten(folder, lambda s: s["rows"][-1].update(test_acc=0.99), keep_hash=True)


def _nan_weights(folder, tmp_path):  # a well-formed file whose model is not finite
    _rewritten(folder, lambda s: s["w"].__setitem__(0, float("nan")), keep_hash=False)


def _nan_method_state(folder, tmp_path):  # FedSoftMax's running minimum with a NaN in it
    _rewritten(folder, lambda s: s["method"]["min_seen"].__setitem__(0, float("nan")), False)


def _minus_inf_method_state(folder, tmp_path):  # an inf the state never starts from
    _rewritten(folder, lambda s: s["method"]["min_seen"].__setitem__(0, -float("inf")), False)


def _format_1(folder, tmp_path):  # an older fedbench's checkpoint: the state itself, unhashed
    torch.save({**read_state(folder / FILE), "format": 1}, folder / FILE)


@pytest.mark.filterwarnings("ignore:Detected pickle protocol")  # the hostile file's own pickle
@pytest.mark.parametrize(
    "damage",
    [
        _garbage,
        _foreign,
        _link,
        _hostile,
        _rows_edited,
        _nan_weights,
        _format_1,
        _nan_method_state,
        _minus_inf_method_state,
    ],
)
def test_a_checkpoint_that_cannot_be_resumed_starts_the_run_afresh(
    tmp_path, one_thread, damage, caplog
):
    method_state = damage in (_nan_method_state, _minus_inf_method_state)
    cfg = tiny(rounds="6", method="fedsoftmax") if method_state else tiny(rounds="6")
    folder = _interrupted(tmp_path, cfg)
    damage(folder, tmp_path)
    with caplog.at_level(logging.WARNING, logger="fedbench"):
        meta, _ = train(cfg, tmp_path / "r", checkpoint=NEVER)
    assert meta["status"] == "complete" and "resumed" not in meta
    assert "not resumed" in caplog.text and "round 0" in caplog.text
    assert not (folder / FILE).exists() and not (tmp_path / "pwned").exists()
    if damage is _link:
        assert (tmp_path / "outside.pt").stat().st_size > 0  # the link's target is untouched
    assert_same_rounds(folder, clean_run(tmp_path, cfg))


def test_overwrite_never_resumes(tmp_path, one_thread):
    cfg = tiny(rounds="6")
    folder = _interrupted(tmp_path, cfg)
    meta, _ = train(cfg, tmp_path / "r", overwrite=True, checkpoint=NEVER)
    assert meta["status"] == "complete" and "resumed" not in meta
    assert not (folder / FILE).exists()


def test_records_a_weights_only_load_would_refuse_mean_no_checkpoint(tmp_path, caplog, monkeypatch):
    import numpy as np

    from fedbench.training.engine import Engine

    run_round = Engine.run_round

    def numpy_record(self, r):
        rec = run_round(self, r)
        # a numpy scalar in a declared column: not a plain Python value
        rec["round_seconds"] = np.float64(rec["round_seconds"])
        return rec

    monkeypatch.setattr(Engine, "run_round", numpy_record)
    with caplog.at_level(logging.WARNING, logger="fedbench"):
        meta, _ = train(tiny(rounds="3"), tmp_path, checkpoint=EVERY)
    assert meta["status"] == "complete"
    assert "no checkpoint (a record holds a float64)" in caplog.text


def test_checkpoint_options_are_checked(tmp_path):
    r = invoke("train", "--checkpoint-rounds", "-1", "--results", tmp_path)
    assert r.exit_code == 2 and "--checkpoint-rounds" in r.output
    r = invoke("train", "--checkpoint-minutes", "nan", "--results", tmp_path)
    assert r.exit_code == 2 and "--checkpoint-minutes" in r.output


def test_a_checkpoint_holds_the_models_of_its_round(tmp_path, one_thread):
    """The checkpoint after round 2 holds the global model a 2-round run ends with."""
    with pytest.raises(Stop):
        train(tiny(rounds="5"), tmp_path / "r", on_round=stop_at(3), checkpoint=EVERY)
    state = read_state(tmp_path / "r" / run_id(tiny(rounds="5")) / FILE)
    assert state["round"] == 2 and len(state["rows"]) == 3
    from fedbench.training.engine import Engine

    eng = Engine(tiny(rounds="2"))
    for r in (1, 2):
        eng.run_round(r)
    assert torch.equal(state["w"], eng.w)


def test_a_checkpoint_folder_is_refused_and_the_run_starts_from_round_0(
    tmp_path, one_thread, caplog
):
    cfg = tiny(rounds="6")
    folder = _interrupted(tmp_path, cfg)
    (folder / FILE).unlink()
    (folder / FILE).mkdir()
    with caplog.at_level(logging.WARNING, logger="fedbench"):
        meta, _ = train(cfg, tmp_path / "r", checkpoint=EVERY)
    assert meta["status"] == "complete" and "resumed" not in meta
    assert "a folder, not a checkpoint file; delete it" in caplog.text and "round 0" in caplog.text
    assert (folder / FILE).is_dir()  # not ours to delete
    assert_same_rounds(folder, clean_run(tmp_path, cfg))


@pytest.mark.parametrize("error", [RuntimeError("PytorchStreamWriter failed writing file"),
                                   OSError(28, "No space left on device")])  # fmt: skip
def test_a_checkpoint_that_cannot_be_written_is_a_warning(tmp_path, one_thread, caplog,
                                                          monkeypatch, error):  # fmt: skip
    def full(obj, f, *a, **k):
        raise error

    monkeypatch.setattr("fedbench.training.checkpoint.torch.save", full)
    with caplog.at_level(logging.WARNING, logger="fedbench"):
        meta, _ = train(tiny(rounds="3"), tmp_path, checkpoint=EVERY)
    assert meta["status"] == "complete"
    assert "no checkpoint of round 1" in caplog.text and "Traceback" not in caplog.text
    assert not list(tmp_path.rglob(".checkpoint.pt*"))


@pytest.mark.parametrize("fstar", ["zero", "min_seen"])
def test_a_state_that_starts_at_inf_resumes(tmp_path, one_thread, fstar):
    """FedSoftMax's running minimum of each device's loss is +inf until the device is seen (3
    of 6 a round here): a checkpoint holding it resumes, bit for bit (it was refused as "not
    finite", so every interrupted FedSoftMax run started again from round 0)."""
    cfg = tiny(rounds="6", method="fedsoftmax", fstar=fstar)
    folder = _interrupted(tmp_path, cfg)
    unseen = read_state(folder / FILE)["method"]["min_seen"]
    assert bool(unseen.isinf().any())
    meta, _ = train(cfg, tmp_path / "r", checkpoint=NEVER)
    assert meta["status"] == "complete" and meta["resumed"]
    assert_same_rounds(folder, clean_run(tmp_path, cfg))
