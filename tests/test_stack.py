"""Stacked runs (fedbench.training.stack): a sweep's runs trained as rows of one engine pass give
exactly the numbers of separate runs, leave the stack cleanly however they end, and group by
stack_key."""

import dataclasses
import json
import threading
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
from click.testing import CliRunner

from fedbench.assembly import build_config
from fedbench.cli import cli
from fedbench.identity import run_id
from fedbench.sweep import InlineExecutor, plan_sweep, run_sweep
from fedbench.sweep.stacking import stack_groups, stack_key
from fedbench.training import fastpath, stack
from fedbench.training.engine import Engine
from fedbench.training.runner import train

# the default run, small: 10 devices, 5 a round, 2 epochs, stragglers (rows of uneven work)
SMALL = {
    "rounds": "3",
    "N": "10",
    "K": "5",
    "local_epochs": "2",
    "stragglers": "0.5",
    "device": "cpu",
}


pytestmark = pytest.mark.usefixtures("one_thread")


def small(seed=0, **sets):
    return build_config("default", None, {**SMALL, "seed": str(seed), **sets})


def numbers(results: Path, cfg) -> pd.DataFrame:
    df = pd.read_parquet(results / run_id(cfg) / "rounds.parquet")
    return df[[c for c in df.columns if "seconds" not in c]]


def meta(results: Path, cfg) -> dict:
    return json.loads((results / run_id(cfg) / "run.json").read_text())


def stacked_sweep(cfgs, results, timeout=120):
    """The inline executor with stacking forced on, in a thread: a deadlock fails the test."""
    out = {}

    def go():
        out["report"] = run_sweep(
            plan_sweep(cfgs, results), results, InlineExecutor(1, True), quiet=True
        )

    t = threading.Thread(target=go, daemon=True)
    t.start()
    t.join(timeout)
    assert not t.is_alive(), "stacked sweep did not finish (deadlock?)"
    return {o.run_id: o for o in out["report"].outcomes}


@pytest.fixture
def merged_calls(monkeypatch):
    """Sizes of the merged train_local calls made (a stack that never merged proves nothing)."""
    sizes = []
    original = stack.Stack._merged

    def spy(self, reqs):
        sizes.append(len(reqs))
        return original(self, reqs)

    monkeypatch.setattr(stack.Stack, "_merged", spy)
    return sizes


@pytest.mark.parametrize("fast", [True, False], ids=["fastpath", "torch-loop"])
def test_stacked_sweep_equals_separate_runs(tmp_path, monkeypatch, merged_calls, fast):
    monkeypatch.setattr(fastpath, "ENABLED", fast)
    cfgs = [small(s) for s in range(3)]
    outs = stacked_sweep(cfgs, tmp_path / "stacked")
    assert {o.status for o in outs.values()} == {"complete"}
    assert max(merged_calls) == 3  # all three runs' rows in one call
    for cfg in cfgs:
        train(cfg, tmp_path / "alone")
        pd.testing.assert_frame_equal(
            numbers(tmp_path / "stacked", cfg), numbers(tmp_path / "alone", cfg), check_exact=True
        )
        assert meta(tmp_path / "stacked", cfg)["stack_size"] == 3
        assert meta(tmp_path / "alone", cfg)["stack_size"] == 1


def test_runs_that_end_early_or_fail_leave_the_stack(tmp_path, monkeypatch, merged_calls):
    """One run ends after one round, one raises in round 2: the others go on, as alone."""
    short, fails, full = small(0, rounds="1"), small(1), small(2)
    run_round = Engine.run_round

    def failing(self, r):
        if self.cfg.seed == 1 and r == 2:
            raise RuntimeError("boom")
        return run_round(self, r)

    monkeypatch.setattr(Engine, "run_round", failing)
    outs = stacked_sweep([short, fails, full], tmp_path / "stacked")
    assert outs[run_id(short)].status == "complete"
    assert outs[run_id(full)].status == "complete"
    assert outs[run_id(fails)].status == "failed" and "boom" in outs[run_id(fails)].error
    assert meta(tmp_path / "stacked", fails)["status"] == "failed"
    assert max(merged_calls) == 3
    for cfg in (short, full):
        train(cfg, tmp_path / "alone")
        pd.testing.assert_frame_equal(
            numbers(tmp_path / "stacked", cfg), numbers(tmp_path / "alone", cfg), check_exact=True
        )


