"""The expected time against the measured one (issue 33): every shipped run estimated from the
other shipped runs, leaving it out (benchmarks/estimate_accuracy.py prints the same). What
spreads single runs is the load each ran under, which the records do not carry; the typical
run and the typical table are within 30 %."""

from __future__ import annotations

from pathlib import Path

import pytest

from fedbench.sweep import accuracy

STORE = Path(__file__).resolve().parents[1] / "results" / "shipped"


@pytest.fixture(scope="module")
def checks():
    import tempfile

    from fedbench.results import RunIndex
    from fedbench.results.shipped_store import Store

    root = STORE
    if not root.is_dir():
        pytest.skip("no shipped store in this tree")
    index = RunIndex(tempfile.mkdtemp(), on_error="skip", must_exist=False, shipped=Store(root))
    return accuracy.leave_one_out(index.records())


def test_a_shipped_kind_of_run_is_estimated_within_30_percent(checks):
    same = [c for c in checks if c.how == "here"]  # its setting has other runs on this device
    assert len(same) > 500
    runs = accuracy.spread([c.ratio for c in same])
    assert abs(runs["median"] - 1) <= accuracy.WITHIN, accuracy.spread_text(runs)
    assert runs["within"] >= 0.5, accuracy.spread_text(runs)
    tables = accuracy.spread(list(accuracy.by_group(same).values()))
    assert abs(tables["median"] - 1) <= accuracy.WITHIN, accuracy.spread_text(tables)
    assert tables["within"] >= 0.5, accuracy.spread_text(tables)


def test_the_benchmark_prints_the_spread(capsys, monkeypatch):
    import importlib.util

    path = STORE.parents[1] / "benchmarks" / "estimate_accuracy.py"
    spec = importlib.util.spec_from_file_location("estimate_accuracy", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    monkeypatch.setenv("FEDBENCH_STORE", str(STORE))
    assert bench.main(["--min-seconds", "30"]) == 0
    out = capsys.readouterr().out
    assert "every run: n " in out and "median " in out and "per group" in out
