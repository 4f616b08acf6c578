"""Issue 10 §2 and §4: a run's identity survives upgrades and tells data apart; writes never
lose a finished result. One test per item, on tiny synthetic / quadratic / fake-MNIST runs."""

import dataclasses
import gzip
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from fedbench.assembly import build_config
from fedbench.cli import cli
from fedbench.config import RunConfig, config_from_dict
from fedbench.errors import FedbenchError
from fedbench.identity import config_hash, run_id
from fedbench.methods import METHODS, method_class
from fedbench.results import RunIndex, load_summaries
from fedbench.sweep import Plan, SweepReport, plan_sweep, recheck_busy, run_sweep, summary_line
from fedbench.testing import fake_rounds, write_fake_run
from fedbench.training.runner import RunExists, _recover, diverged, train

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = Path(__file__).parent / "golden" / "method_versions.json"
TINY = {"N": "6", "K": "3", "local_steps": "2", "device": "cpu", "dtype": "float64"}
TINY_SETS = [x for k, v in {"rounds": "2", **TINY}.items() for x in ("--set", f"{k}={v}")]


@pytest.fixture(autouse=True)
def quiet_machine(tmp_path, monkeypatch):
    """One torch thread; the data-fingerprint cache in a temp folder, not the user's."""
    import torch

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], obj={})


def tiny(**over) -> RunConfig:
    return build_config("default", None, {"rounds": "2", **TINY, **over})


def one_line_error(r) -> str:
    assert r.exit_code == 2, r.output
    lines = r.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), r.output
    return lines[0]


# ---------------------------------------------------------------- §2a identity and upgrades


def _with_param(cls, name, default, **changed_defaults):
    """cls.Params with a new parameter (and some defaults changed): a simulated upgrade."""
    fields = [(name, type(default), dataclasses.field(default=default))]
    for k, v in changed_defaults.items():
        fields.append((k, type(v), dataclasses.field(default=v)))
    return dataclasses.make_dataclass("Params", fields, bases=(cls.Params,), frozen=True)


def test_a_new_method_parameter_with_the_old_behaviour_keeps_stored_runs(tmp_path, monkeypatch):
    from fedbench.methods.fedprox import FedProx

    cfg = tiny(method="fedprox", mu="0.5")
    write_fake_run(tmp_path, cfg)
    before = run_id(cfg)
    monkeypatch.setattr(FedProx, "Params", _with_param(FedProx, "new_knob", 0.0))
    assert run_id(cfg) == before  # the new parameter at its default is not hashed
    index = RunIndex(tmp_path)
    assert index.finished(config_hash(cfg)) is not None  # the stored run still counts
    changed = tiny(method="fedprox", mu="0.5", new_knob="1.0")
    assert run_id(changed) != before


def test_a_changed_default_or_behaviour_changes_the_identity(tmp_path, monkeypatch):
    from fedbench.methods.fedprox import FedProx

    cfg = tiny(method="fedprox")
    write_fake_run(tmp_path, cfg)
    before = config_hash(cfg)
    # the rule (Method docstring): a changed default comes with a version bump
    monkeypatch.setattr(FedProx, "Params", _with_param(FedProx, "unused", 0.0, mu=0.1))
    monkeypatch.setattr(FedProx, "version", 2)
    assert config_hash(cfg) != before
    assert RunIndex(tmp_path).finished(config_hash(cfg)) is None  # the old run is not done
    # the stored run keeps its own version, so it is still found under its old identity
    assert RunIndex(tmp_path).finished(before) is not None


def test_method_defaults_change_only_with_a_version_bump():
    """Every method's parameter defaults, per version; a default changed without a version
    bump fails here (bump `version`, then UPDATE_GOLDEN=1 to record the new defaults)."""
    now = {
        name: {
            "version": m.version,
            "defaults": {f.name: repr(f.default) for f in dataclasses.fields(m.Params) if f.init},
        }
        for name, m in METHODS.items()
    }
    if os.environ.get("UPDATE_GOLDEN") or not GOLDEN.exists():
        GOLDEN.write_text(json.dumps(now, indent=2, sort_keys=True) + "\n")
    old = json.loads(GOLDEN.read_text())
    for name, rec in old.items():
        if name not in now or now[name]["version"] != rec["version"]:
            continue  # removed, or bumped: any change is allowed
        for p, default in rec["defaults"].items():
            got = now[name]["defaults"].get(p, default)  # removed params are their own problem
            assert got == default, (
                f"{name}.{p} default changed {default} -> {got} without bumping "
                f"{name}'s version (fedbench/methods/base.py)"
            )


