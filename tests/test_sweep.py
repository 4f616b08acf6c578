"""Sweeps: grids from flags and files, resuming after SIGKILL, claims shared by concurrent sweeps,
failed and diverged runs, the process pool and (when installed) the Ray executor."""

import json
import multiprocessing as mp
import os
import platform
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from conftest import invoke

from fedbench.assembly import build_config
from fedbench.identity import run_id
from fedbench.results.locks import RunClaim
from fedbench.sweep import (
    InlineExecutor,
    PoolExecutor,
    grid_configs,
    load_sweep_file,
    parse_grid,
    plan_sweep,
    run_sweep,
    table_configs,
)
from fedbench.tables import Selection, evaluate_table, get_table, render_paper_table

ROOT = Path(__file__).resolve().parents[1]
TINY = {
    "N": "6",
    "K": "3",
    "local_steps": "4",
    "device": "cpu",
    "dtype": "float64",
    "eval_train": "false",
}
TINY_SETS = [x for k, v in TINY.items() for x in ("--set", f"{k}={v}")]
TIMING = ["round_seconds", "cum_seconds", "eval_seconds"]
FEDBENCH = [sys.executable, "-m", "fedbench.cli"]


pytestmark = pytest.mark.usefixtures("one_thread")


def table_args(results, rounds=3, seeds="0"):
    """`fedbench sweep --table stragglers` options on the tiny default preset (9 runs a seed)."""
    args = f"--dataset synthetic-1-1 --preset default --seeds {seeds} --set rounds={rounds}"
    return [*args.split(), *TINY_SETS, "--threads", "1", "--results", str(results)]


def stragglers_selection(results, rounds=3, seeds=(0,)):
    return Selection(
        dataset="synthetic-1-1",
        seeds=seeds,
        preset="default",
        sets={"rounds": str(rounds), **TINY},
        results=str(results),
    )


def run_dirs(results: Path) -> list[Path]:
    return sorted(p for p in results.iterdir() if p.is_dir() and not p.name.startswith("."))


# ---------------------------------------------------------------- grids


def test_grid_from_flags_applies_method_params_to_their_methods():
    cfgs = grid_configs(
        methods=["fedavg", "fedprox"],
        seeds=[0, 1],
        grid=parse_grid(["mu=0.1,1", "K=2,3"]),
        sets={"rounds": "2", "N": "6"},
    )
    fedavg = [c for c in cfgs if c.method == "fedavg"]
    fedprox = [c for c in cfgs if c.method == "fedprox"]
    assert len(fedavg) == 4 and len(fedprox) == 8  # mu varies only fedprox
    assert {c.method_params["mu"] for c in fedprox} == {0.1, 1}
    assert {c.clients_per_round for c in cfgs} == {2, 3} and {c.seed for c in cfgs} == {0, 1}
    assert all(c.rounds == 2 and c.num_clients == 6 for c in cfgs)
    # mu=1 and mu=1.0 (fedprox's default) are one run: duplicates collapse
    again = grid_configs(methods=["fedprox"], grid={"mu": ["1", "1.0"]}, sets=TINY)
    assert len(again) == 1
    assert run_id(again[0]) == run_id(build_config(None, None, {"method": "fedprox", **TINY}))


def test_dataset_picks_the_fedlga_preset():
    (cfg,) = grid_configs(dataset="fmnist", sets={"rounds": "1"})
    assert cfg.preset == "fedlga-fmnist" and cfg.hetero == "fedlga" and cfg.model == "mlp"


def test_sweep_file(tmp_path):
    f = tmp_path / "sweep.toml"
    f.write_text(
        'methods = ["fedavg", "fedprox"]\nseeds = [0, 1]\n[set]\nrounds = 2\nN = 6\nK = 3\n'
        "[grid]\nE = [1, 2]\n[grid.fedprox]\nmu = [0.01, 0.1]\n"
    )
    cfgs = grid_configs(**load_sweep_file(f))
    assert len([c for c in cfgs if c.method == "fedavg"]) == 4
    assert len([c for c in cfgs if c.method == "fedprox"]) == 8
    f.write_text("methods = ['fedavg']\nnosuch = 1\n")
    with pytest.raises(Exception, match="unknown key 'nosuch'"):
        load_sweep_file(f)


