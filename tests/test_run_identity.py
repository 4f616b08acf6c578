"""A run's identity survives upgrades and tells data apart: new parameters and config fields at
their old behaviour keep stored runs, changed defaults need a version bump, other data files are
another run, older records get a note, a copied run folder is one run."""

import dataclasses
import gzip
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from conftest import TINY, TINY_SETS, invoke, one_line_error, tiny

from fedbench.assembly import build_config
from fedbench.config import RunConfig, config_from_dict
from fedbench.errors import FedbenchError
from fedbench.identity import config_hash, run_id
from fedbench.methods import METHODS, method_class
from fedbench.results import RunIndex, load_summaries
from fedbench.sweep import plan_sweep
from fedbench.testing import write_fake_run
from fedbench.training.runner import RunExists, train

GOLDEN = Path(__file__).parent / "golden" / "method_versions.json"
pytestmark = pytest.mark.usefixtures("one_thread", "private_cache")


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
