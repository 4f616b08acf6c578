"""benchmarks/gpu_check.py, the device check (issue 37), dry-run on the CPU: it runs every step,
stops the campaign at its deadline and packs what finished; its references and its parts."""

import json
import os
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest
from test_bad_inputs import mnist_folder

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "benchmarks"
SCRIPT = BENCH / "gpu_check.py"


@pytest.fixture
def bench(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH))
    import gpu_campaign
    import gpu_families

    return gpu_families, gpu_campaign


def gpu_check(*args, timeout=600):
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, str(SCRIPT), "--device", "cpu", "--threads", "1", *map(str, args)]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)


def test_dry_run_checks_stops_on_time_and_packs(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "MNIST").mkdir()
    mnist_folder(data / "MNIST" / "raw", n=600)  # FedSoftMax's 100 shards of 50 devices fit
    refs, out = tmp_path / "refs", tmp_path / "out"
    fams = ["--families", "logreg,cnn", "--references", refs]
    r = gpu_check("--write-references", "--data", data, *fams)
    assert r.returncode == 0, r.stderr
    deadline = 70
    t0 = time.monotonic()
    r = gpu_check(
        *("--data", data, "--out", out, "--deadline", deadline, *fams, "--speed-rounds", 1),
        *("--speed-set", "clients_per_round=2", "--speed-set", "local_steps=2"),
        *("--campaign-set", "K=2", "--campaign-set", "rounds=2", "--phases", "0"),
        *("--results", tmp_path / "results"),
    )
    wall = time.monotonic() - t0
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert wall < deadline + 25, wall  # the deadline, and the script's own start
    report = json.loads((out / "gpu_check.json").read_text())
    assert report["all_families_ok"] is True
    assert {row["family"] for row in report["families"]} == {"logreg", "cnn"}
    assert all(row["ok"] for row in report["families"])
    assert {row["family"] for row in report["speed"]} == {"logreg", "cnn"}
    assert report["environment"]["tf32"] is False
    (phase,) = report["campaign"]
    assert phase["jobs"] == 1 and phase["table"] == "r90"
    with tarfile.open(out / "campaign_runs.tar.gz") as tar:
        names = tar.getnames()
    folders = {n.split("/")[0] for n in names}
    assert len(folders) == phase["finished"]
    results = tmp_path / "results"
    for f in folders:  # only finished runs, without their checkpoints
        assert json.loads((results / f / "run.json").read_text())["status"] == "complete"
    assert not [n for n in names if "checkpoint" in n]
    assert "done: every family's check passed" in (out / "gpu_check.log").read_text()
    assert not list(out.glob("*.part"))


@pytest.mark.parametrize(
    "args,needle",
    [
        (["--out", "o"], "--data and --out are needed"),
        (["--data", "nowhere", "--out", "o"], "--data nowhere: no such folder"),
        (["--write-references", "--families", "cnn,gpt"], "unknown families ['gpt']"),
        (["--data", ".", "--out", "o", "--phases", "99"], "--phases: indexes below"),
    ],
)
def test_bad_input_is_one_line(tmp_path, args, needle):
    r = gpu_check(*args, timeout=120)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], r.stderr


def test_every_family_has_a_reference(bench):
    fams, _ = bench
    for fam in fams.FAMILIES:
        ref = json.loads((fams.REFERENCES / f"{fam}.json").read_text())
        assert ref["family"] == fam and ref["config"] == {**fams.COMMON, **fams.FAMILIES[fam]}
        for dtype in fams.DTYPES:
            assert len(ref[dtype]["update"]) == min(fams.COORDS, ref["dim"])
            assert ref[dtype]["update_norm"] > 0
    total = sum(p.stat().st_size for p in fams.REFERENCES.glob("*.json"))
    assert total < 200_000, total  # small enough to carry


def test_a_cpu_rerun_matches_its_reference(bench, monkeypatch):
    """The comparison itself: the same config on the same CPU is within every tolerance, and a
    planted error in the update fails the float64 check."""
    fams, _ = bench
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    ref = json.loads((fams.REFERENCES / "charlstm.json").read_text())
    tol = fams.tolerances(ref)
    got = fams.first_round(fams.engine("charlstm", "cpu", {}, "float64"))
    assert fams.compare(got, ref["float64"], *tol["float64"])["ok"]
    got["update"][0] += 1e-6 * abs(got["update_norm"])
    assert not fams.compare(got, ref["float64"], *tol["float64"])["ok"]


def test_pack_replaces_the_archive_whole(bench, tmp_path):
    """Only finished runs, checkpoints left out; the archive is renamed into place."""
    _, camp = bench
    res = tmp_path / "res"
    for name, status in (("a", "complete"), ("b", "interrupted"), ("c", "diverged")):
        (res / name).mkdir(parents=True)
        (res / name / "run.json").write_text(json.dumps({"status": status}))
        (res / name / "checkpoint.pt").write_bytes(b"x")
    archive = tmp_path / "runs.tar.gz"
    assert camp.pack(res, archive) == 2
    with tarfile.open(archive) as tar:
        assert sorted(tar.getnames()) == ["a/run.json", "c/run.json"]
    assert [p.name for p in tmp_path.iterdir() if p.is_file()] == ["runs.tar.gz"]


def test_best_jobs_is_the_most_runs_per_hour(bench):
    _, camp = bench
    rows = [
        {"jobs": 1, "finished": 6, "runs_per_hour": 100.0, "stopped_at_deadline": False},
        {"jobs": 2, "finished": 6, "runs_per_hour": 180.0, "stopped_at_deadline": False},
        {"jobs": 4, "finished": 3, "runs_per_hour": 400.0, "stopped_at_deadline": True},
    ]
    assert camp.best_jobs(rows) == 2  # a phase cut by the deadline measured nothing whole
    assert camp.best_jobs([]) == 1


def test_a_failing_family_is_a_row_not_the_end(bench, tmp_path):
    """A missing reference, or an exception in a layout, becomes a failed row with its traceback
    (the log keeps it); the other families still run."""
    fams, _ = bench
    (row,) = fams.check_family("cnn", "cpu", {}, tmp_path, lambda: 100.0)
    assert row["ok"] is False and "no reference cnn.json" in row["error"]
    try:
        raise RuntimeError("CUDA error: an illegal memory access")
    except RuntimeError as e:
        row = fams.failed("vgg9", e, layout="grouped")
    assert row["ok"] is False and "illegal memory access" in row["traceback"]
    assert fams.line(row).startswith("vgg9      grouped       FAIL RuntimeError")