def test_an_error_in_the_merged_call_fails_every_run_of_it(tmp_path, monkeypatch):
    train_local = Engine.train_local

    def failing(self, ctx, plan, start, local, *a):
        if ctx.round == 2:
            raise RuntimeError("merged boom")
        return train_local(self, ctx, plan, start, local, *a)

    monkeypatch.setattr(Engine, "train_local", failing)
    cfgs = [small(s) for s in range(2)]
    outs = stacked_sweep(cfgs, tmp_path / "r")
    for cfg in cfgs:
        assert outs[run_id(cfg)].status == "failed"
        assert "merged boom" in meta(tmp_path / "r", cfg)["error"]


def test_data_arrays_are_concatenated_only_when_they_differ(tmp_path, monkeypatch):
    """Synthetic data depends on the seed (arrays concatenated, batch indices offset); with one
    data_seed the runs share one array. Both merge exactly."""
    offsets = []
    original = stack.Stack._merged_data

    def spy(self, engines):
        data, off = original(self, engines)
        offsets.append(off)
        return data, off

    monkeypatch.setattr(stack.Stack, "_merged_data", spy)
    differ = [small(s) for s in range(2)]
    shared = [small(s, data_seed="0") for s in range(2, 4)]
    stacked_sweep(differ, tmp_path / "a")
    assert offsets[0][0] == 0 and offsets[0][1] > 0
    offsets.clear()
    stacked_sweep(shared, tmp_path / "a")
    assert offsets[0] == [0, 0]
    for cfg in differ + shared:
        train(cfg, tmp_path / "alone")
        pd.testing.assert_frame_equal(
            numbers(tmp_path / "a", cfg), numbers(tmp_path / "alone", cfg), check_exact=True
        )


def test_stack_key_groups_seeds_not_learning_rates_or_models(monkeypatch):
    a, b = small(0), small(1, rho="0.2", rounds="5")
    assert stack_key(a) == stack_key(b)
    assert stack_key(a) != stack_key(small(0, lr="0.02"))
    assert stack_key(a) != stack_key(small(0, model="mlp"))
    assert stack_key(small(0, method="sfl")) is None  # sequential: trains alone
    # a method whose step form depends on its parameters keeps them in the key
    assert stack_key(small(0, method="fedprox", mu="0")) != stack_key(
        small(1, method="fedprox", mu="0.1")
    )
    # SCAFFOLD's eta_g acts on the server side: the step is g + drift either way
    assert stack_key(small(0, method="scaffold")) == stack_key(
        small(1, method="scaffold", eta_g="0.5")
    )
    lr2 = small(2, lr="0.02")
    groups = stack_groups([a, lr2, b], stack=True)
    assert [[c.seed for c in g] for g in groups] == [[0, 1], [2]]
    assert len(stack_groups([small(s) for s in range(5)], True, max_runs=2)) == 3
    assert all(len(g) == 1 for g in stack_groups([a, b], stack=False))
    # default: only where it pays (the torch loop); on CPU the fast path takes logreg's rounds
    monkeypatch.setattr(fastpath, "ENABLED", True)
    assert all(len(g) == 1 for g in stack_groups([a, b], stack=None))
    monkeypatch.setattr(fastpath, "ENABLED", False)
    assert len(stack_groups([a, b], stack=None)) == 1