def test_table_sweep_plan_skips_unavailable_cells(tmp_path):
    """The tau table: every method of FedLGA's Table VI is here (4 FedLGA rows under each of the
    paper's two readings of g + 8 baselines); a cell that cannot be built (here: E=1 leaves no
    tau_max) is reported, not run."""
    spec = get_table("tau")
    cfgs, unavailable = table_configs(spec, Selection(dataset="fmnist", seeds=(0,)))
    assert not unavailable
    assert {c.method for c in cfgs} == {
        "fedlga", "fedavg", "fedprox", "fednova", "scaffold", "feddyn", "fedcm", "mimelite",
        "fedsam",
    }  # fmt: skip
    # ... and FedAvg with no slow devices (hetero none: the partial-work bound)
    assert len(cfgs) == 4 + 4 + 8 + 1
    assert [c.method for c in cfgs if c.hetero == "none"] == ["fedavg"]
    assert (
        sorted(c.method_params.get("g", "text") for c in cfgs if c.method == "fedlga")
        == ["eq6"] * 4 + ["text"] * 4
    )
    bad, unavailable = table_configs(spec, Selection(dataset="fmnist", seeds=(0,), sets={"E": 1}))
    assert sum(unavailable.values()) == 16 + 1  # FedSAM at equal gradient evaluations: a cell too
    assert [(c.method, c.hetero) for c in bad] == [("fedavg", "none")]  # E=1 needs no tau_max
    r = invoke(
        "sweep",
        "--table",
        "tau",
        "--dataset",
        "fmnist",
        "--seeds",
        "0",
        "--dry-run",
        "--results",
        tmp_path,
    )
    assert r.exit_code == 0, r.output
    assert f"{len(cfgs)} runs; 0 already done, {len(cfgs)} to run" in r.output
    r = invoke("sweep", "--table", "tau", "--dataset", "fmnist", "--seeds", "0",
               "--methods", "fedlga,fedavg", "--dry-run", "--results", tmp_path)  # fmt: skip
    # 8 FedLGA rows, FedAvg, and FedAvg with no partial work
    assert r.exit_code == 0 and "10 runs; 0 already done, 10 to run" in r.output, r.output
    listed = [ln.split()[1] for ln in r.output.splitlines() if ln.startswith("  fed")]
    assert sorted(set(listed)) == ["fedavg", "fedlga"] and len(listed) == 10


# ---------------------------------------------------------------- running and resuming


def test_sweep_runs_then_resumes_with_nothing_left(tmp_path):
    res = tmp_path / "r"
    args = ("--methods", "fedavg,fedprox", "--grid", "mu=0,1", "--seeds", "0", "--set", "rounds=2")
    r = invoke("sweep", *args, *TINY_SETS, "--results", res, "--quiet")
    assert r.exit_code == 0, r.output
    assert "3 run(s)" in r.output and "3 complete" in r.output
    assert len(run_dirs(res)) == 3
    r = invoke("sweep", *args, *TINY_SETS, "--results", res, "--quiet")  # the same command
    assert r.exit_code == 0 and "3 already done, 0 to run" in r.output
    assert not list((res / ".claims").glob("*.lock"))


def test_failed_and_diverged_runs_are_recorded_and_the_sweep_goes_on(tmp_path, monkeypatch):
    monkeypatch.setattr("fedbench.data.idx.SYSTEM_DIRS", {"fmnist": [], "mnist": []})
    monkeypatch.delenv("FEDBENCH_DATA", raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "x").mkdir()  # an empty data folder: the fmnist run fails when it loads
    good = build_config("default", None, {"rounds": "2", **TINY})
    diverges = build_config(
        "default", None, {"rounds": "3", **TINY, "lr": "1e37", "dtype": "float32"}
    )
    fails = build_config(
        "fedlga-fmnist", None, {"rounds": "2", "device": "cpu", "data_dir": str(tmp_path / "x")}
    )
    res = tmp_path / "r"
    plan = plan_sweep([fails, diverges, good], res)
    report = run_sweep(plan, res, InlineExecutor(), quiet=True)
    status = {o.run_id: o.status for o in report.outcomes}
    assert status == {
        run_id(fails): "failed",
        run_id(diverges): "diverged",
        run_id(good): "complete",
    }
    meta = json.loads((res / run_id(fails) / "run.json").read_text())
    assert meta["status"] == "failed" and "fmnist not found" in meta["error"]
    assert json.loads((res / run_id(diverges) / "run.json").read_text())["status"] == "diverged"
    # the next sweep retries only the failed run; diverged is a result
    plan = plan_sweep([fails, diverges, good], res)
    assert [run_id(c) for c in plan.todo] == [run_id(fails)] and len(plan.done) == 2


