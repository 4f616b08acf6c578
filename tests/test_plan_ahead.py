"""The engine builds round r+1's plan in a background thread while round r trains
(plan.PlanAhead): the same plan as built on demand, so a run's records do not change."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from conftest import PARTIAL_WORK, tiny_config, tiny_data

from fedbench.training.engine import Engine
from fedbench.training.round_plan import PlanAhead


def _same_plan(a, b):
    for f in dataclasses.fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        assert torch.equal(x, y) if isinstance(x, torch.Tensor) else x == y, f.name


def test_a_plan_built_ahead_is_the_plan_built_on_demand():
    eng = Engine(tiny_config(**PARTIAL_WORK, rounds=5), data=tiny_data())
    built = []
    ahead = PlanAhead(lambda r: built.append(r) or eng.plan_round(r))
    for r in (1, 2, 3):
        _same_plan(ahead.get(r, ahead=True), eng.plan_round(r))
    assert built == [1, 2, 3, 4]  # 2, 3 and 4 each built ahead, once
    _same_plan(ahead.get(2, ahead=False), eng.plan_round(2))  # out of turn: on demand


def test_runs_with_and_without_planning_ahead_give_the_same_records():
    cfg = tiny_config(**PARTIAL_WORK, rounds=4)
    a, b = Engine(cfg, data=tiny_data()), Engine(cfg, data=tiny_data())
    b.plans.get = lambda r, ahead: b.plan_round(r)  # on demand only
    for r in range(1, 5):
        ra, rb = a.run_round(r), b.run_round(r)
        assert {k: v for k, v in ra.items() if "seconds" not in k} == {
            k: v for k, v in rb.items() if "seconds" not in k
        }
        assert torch.equal(a.w, b.w)


def test_a_failed_plan_ahead_raises_where_it_is_asked_for():
    def build(r):
        if r == 2:
            raise ValueError("no plan for round 2")
        return r

    ahead = PlanAhead(build)
    assert ahead.get(1, ahead=True) == 1
    with pytest.raises(ValueError, match="round 2"):
        ahead.get(2, ahead=False)