def test_sweep_cli_stack_and_no_stack(tmp_path):
    sets = [x for k, v in {**SMALL, "rounds": "1"}.items() for x in ("--set", f"{k}={v}")]
    args = ["sweep", "--preset", "default", "--seeds", "0,1", *sets, "--threads", "1", "--quiet"]
    for flag, size in (("--no-stack", 1), ("--stack", 2)):
        res = tmp_path / flag
        r = CliRunner().invoke(cli, [*args, flag, "--results", str(res)], obj={})
        assert r.exit_code == 0, r.output
        for s in (0, 1):
            cfg = dataclasses.replace(small(s), rounds=1)
            assert meta(res, cfg)["stack_size"] == size
        summary = CliRunner().invoke(cli, ["table", "summary", "--results", str(res)], obj={})
        assert summary.exit_code == 0
        assert ("trained in stacks" in summary.output) == (size > 1)
    r = CliRunner().invoke(cli, [*args, "--stack", "--jobs", "2"], obj={})
    assert r.exit_code == 2 and "--stack" in r.output


def fake_plan(k, s, b=10):
    import torch

    return SimpleNamespace(
        k=k, batch_idx=torch.zeros(k, s, b, dtype=torch.long), batch_weight=torch.zeros(k, s, b)
    )


def test_merged_calls_are_cut_by_memory(monkeypatch):
    """Padded to the longest S: 10 rows x 100 steps x 10 x (8 + 4) bytes = 120 kB a plan."""
    monkeypatch.setattr(stack, "MERGE_BYTES", 250_000)
    reqs = [
        stack._Request(None, i, fake_plan(10, s), {}, ("k",))
        for i, s in enumerate([100, 50, 100, 300])
    ]
    parts = stack.Stack(4)._by_memory(reqs)
    assert [[r.ctx for r in p] for p in parts] == [[0, 1], [2], [3]]


def test_barrier_keeps_members_in_step_and_lets_leavers_go(monkeypatch):
    """Idle check-ins and leaving members: every merged call holds one round of each member
    that trains in it, and nobody waits for a member that has left."""

    calls = []

    def fake_merged(self, reqs):
        calls.append(sorted(r.ctx for r in reqs))
        return [r.ctx for r in reqs]

    monkeypatch.setattr(stack.Stack, "_merged", fake_merged)
    s = stack.Stack(3)
    plan = fake_plan(1, 1)
    got = {}

    def member(name, rounds, idle_rounds=()):
        with s.member() as m:
            for r in range(1, rounds + 1):
                if r in idle_rounds:
                    m.idle()
                    continue
                req = stack._Request(None, (r, name), plan, {}, ("k",))
                got[(name, r)] = s._check_in(m, req)

    for _ in range(3):
        s.join()
    threads = [
        threading.Thread(target=member, args=("a", 4, (1, 2))),
        threading.Thread(target=member, args=("b", 4)),
        threading.Thread(target=member, args=("c", 2)),  # leaves after round 2
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert not any(t.is_alive() for t in threads)
    assert calls == [
        [(1, "b"), (1, "c")],
        [(2, "b"), (2, "c")],
        [(3, "a"), (3, "b")],
        [(4, "a"), (4, "b")],
    ]
    assert got[("a", 3)] == (3, "a") and got[("c", 2)] == (2, "c")


@pytest.mark.parametrize("method", ["scaffold", "fedcm", "mimelite"])
def test_rows_with_a_constant_merge_exactly(tmp_path, monkeypatch, merged_calls, method):
    """SCAFFOLD's drift, FedCM's and MimeLite's pull (LinearStep const, per run's rows)."""
    monkeypatch.setattr(fastpath, "ENABLED", False)
    cfgs = [small(s, method=method, rounds="2") for s in range(2)]
    outs = stacked_sweep(cfgs, tmp_path / "stacked")
    assert {o.status for o in outs.values()} == {"complete"} and max(merged_calls) == 2
    for cfg in cfgs:
        train(cfg, tmp_path / "alone")
        pd.testing.assert_frame_equal(
            numbers(tmp_path / "stacked", cfg), numbers(tmp_path / "alone", cfg), check_exact=True
        )