def test_sweep_cli_exits_1_naming_the_failed_run(tmp_path, monkeypatch):
    monkeypatch.setattr("fedbench.data.idx.SYSTEM_DIRS", {"fmnist": [], "mnist": []})
    monkeypatch.delenv("FEDBENCH_DATA", raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "x").mkdir()  # IDX files that are not IDX: the run fails when it loads
    for stem in ("train-images-idx3", "train-labels-idx1", "t10k-images-idx3", "t10k-labels-idx1"):
        (tmp_path / "x" / f"{stem}-ubyte").write_bytes(b"not an IDX file")
    r = invoke(
        "sweep",
        "--preset",
        "fedlga-fmnist",
        "--set",
        "rounds=1",
        "--set",
        "device=cpu",
        "--set",
        f"data_dir={tmp_path / 'x'}",
        "--results",
        tmp_path / "r",
        "--quiet",
    )
    assert r.exit_code == 1
    assert r.output.strip().splitlines()[-1].startswith("Error: 1 run(s) failed, first fedavg-")


def _rendered(results, rounds):
    res = evaluate_table(get_table("stragglers"), results, stragglers_selection(results, rounds))
    return render_paper_table(res, "md", header=[]).replace(str(results), "R")


def test_sigkill_then_resume_equals_an_uninterrupted_sweep(tmp_path):
    killed, clean = tmp_path / "killed", tmp_path / "clean"
    rounds = 20
    cmd = [*FEDBENCH, "sweep", "--table", "stragglers", *table_args(killed, rounds), "--quiet"]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen(
        cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    caught_running = False
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            statuses = []
            for p in killed.glob("*/run.json"):
                try:
                    statuses.append(json.loads(p.read_text())["status"])
                except (ValueError, OSError):
                    pass
            if statuses.count("complete") >= 2 and "running" in statuses:
                caught_running = True
                break
            time.sleep(0.01)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert caught_running, "the sweep finished before it could be killed half way"
    wanted, _ = table_configs(get_table("stragglers"), stragglers_selection(killed, rounds))
    assert len(wanted) == 9
    # resume: the same command again
    r = invoke("sweep", "--table", "stragglers", *table_args(killed, rounds), "--quiet")
    assert r.exit_code == 0, r.output
    assert "already done" in r.output
    dirs = run_dirs(killed)
    assert sorted(d.name for d in dirs) == sorted(run_id(c) for c in wanted)  # once each
    for d in dirs:
        assert json.loads((d / "run.json").read_text())["status"] == "complete"
        assert len(pd.read_parquet(d / "rounds.parquet")) == rounds + 1
        assert not list(d.glob(".*.tmp"))
    assert not list((killed / ".claims").glob("*.lock"))
    r = invoke("sweep", "--table", "stragglers", *table_args(clean, rounds), "--quiet")
    assert r.exit_code == 0, r.output
    assert _rendered(killed, rounds) == _rendered(clean, rounds)
    assert "missing" not in _rendered(clean, rounds)


# ---------------------------------------------------------------- sharing a results folder


def _claim_once(results, run_id, queue):
    queue.put(RunClaim(results, run_id).acquire())
    time.sleep(0.5)  # hold it while the others try


def test_exactly_one_of_many_processes_gets_a_claim(tmp_path):
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    procs = [ctx.Process(target=_claim_once, args=(tmp_path, "run-x", q)) for _ in range(4)]
    for p in procs:
        p.start()
    got = [q.get(timeout=20) for _ in procs]
    for p in procs:
        p.join()
    assert sorted(got) == [False, False, False, True]


def test_stale_claims_are_taken_over_live_ones_are_not(tmp_path):
    claims = tmp_path / ".claims"
    claims.mkdir()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    (claims / "a.lock").write_text(json.dumps({"pid": dead.pid, "host": platform.node()}))
    assert RunClaim(tmp_path, "a").acquire()  # its process is gone
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        (claims / "b.lock").write_text(json.dumps({"pid": alive.pid, "host": platform.node()}))
        assert not RunClaim(tmp_path, "b").acquire()
    finally:
        alive.kill()
        alive.wait()
    assert RunClaim(tmp_path, "b").acquire()
    (claims / "c.lock").write_text(json.dumps({"pid": 1, "host": "elsewhere"}))
    assert not RunClaim(tmp_path, "c").acquire()  # another host, fresh heartbeat
    old = time.time() - 3600
    os.utime(claims / "c.lock", (old, old))
    assert RunClaim(tmp_path, "c").acquire()  # another host, no heartbeat for an hour
    claim = RunClaim(tmp_path, "d")
    with claim:
        assert (claims / "d.lock").exists() and not RunClaim(tmp_path, "d").acquire()
    assert not (claims / "d.lock").exists()


def test_two_sweeps_at_once_run_each_config_once(tmp_path):
    res = tmp_path / "shared"
    args = "sweep --methods fedavg,fedprox --grid mu=0,0.1,1 --seeds 0,1 --set rounds=2 --quiet"
    cmd = [*FEDBENCH, *args.split(), *TINY_SETS, "--results", str(res)]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    procs = [
        subprocess.Popen(
            cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=120)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    completed = 0
    for out in outs:
        line = [ln for ln in out.splitlines() if " run(s) in " in ln][-1]
        completed += int(line.split(" complete")[0].rsplit(" ", 1)[1])
    assert completed == 8  # fedavg x 2 seeds + fedprox x 3 mu x 2 seeds, each trained once
    dirs = run_dirs(res)
    assert len(dirs) == 8
    assert all(json.loads((d / "run.json").read_text())["status"] == "complete" for d in dirs)


# ---------------------------------------------------------------- executors


def _numbers(results: Path) -> dict[str, pd.DataFrame]:
    return {
        d.name: pd.read_parquet(d / "rounds.parquet").drop(columns=TIMING)
        for d in run_dirs(results)
    }


def _grid():
    return grid_configs(methods=["fedavg", "fedprox"], seeds=[0, 1], sets={"rounds": "2", **TINY})


def test_pool_executor_gives_the_inline_numbers(tmp_path):
    cfgs = _grid()
    for name, ex in (("inline", InlineExecutor()), ("pool", PoolExecutor(2, threads=1))):
        report = run_sweep(plan_sweep(cfgs, tmp_path / name), tmp_path / name, ex, quiet=True)
        assert report.count("complete") == 4
    a, b = _numbers(tmp_path / "inline"), _numbers(tmp_path / "pool")
    assert a.keys() == b.keys()
    for k in a:
        pd.testing.assert_frame_equal(a[k], b[k], check_exact=False, rtol=1e-9)


def test_ray_executor_gives_the_local_numbers(tmp_path):
    ray = pytest.importorskip(
        "ray",
        reason="Ray is not installed (pip install 'fedbench[ray]'); the Ray executor test needs it",
    )
    from fedbench.sweep import RayExecutor

    ray.init(
        num_cpus=2, include_dashboard=False, runtime_env={"env_vars": {"PYTHONPATH": str(ROOT)}}
    )
    try:
        cfgs = _grid()
        local = run_sweep(
            plan_sweep(cfgs, tmp_path / "local"), tmp_path / "local", InlineExecutor(), quiet=True
        )
        remote = run_sweep(
            plan_sweep(cfgs, tmp_path / "ray"),
            tmp_path / "ray",
            RayExecutor(num_cpus=1),
            quiet=True,
        )
    finally:
        ray.shutdown()
    assert local.count("complete") == remote.count("complete") == 4
    a, b = _numbers(tmp_path / "local"), _numbers(tmp_path / "ray")
    assert a.keys() == b.keys()
    for k in a:
        pd.testing.assert_frame_equal(a[k], b[k], check_exact=False, rtol=1e-9)
