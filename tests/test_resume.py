"""A killed run resumes from its checkpoint and ends bit for bit as the run never killed: real
`fedbench train` / `fedbench sweep --stack` processes get SIGKILL at several rounds, are started
again, and their rounds.parquet is compared column by column, as bytes, with an unkilled run's
(every column but the seconds). Paths: the compiled fast path (the default run, logreg), the
torch loop (FEDBENCH_FASTPATH=0, and FedSAM's step-by-step path), an MLP (the window path) and a
stacked sweep (fedbench/training/stack.py)."""

from __future__ import annotations

import json

import pytest
from resume_helpers import (
    assert_same_rounds,
    fedbench_env,
    run_jsons,
    run_to_end,
    signal_at,
)

from fedbench.assembly import build_config
from fedbench.identity import run_id
from fedbench.training import fastpath
from fedbench.training.checkpoint import FILE, Policy
from fedbench.training.runner import train

SHORT = ["--set", "E=4"]  # shorter rounds (the default run's E is 20): the same paths
# (name, train arguments, environment, kill points); the slow ones run in nox's paper session
# (tests/test_checkpoint.py resumes the same paths in-process, in the fast suite)
PATHS = {
    "fast path (logreg)": ([], {}, (4, 13)),
    "torch loop (FEDBENCH_FASTPATH=0)": (SHORT, {"FEDBENCH_FASTPATH": "0"}, (3, 8)),
    "stepwise (fedsam)": (["--method", "fedsam", *SHORT], {}, (3, 8)),
    "mlp window": (["--set", "model=mlp", "--set", "hidden=16", *SHORT], {}, (3, 9)),
}
SLOW = ("stepwise (fedsam)", "mlp window")


def _sets(args: list[str]) -> dict:
    out = {}
    for flag, value in zip(args[::2], args[1::2]):
        if flag == "--set":
            k, v = value.split("=")
            out[k] = v
        else:
            out[flag.lstrip("-")] = value
    return out


@pytest.mark.parametrize(
    "path", [pytest.param(p, marks=[pytest.mark.slow] if p in SLOW else []) for p in PATHS]
)
def test_a_run_killed_at_several_rounds_resumes_to_the_same_records(
    path, tmp_path, one_thread, monkeypatch
):
    args, env_extra, kills = PATHS[path]
    rounds = 20
    killed = tmp_path / "killed"
    cmd = ["train", *args, "--rounds", rounds, "--threads", 1, "--results", killed, "-q"]
    env = fedbench_env(**env_extra)
    for at in kills:
        assert signal_at(cmd, killed, at, env) == -9
        (meta,) = run_jsons(killed).values()
        assert meta["status"] == "running" and meta["checkpoint_round"] >= at
    done = run_to_end(cmd, env)
    assert done.returncode == 0, done.stdout + done.stderr
    (folder,) = [p for p in killed.iterdir() if not p.name.startswith(".")]
    meta = json.loads((folder / "run.json").read_text())
    assert meta["status"] == "complete" and meta["rows"] == rounds + 1
    assert len(meta["resumed"]) == len(kills)
    assert all(r >= at for r, at in zip(meta["resumed"], kills)), meta["resumed"]
    assert not (folder / FILE).exists()  # removed when the run completed
    assert not list((killed / ".claims").glob("*.lock"))

    # the same run, never killed, in this process
    if env_extra.get("FEDBENCH_FASTPATH") == "0":
        monkeypatch.setattr(fastpath, "ENABLED", False)
    cfg = build_config(None, None, {**_sets(args), "rounds": str(rounds)})
    assert run_id(cfg) == folder.name
    train(cfg, tmp_path / "clean", checkpoint=Policy(rounds=0, minutes=0))
    assert_same_rounds(folder, tmp_path / "clean" / folder.name)


def test_a_stacked_sweep_killed_twice_resumes_to_the_same_records(tmp_path, one_thread):
    """`sweep --stack`: three seeds trained as one stack (fedbench/training/stack.py), the sweep
    killed at two points and run again; each run as the same run trained alone."""
    rounds = 16
    killed = tmp_path / "killed"
    cmd = ["sweep", "--seeds", "0,1,2", "--set", f"rounds={rounds}", *SHORT, "--stack"]
    cmd += ["--threads", 1, "--results", killed, "-q"]
    env = fedbench_env(FEDBENCH_FASTPATH="0")
    for at in (3, 9):
        assert signal_at(cmd, killed, at, env) == -9
    done = run_to_end(cmd, env)
    assert done.returncode == 0, done.stdout + done.stderr
    metas = run_jsons(killed)
    assert len(metas) == 3
    assert all(m["status"] == "complete" and m["stack_size"] == 3 for m in metas.values())
    assert any(m.get("resumed") for m in metas.values()), metas
    for seed in (0, 1, 2):
        cfg = build_config(None, None, {"rounds": str(rounds), "seed": str(seed), "E": "4"})
        name = run_id(cfg)
        assert not (killed / name / FILE).exists()
        fastpath_was, fastpath.ENABLED = fastpath.ENABLED, False
        try:
            train(cfg, tmp_path / "alone", checkpoint=Policy(rounds=0, minutes=0))
        finally:
            fastpath.ENABLED = fastpath_was
        assert_same_rounds(killed / name, tmp_path / "alone" / name)
