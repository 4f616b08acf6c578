"""A plan that must read data to match runs to it says so once, before the wait (a first
`reproduce --dry-run` on a machine read 50 data settings in silence for a minute or more), and
a plan whose fingerprints are remembered says nothing."""

import logging

from conftest import TINY_SETS, invoke, tiny

from fedbench.sweep.todo import READING, plan_sweep


def test_reading_the_data_is_said_once_then_remembered(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache1"))
    r = invoke("train", *TINY_SETS, "--threads", "1", "--results", tmp_path / "res", "--quiet")
    assert r.exit_code == 0, r.output
    configs = [tiny(), tiny()]  # two configs of one data setting: one line, not two
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache2"))  # a machine new to it
    with caplog.at_level(logging.INFO, logger="fedbench"):
        plan = plan_sweep(configs, tmp_path / "res")
    assert len(plan.done) == 2 and caplog.text.count(READING) == 1
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="fedbench"):
        plan = plan_sweep(configs, tmp_path / "res")
    assert len(plan.done) == 2 and READING not in caplog.text