def test_a_new_config_field_with_the_old_behaviour_keeps_identity():
    old = tiny()
    stored = old.to_dict()  # run.json as written before the upgrade
    New = dataclasses.make_dataclass(
        "New", [("new_field", float, dataclasses.field(default=0.0))], bases=(RunConfig,)
    )
    assert config_hash(New(**stored)) == config_hash(old)
    assert config_hash(New(**stored, new_field=2.0)) != config_hash(old)
    # a changed config default: the stored run holds the old value explicitly
    Newer = dataclasses.make_dataclass(
        "Newer", [("lr", float, dataclasses.field(default=0.5))], bases=(RunConfig,)
    )
    read_back = Newer(**stored)  # how the upgraded build reads the stored run.json
    fresh = {k: v for k, v in stored.items() if k != "lr"}
    assert config_hash(read_back) != config_hash(Newer(**fresh))  # the new default: new run
    assert config_hash(read_back) == config_hash(Newer(**fresh, lr=stored["lr"]))


# ---------------------------------------------------------------- §2b data fingerprint


def _write_idx(folder: Path, seed: int) -> None:
    """A tiny MNIST in IDX files (40 train, 20 test images)."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True)
    for stem, n in (("train", 40), ("t10k", 20)):
        x = rng.integers(0, 256, (n, 28, 28), dtype=np.uint8)
        y = np.arange(n, dtype=np.uint8) % 10
        hx = bytes([0, 0, 8, 3]) + b"".join(int(d).to_bytes(4, "big") for d in x.shape)
        hy = bytes([0, 0, 8, 1]) + n.to_bytes(4, "big")
        (folder / f"{stem}-images-idx3-ubyte.gz").write_bytes(gzip.compress(hx + x.tobytes()))
        (folder / f"{stem}-labels-idx1-ubyte.gz").write_bytes(gzip.compress(hy + y.tobytes()))


def _mnist(data_dir: Path) -> RunConfig:
    over = {"dataset": "mnist", "partition": "iid", "model": "logreg", "data_dir": str(data_dir)}
    return build_config(None, None, {**over, "rounds": "1", "N": "4", "K": "2", **TINY})


def test_the_same_config_on_other_data_files_is_another_run(tmp_path):
    from fedbench.data import data_fingerprint

    _write_idx(tmp_path / "a", 0)
    _write_idx(tmp_path / "b", 1)
    a, b = _mnist(tmp_path / "a"), _mnist(tmp_path / "b")
    assert config_hash(a) == config_hash(b)  # where data lives is not the identity...
    res = tmp_path / "r"
    meta_a, _ = train(a, res)
    with pytest.raises(RunExists):
        train(a, res)
    assert [c.data_dir for c in plan_sweep([b], res).todo] == [b.data_dir]  # ...its bytes are
    assert plan_sweep([a], res).done == [run_id(a)]
    meta_b, _ = train(b, res)  # not refused as "already exists"
    fa, fb = meta_a["data"]["fingerprint"], meta_b["data"]["fingerprint"]
    assert fa and fb and fa != fb
    folders = sorted(p.name for p in res.iterdir() if not p.name.startswith("."))
    assert folders == [run_id(a), f"{run_id(a)}-d{fb[:8]}"]  # neither replaced the other
    assert plan_sweep([a, b], res).done == [run_id(a), run_id(b)]
    # remembered: known from a stat of the files, recomputed when a file changes
    assert data_fingerprint(b, compute=False) == fb
    f = tmp_path / "b" / "t10k-labels-idx1-ubyte.gz"
    f.write_bytes(f.read_bytes())
    os.utime(f, ns=(1, 1))
    assert data_fingerprint(b, compute=False) is None
    assert data_fingerprint(b) == fb  # same bytes, same fingerprint


# ---------------------------------------------------------------- §2c older records


def _make_old(run_dir: Path) -> None:
    """run.json as an older fedbench wrote it: no schema version, a field since removed."""
    meta = json.loads((run_dir / "run.json").read_text())
    del meta["schema_version"]
    meta["config"]["old_knob"] = 3
    (run_dir / "run.json").write_text(json.dumps(meta))


def test_old_version_records_get_a_note_and_strict_refuses_them(tmp_path):
    cfg = tiny()
    res = tmp_path / "r"
    _make_old(write_fake_run(res, cfg))
    r = invoke("table", "summary", "--results", res)
    assert r.exit_code == 0, r.output
    assert "older fedbench" in r.output and "old_knob" in r.output
    assert "older fedbench" in one_line_error(
        invoke("table", "summary", "--results", res, "--strict")
    )
    sweep = ["sweep", "--preset", "default", *TINY_SETS, "--results", res, "--quiet"]
    r = invoke(*sweep)
    assert r.exit_code == 0 and "1 already done" in r.output and "note: 1 run(s)" in r.output
    assert "older fedbench" in one_line_error(invoke(*sweep, "--strict"))
    out = tmp_path / "c"
    r = invoke("plot", "curves", "--results", res, "--out", out)
    assert r.exit_code == 0 and "older fedbench" in r.output
    one_line_error(invoke("plot", "curves", "--results", res, "--out", out, "--strict"))


# ---------------------------------------------------------------- §2d copies


def test_a_copied_run_folder_is_one_run(tmp_path):
    res = tmp_path / "r"
    src = write_fake_run(res, tiny())
    shutil.copytree(src, res / "my-copy")
    df, problems = load_summaries(res)
    assert len(df) == 1 and not problems
    r = invoke("table", "summary", "--results", res, "--format", "csv", "--out", tmp_path)
    assert r.exit_code == 0, r.output
    rows = [x for x in (tmp_path / "summary.csv").read_text().splitlines() if "fedavg" in x]
    assert len(rows) == 1
    assert "one run held in several folders" in r.output and "my-copy" in r.output


# ---------------------------------------------------------------- §4a overwrite


def test_overwrite_killed_with_sigkill_leaves_the_old_run(tmp_path):
    res = tmp_path / "r"
    cfg = build_config("default", None, {"rounds": "400", **TINY, "local_steps": "50"})
    old = write_fake_run(res, cfg)
    before = {p.name: p.read_bytes() for p in old.iterdir()}
    cmd = [sys.executable, "-m", "fedbench.cli", "train", "--preset", "default", "--quiet"]
    sets = {"rounds": "400", **TINY, "local_steps": "50"}  # each field once on a command line
    cmd += [x for k, v in sets.items() for x in ("--set", f"{k}={v}")]
    cmd += ["--threads", "1", "--results", str(res), "--overwrite"]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    aside = []
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and proc.poll() is None and not aside:
            aside = list(res.glob(f".{run_id(cfg)}.new-*/partition.parquet"))
            time.sleep(0.02)
        time.sleep(0.3)  # a few rounds into the new run
    finally:
        proc.send_signal(signal.SIGKILL)
        out = proc.communicate()[0].decode()
    assert aside, f"the new run was never written aside: {out}"
    assert {p.name: p.read_bytes() for p in old.iterdir()} == before  # untouched
    assert RunIndex(res).finished(config_hash(cfg)) is not None
    _recover(res, run_id(cfg))  # what the next claim of this run does first
    assert [p.name for p in res.iterdir() if p.name != ".claims"] == [old.name]


def test_overwrite_swaps_in_the_new_run_and_a_failed_one_keeps_the_old(tmp_path, monkeypatch):
    from fedbench.training.engine import Engine

    cfg = tiny()
    res = tmp_path / "r"
    old = write_fake_run(res, cfg)
    text = (old / "run.json").read_text()

    def boom(self):
        raise RuntimeError("boom")

    with monkeypatch.context() as m:
        m.setattr(Engine, "eval_record", boom)
        with pytest.raises(RuntimeError):
            train(cfg, res, overwrite=True)
    assert (old / "run.json").read_text() == text
    meta, df = train(cfg, res, overwrite=True)
    assert json.loads((old / "run.json").read_text())["host"] == platform.node()
    assert len(pd.read_parquet(old / "rounds.parquet")) == 3 == meta["rows"]
    assert [p.name for p in res.iterdir() if p.name != ".claims"] == [old.name]


# ---------------------------------------------------------------- §4b failures recorded


@pytest.mark.parametrize("where", ["eval_record", "run_round"])
def test_any_crash_after_the_claim_is_recorded_failed(tmp_path, monkeypatch, where):
    from fedbench.training.engine import Engine

    def boom(self, *a):
        raise RuntimeError(f"boom in {where}")

    monkeypatch.setattr(Engine, where, boom)
    cfg = tiny()
    with pytest.raises(RuntimeError):
        train(cfg, tmp_path)
    meta = json.loads((tmp_path / run_id(cfg) / "run.json").read_text())
    assert meta["status"] == "failed" and meta["error"] == f"RuntimeError: boom in {where}"
    assert not list((tmp_path / ".claims").glob("*.lock"))


# ---------------------------------------------------------------- §4c short rounds.parquet


@pytest.mark.parametrize("keep", [0, 2])
def test_a_short_rounds_file_is_rerun(tmp_path, keep):
    cfg = tiny(rounds="3")
    train(cfg, tmp_path)
    path = tmp_path / run_id(cfg) / "rounds.parquet"
    pd.read_parquet(path).head(keep).to_parquet(path, index=False)  # a footer that reads
    plan = plan_sweep([cfg], tmp_path)
    assert [run_id(c) for c in plan.todo] == [run_id(cfg)] and "rows" in plan.problems[0]
    report = run_sweep(plan, tmp_path, quiet=True)
    assert report.outcomes[0].status == "complete"
    assert len(pd.read_parquet(path)) == 4
    assert plan_sweep([cfg], tmp_path).done == [run_id(cfg)]


# ---------------------------------------------------------------- §4d --on-error skip everywhere


def _damage(run_dir: Path, kind: str) -> None:
    meta_path, rounds_path = run_dir / "run.json", run_dir / "rounds.parquet"
    meta = json.loads(meta_path.read_text())
    if kind == "garbage":
        meta_path.write_text("{not json")
    elif kind in ("[]", "null"):
        meta_path.write_text(kind)
    elif kind == "wrong types":
        meta["summary"] = {**meta["summary"], "final_train_loss": "low", "final_local_loss": "x"}
        meta_path.write_text(json.dumps(meta))
    elif kind == "status type":
        meta["status"] = 7
        meta_path.write_text(json.dumps(meta))
    elif kind == "missing columns":
        pd.read_parquet(rounds_path).drop(columns=["round"]).to_parquet(rounds_path)
    elif kind == "column types":
        df = pd.read_parquet(rounds_path)
        df["train_loss"] = df["train_loss"].astype(str)
        df.to_parquet(rounds_path)
    elif kind == "short":
        pd.read_parquet(rounds_path).head(1).to_parquet(rounds_path)


DAMAGE = [
    "garbage",
    "[]",
    "null",
    "wrong types",
    "status type",
    "missing columns",
    "column types",
    "short",
]
TABLE = ["--dataset", "synthetic-1-1", "--preset", "default", "--seeds", "0", *TINY_SETS]


@pytest.mark.parametrize("kind", DAMAGE)
def test_on_error_skip_works_in_every_command_for_every_damage(tmp_path, kind):
    from fedbench.sweep import table_configs
    from fedbench.tables import Selection, get_table

    res = tmp_path / "r"
    sel = Selection("synthetic-1-1", (0,), "default", {"rounds": "2", **TINY}, str(res))
    configs, _ = table_configs(get_table("stragglers"), sel)
    dirs = [write_fake_run(res, c, fake_rounds(2, loss0=2.0 + i)) for i, c in enumerate(configs)]
    _damage(dirs[0], kind)
    skip = ["--results", res, "--on-error", "skip"]
    commands = [
        ["table", "summary"],
        ["table", "stragglers", *TABLE],
        ["plot", "stragglers", *TABLE, "--out", tmp_path / "p"],
        ["plot", "curves", "--out", tmp_path / "c"],
    ]
    for cmd in commands:
        r = invoke(*cmd, *skip)
        assert r.exit_code == 0, (cmd, r.output)
        assert "skipped" in r.output, (cmd, r.output)
        name = str(dirs[0]).replace("\n", "")
        assert name in r.output.replace("\n", ""), (cmd, r.output)
        one_line_error(invoke(*cmd, "--results", res))
    sweep = ["sweep", "--table", "stragglers", *TABLE, "--results", res, "--quiet"]
    one_line_error(invoke(*sweep, "--damaged", "stop", "--dry-run"))  # was --on-error fail
    r = invoke(*sweep, "--threads", "1")  # skip (the default) reruns the damaged run
    assert r.exit_code == 0 and "8 already done, 1 to run" in r.output, r.output
    assert json.loads((dirs[0] / "run.json").read_text())["status"] == "complete"
    r = invoke(*sweep)
    assert "9 already done, 0 to run" in r.output, r.output  # repaired, not retried


# ---------------------------------------------------------------- §4e strict JSON


def test_run_json_is_strict_json_with_null_for_non_finite(tmp_path):
    quad = {"dataset": "quadratic", "model": "quadratic", "N": "2", "K": "2", "B": "1"}
    cfg = build_config(None, None, {**quad, "local_steps": "5", "rounds": "3", "lr": "3"})
    meta, _ = train(cfg, tmp_path)
    text = (tmp_path / run_id(cfg) / "run.json").read_text()

    def no_constants(c):
        raise ValueError(f"{c} in run.json")

    back = json.loads(text, parse_constant=no_constants)
    assert back["summary"]["best_acc"] is None  # no accuracy: the quadratic has none
    assert back["schema_version"] >= 2


# ---------------------------------------------------------------- §4f divergence


def test_divergence_rule():
    import torch

    w = torch.zeros(3)
    base: dict = {}
    assert not diverged({"test_loss": 2.3}, base, w)
    assert not diverged({"test_loss": 2000.0, "n_full": 1, "local_loss": 1.0}, base, w)
    assert diverged({"test_loss": 2400.0}, base, w)  # > 1000 x 2.3
    assert diverged({"test_loss": float("nan")}, base, w)
    assert diverged({"test_loss": 1.0}, base, torch.tensor([0.0, float("inf"), 0.0]))
    assert diverged({"n_full": 2, "local_loss": float("inf")}, base, w)
    assert not diverged({"n_full": 0, "local_loss": float("nan")}, {}, w)  # no device trained


def test_a_loss_grown_by_orders_of_magnitude_is_diverged_not_complete(tmp_path):
    quad = {"dataset": "quadratic", "model": "quadratic", "N": "2", "K": "2", "B": "1"}
    cfg = build_config(None, None, {**quad, "local_steps": "5", "rounds": "10", "lr": "3"})
    meta, df = train(cfg, tmp_path)
    assert meta["status"] == "diverged" and len(df) < 11
    assert np.isfinite(df["dist_to_opt"]).all()  # finite, but 1000x the start


# ---------------------------------------------------------------- §4g concurrent sweeps


def test_the_final_summary_rereads_the_claims(tmp_path):
    from fedbench.results.locks import CLAIMS_DIR, _proc_start

    cfg = tiny()
    res = tmp_path / "r"
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        (res / CLAIMS_DIR).mkdir(parents=True)
        lock = {"pid": other.pid, "host": platform.node(), "proc_start": _proc_start(other.pid)}
        (res / CLAIMS_DIR / f"{run_id(cfg)}.lock").write_text(json.dumps(lock))
        plan = plan_sweep([cfg], res)
        assert plan.busy == [run_id(cfg)]  # another sweep is running it
        write_fake_run(res, cfg)  # ... and finishes it
    finally:
        other.kill()
        other.wait()
    report = run_sweep(plan, res, quiet=True)
    line = summary_line(report)
    assert "running elsewhere" not in line and "1 already done" in line
    # a claim gone with its run unfinished (that sweep was killed) is neither
    busy = SweepReport(Plan(busy=["x-1"]))
    recheck_busy(busy, res)
    assert (busy.plan.busy, busy.plan.done, busy.plan.left) == ([], [], ["x-1"])
    assert "left unfinished elsewhere" in summary_line(busy)


def test_records_without_fingerprint_or_version_still_match(tmp_path):
    """Records written before this change (no fingerprint, no method_version) count as done."""
    cfg = tiny()
    d = write_fake_run(tmp_path, cfg)
    meta = json.loads((d / "run.json").read_text())
    del meta["method_version"]
    (d / "run.json").write_text(json.dumps(meta))
    assert plan_sweep([cfg], tmp_path).done == [run_id(cfg)]
    assert config_hash(config_from_dict(meta["config"])) == config_hash(cfg)
    assert method_class("fedavg").version == 1
    with pytest.raises(FedbenchError):
        train(cfg, tmp_path)


def test_a_config_this_build_cannot_read_is_left_out_with_a_note(tmp_path, monkeypatch):
    """Hashing is lenient (unknown methods and values hash as given); should a stored config
    still fail to hash, its run is left out with a note, not silently matched to nothing."""
    import fedbench.results.index as index_module

    res = tmp_path / "r"
    run = write_fake_run(res, tiny())

    def unreadable(cfg, version=None):
        raise ValueError("a field this build cannot read")

    monkeypatch.setattr(index_module, "config_hash", unreadable)
    index = RunIndex(res)
    assert len(index) == 0
    assert any("cannot be read by this fedbench" in n and run.name in n for n in index.notes)
    with pytest.raises(FedbenchError, match="cannot read"):
        RunIndex(res, strict=True)
