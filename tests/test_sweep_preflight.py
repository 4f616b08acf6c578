"""A sweep checks what it needs before planning (issue 24): every dataset once (here, or
downloaded once), with one line naming the folders searched, the layout and how to get it;
and its plan says which preset a bare --dataset picked and what the runs will cost."""

import json
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from fedbench.cli import cli
from fedbench.data.registry import DATASETS
from fedbench.errors import FedbenchError
from fedbench.sweep import estimate

CIFAR100_LINE = ["sweep", "--methods", "fedavg,fedprox,fedlga", "--dataset", "cifar100"]


@pytest.fixture
def no_cifar(tmp_path, monkeypatch):
    """A machine without CIFAR-100: cwd, cache and FEDBENCH_DATA all empty folders."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("FEDBENCH_DATA", str(tmp_path / "data"))
    (tmp_path / "data").mkdir()
    return tmp_path


def invoke(args, cwd: Path):
    before = sorted(cwd.rglob("*"))
    r = CliRunner().invoke(cli, [str(a) for a in args], obj={})
    return r, before, sorted(cwd.rglob("*"))


@pytest.fixture(autouse=True)
def quiet_machine(monkeypatch):
    """Estimates at a quiet machine's rates: the test machine's load does not scale them."""
    monkeypatch.setattr("fedbench.sweep.rates.load_factor", lambda: (1.0, "", ""))


def test_the_cifar100_line_exits_2_before_writing_anything(no_cifar, monkeypatch):
    monkeypatch.setenv("FEDBENCH_NO_DOWNLOAD", "1")
    results = no_cifar / "results"
    for dry in ([], ["--dry-run"]):
        r, before, after = invoke([*CIFAR100_LINE, *dry, "--results", results], no_cifar)
        assert r.exit_code == 2, r.output
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1, r.stderr
        line = lines[0]
        assert line.startswith("Error: cifar100 not found (looked in ")
        assert "$FEDBENCH_DATA/cifar-100-python" in line  # the folders searched
        assert "expected cifar-100-python/{train,test}" in line  # the layout
        assert "fedbench data get cifar100" in line and "--data-dir" in line  # how to get it
        assert "FEDBENCH_MIRROR" in line and "downloads are off (FEDBENCH_NO_DOWNLOAD)" in line
        assert after == before and not results.exists()
        assert r.stdout == ""


def test_a_sweep_downloads_a_missing_dataset_once(no_cifar, monkeypatch):
    """Three runs of one dataset: one download attempt (it fails here), then exit 2 naming it;
    today: three attempts and three failed run folders."""
    monkeypatch.delenv("FEDBENCH_NO_DOWNLOAD", raising=False)
    calls = []

    def offline(name, *a, **k):
        calls.append(name)
        raise FedbenchError(f"cannot download {name}: URL (Name or service not known); check it")

    monkeypatch.setattr("fedbench.data.download.fetch", offline)
    results = no_cifar / "results"
    r, before, after = invoke([*CIFAR100_LINE, "--results", results], no_cifar)
    assert r.exit_code == 2, r.output
    assert calls == ["cifar100"]
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("Error: cifar100 not found (looked in ")
    assert last.endswith(
        "[downloading it failed: cannot download cifar100: URL (Name or service not known)]"
    )
    assert not results.exists()
    # a dry run downloads nothing: it says the sweep will, and lists the plan
    r, _, _ = invoke([*CIFAR100_LINE, "--dry-run", "--results", results], no_cifar)
    assert r.exit_code == 0 and calls == ["cifar100"], r.output
    assert "cifar100 not found (looked in " in r.stderr and "the sweep downloads it" in r.stderr
    assert "3 to run" in r.stdout and not results.exists()


def test_a_downloaded_dataset_is_then_used(no_cifar, monkeypatch):
    """The download (faked: it writes the folder) happens before planning, once."""
    monkeypatch.delenv("FEDBENCH_NO_DOWNLOAD", raising=False)
    calls = []

    def fake_fetch(name, *a, **k):
        calls.append(name)
        d = no_cifar / "cache" / "fedbench" / "cifar-100-python"
        d.mkdir(parents=True)
        for f in ("train", "test"):
            (d / f).write_bytes(b"")
        return d, True

    monkeypatch.setattr("fedbench.data.download.fetch", fake_fetch)
    r, _, _ = invoke([*CIFAR100_LINE, "--dry-run", "--results", no_cifar / "r"], no_cifar)
    assert r.exit_code == 0 and calls == [], r.output  # a dry run never downloads
    from fedbench.resources import missing_data
    from fedbench.sweep import grid_configs

    configs = grid_configs(methods=["fedavg", "fedprox"], dataset="cifar100")
    assert missing_data(configs, download=True) == ([], [])
    assert calls == ["cifar100"]
    assert missing_data(configs, download=True) == ([], [])  # found now: no second download
    assert calls == ["cifar100"]


def test_every_dataset_with_files_can_be_looked_for():
    """Each registered dataset either is generated (no files) or says where it looked."""
    generated = {"synthetic", "quadratic"}
    for name, spec in DATASETS.items():
        assert (spec.locate is None) == (name in generated), name
        assert spec.shape is not None or name == "quadratic", name


def test_leaf_data_is_not_downloadable_and_says_how_to_build_it(no_cifar):
    r, _, _ = invoke(
        ["sweep", "--dataset", "femnist", "--dry-run", "--results", no_cifar / "r"], no_cifar
    )
    assert r.exit_code == 2
    line = r.stderr.strip()
    assert "femnist not found (looked in " in line and "femnist/train/*.json" in line
    assert "fedbench data get femnist" in line and line.endswith("[not downloadable]")


# ---------------------------------------------------------------- the plan's header


def test_the_plan_names_the_preset_a_bare_dataset_picks(tmp_path, monkeypatch):
    monkeypatch.setenv("FEDBENCH_DATA", "/nonexistent")
    r = CliRunner().invoke(
        cli,
        ["sweep", "--dataset", "synthetic", "--dry-run", "--results", str(tmp_path / "r")],
        obj={},
    )
    assert r.exit_code == 0, r.output
    assert "preset: default (what --dataset synthetic starts from; --preset names another)" in (
        r.stdout
    )
    assert (
        "compute: 1 runs, 50 rounds (~1.5e+10 FLOP): 1 runs x 50 rounds of logreg (D 610) on"
        in (r.stdout)
    )
    # no store here (conftest): nothing comparable anywhere
    assert "expected time: unknown (no finished run comparable to these settings on any" in (
        r.stdout
    )


def _finished_run(results: Path, cfg, seconds: float, device: str, stack: int = 1) -> None:
    from fedbench.testing import write_fake_run

    meta_path = write_fake_run(results, cfg, device_name=device) / "run.json"
    meta = json.loads(meta_path.read_text())
    start = datetime(2026, 1, 1)
    end = start + timedelta(seconds=seconds)
    meta.update(started=start.isoformat(), ended=end.isoformat(), stack_size=stack)
    meta_path.write_text(json.dumps(meta))


def _at_threads(device: str, n: int) -> str:
    """'cpu (Intel(R) Xeon(R) Processor, x86_64, AVX512)' with ', n threads' before its last
    parenthesis (not after every one: CPU names hold their own)."""
    return f"{device[:-1]}, {n} threads)"


def test_the_expected_time_comes_from_finished_runs_on_this_cpu(tmp_path):
    from fedbench.assembly import build_config

    here = estimate.this_device(build_config("default"))
    res = tmp_path / "r"
    runs = [build_config("default", None, {"seed": s}) for s in range(6)]
    # 50 rounds: 10 s and 30 s wall -> 0.2 and 0.6 s a round; median 0.4
    _finished_run(res, runs[0], 10, _at_threads(here, 1))
    _finished_run(res, runs[1], 30, _at_threads(here, 4))
    _finished_run(res, runs[2], 999, "cpu (Other CPU, x86_64, AVX2, 1 threads)")  # not here
    _finished_run(res, runs[3], 60, _at_threads(here, 1), stack=6)  # 0.2 s a round
    todo = runs[4:] + [build_config("default", None, {"seed": 9, "method": "fedprox"})]
    line = estimate.time_line(todo[:2], res, jobs=1, shipped=False)
    median = sorted([0.2, 0.6, 0.2])[1]
    assert line.startswith(f"expected time: {2 * 50 * median:.0f} s on {here}")
    assert "rates of 3 finished runs in " in line
    assert line.endswith("2 from runs of the same settings on this device")
    # FedProx never ran here: FedAvg's rate scaled by the FLOPs of a round (the same here)
    line = estimate.time_line(todo, res, jobs=2, shipped=False)
    assert line.startswith(f"expected time: {3 * 50 * median / 2:.0f} s on {here}")
    assert "1 from like settings (same dataset and model) scaled by FLOPs a round" in line


def test_a_setting_run_only_elsewhere_is_scaled_by_the_devices_ratio(tmp_path):
    from fedbench.assembly import build_config

    here = estimate.this_device(build_config("default"))
    other = "cpu (Other CPU, x86_64, AVX2)"
    res = tmp_path / "r"
    runs = [build_config("default", None, {"seed": s}) for s in range(3)]
    wide = [build_config("default", None, {"seed": s, "K": 20}) for s in range(3)]
    _finished_run(res, runs[0], 10, here)  # 0.2 s a round here, 0.4 s there: factor 0.5
    _finished_run(res, runs[1], 20, other)
    _finished_run(res, wide[0], 100, other)  # K 20 only there: 2 s a round -> 1 s here
    line = estimate.time_line([wide[1]], res, jobs=1, shipped=False)
    assert line.startswith(f"expected time: 50 s on {here}"), line
    assert f"the same settings on {other} scaled by the devices' ratio" in line


def test_nothing_comparable_is_unknown_and_says_so(tmp_path):
    from fedbench.assembly import build_config

    cfg = build_config("default")
    line = estimate.time_line([cfg], tmp_path / "none", jobs=1, shipped=False)
    assert line.startswith("expected time: unknown (no finished run comparable to these")


def test_the_compute_line_counts_resized_inputs():
    from fedbench.assembly import build_config
    from fedbench.sweep.rates import round_flops

    big = build_config("fedlga-cifar100")  # ResNet-20 at 224 px (issue 31 #10)
    small = build_config("fedlga-cifar100", None, {"resize": None})
    assert round_flops(big) == pytest.approx(round_flops(small) * (224 / 32) ** 2)
    assert "inputs resized to 224 px" in estimate.model_line([big])


def test_device_labels_drop_only_the_thread_count():
    assert estimate.device_label("cpu (AMD EPYC, x86_64, AVX512, 4 threads)") == (
        "cpu (AMD EPYC, x86_64, AVX512)"
    )
    assert estimate.device_label("NVIDIA H100 80GB HBM3") == "NVIDIA H100 80GB HBM3"


def test_on_a_busy_cpu_the_load_is_said_not_counted_twice(tmp_path, monkeypatch):
    """The rates were measured under the load their runs had (not recorded): scaling them by
    the load now as well overshot (the shipped sfl-fmnist-lr runs: x1.75 said 0.50 s a round,
    0.15 s measured); the load now is said beside the estimate."""
    import os

    from fedbench.assembly import build_config
    from fedbench.sweep import rates

    monkeypatch.undo()  # the real load_factor (quiet_machine replaced it)
    monkeypatch.setattr(os, "getloadavg", lambda: (8.0, 8.0, 8.0))
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    factor, said, _ = rates.load_factor()
    assert factor == 4.0
    assert "this machine's load now: 8.0 on 2 cores, x4.0 a quiet run's time" in said
    here = estimate.this_device(build_config("default"))
    runs = [build_config("default", None, {"seed": s}) for s in range(2)]
    _finished_run(tmp_path / "r", runs[0], 10, here)  # 0.2 s a round, under its own load
    line = estimate.time_line(runs[1:], tmp_path / "r", jobs=1, shipped=False)
    assert line.startswith(f"expected time: 10 s on {here}") and line.endswith(said)


def test_an_older_record_without_a_newer_field_is_the_same_setting(tmp_path):
    """A record written before eval_local existed (no such key) is a run without it: its rate
    is the same setting's, not a like setting's scaled by FLOPs."""
    from fedbench.assembly import build_config

    here = estimate.this_device(build_config("default"))
    runs = [build_config("default", None, {"seed": s}) for s in range(2)]
    _finished_run(tmp_path / "r", runs[0], 10, here)
    meta_path = next((tmp_path / "r").glob("*/run.json"))
    meta = json.loads(meta_path.read_text())
    del meta["config"]["eval_local"]
    meta_path.write_text(json.dumps(meta))
    line = estimate.time_line(runs[1:], tmp_path / "r", jobs=1, shipped=False)
    assert line.endswith("1 from runs of the same settings on this device"), line
