"""Nothing fedbench writes, renames or deletes is reached through a link it did not create: a
link planted in results/ (a `.<run_id>.old-XXXX` entry, a run folder, run.json, rounds.parquet,
a checkpoint, a claim, the claims folder, a store group) pointing to a folder outside results/
leaves that folder byte for byte as it was after sweep, train, table and publish."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest
from conftest import TINY, invoke

from fedbench.assembly import build_config
from fedbench.identity import run_id
from fedbench.results.locks import CLAIMS_DIR
from fedbench.testing import write_fake_run
from fedbench.training.checkpoint import FILE as CHECKPOINT

pytestmark = pytest.mark.usefixtures("one_thread", "private_cache")

SETS = {"rounds": "2", **TINY, "device": "cpu"}
ARGS = [x for k, v in SETS.items() for x in ("--set", f"{k}={v}")]


def tree_digest(folder: Path) -> dict[str, str]:
    """Every entry under folder (not following links): its kind and content hash."""
    out = {}
    for root, dirs, files in os.walk(folder):
        for name in sorted(dirs + files):
            p = Path(root) / name
            if p.is_symlink():
                out[str(p)] = "link:" + os.readlink(p)
            elif p.is_file():
                out[str(p)] = hashlib.sha256(p.read_bytes()).hexdigest()
            else:
                out[str(p)] = "dir"
    return out


@pytest.fixture
def outside(tmp_path):
    """A folder outside results/ with files named like a run's, which must stay as they are."""
    out = tmp_path / "outside"
    out.mkdir()
    for name in ("run.json", "rounds.parquet", "partition.parquet", CHECKPOINT, "x.lock"):
        (out / name).write_bytes(b"precious " + name.encode())
    (out / ".run.json.1234.tmp").write_bytes(b"precious tmp")
    return out


def _cfg(seed=0):
    return build_config(None, None, {**SETS, "seed": str(seed)})


def _commands(res: Path, store: Path) -> list[list]:
    return [
        ["train", *ARGS, "--results", res, "--threads", "1", "--quiet"],
        ["sweep", "--seeds", "0,1", *ARGS, "--results", res, "--threads", "1", "--quiet"],
        ["table", "summary", "--results", res, "--on-error", "skip"],
        ["publish", "--run", run_id(_cfg(1)), "--results", res, "--store", store],
    ]


def _run_all(res: Path, store: Path) -> list:
    outs = []
    for cmd in _commands(res, store):
        r = invoke(*cmd)
        assert "Traceback" not in r.output, (cmd, r.output)
        outs.append(r)
    return outs


def test_a_run_folder_linked_elsewhere_is_refused_and_untouched(tmp_path, outside):
    res = tmp_path / "r"
    res.mkdir()
    (res / run_id(_cfg(0))).symlink_to(outside, target_is_directory=True)
    before = tree_digest(outside)
    outs = _run_all(res, tmp_path / "store")
    assert tree_digest(outside) == before
    assert outs[0].exit_code == 2 and "is a link" in outs[0].output, outs[0].output
    assert (res / run_id(_cfg(1)) / "run.json").is_file()  # the sweep ran the other run


def test_an_old_entry_linked_elsewhere_is_never_put_back(tmp_path, outside):
    """A `.<run_id>.old-XXXX` link (what a killed overwrite leaves, planted): the next claim
    removes the link and never moves it into place as the run folder."""
    res = tmp_path / "r"
    res.mkdir()
    planted = res / f".{run_id(_cfg(0))}.old-dead"
    planted.symlink_to(outside, target_is_directory=True)
    before = tree_digest(outside)
    outs = _run_all(res, tmp_path / "store")
    assert tree_digest(outside) == before
    assert outs[0].exit_code == 0, outs[0].output
    assert not planted.is_symlink() and not (res / run_id(_cfg(0))).is_symlink()


@pytest.mark.parametrize("name", ["run.json", "rounds.parquet", "partition.parquet", CHECKPOINT])
def test_files_in_a_run_folder_linked_elsewhere_are_replaced_not_written_through(
    tmp_path, outside, name
):
    res = tmp_path / "r"
    cfg = _cfg(0)
    run_dir = write_fake_run(res, cfg, status="interrupted")
    (run_dir / name).unlink(missing_ok=True)
    (run_dir / name).symlink_to(outside / name)
    (run_dir / ".run.json.1234.tmp").symlink_to(outside / ".run.json.1234.tmp")
    before = tree_digest(outside)
    outs = _run_all(res, tmp_path / "store")
    assert tree_digest(outside) == before
    assert outs[0].exit_code == 0, outs[0].output  # the run was trained again, in results/
    assert (run_dir / "run.json").is_file() and not (run_dir / name).is_symlink()


def test_a_claims_folder_linked_elsewhere_is_refused(tmp_path, outside):
    res = tmp_path / "r"
    res.mkdir()
    (res / CLAIMS_DIR).symlink_to(outside, target_is_directory=True)
    before = tree_digest(outside)
    outs = _run_all(res, tmp_path / "store")
    assert tree_digest(outside) == before
    assert outs[0].exit_code == 2 and CLAIMS_DIR in outs[0].output, outs[0].output
    assert not any(p.name.endswith(".lock") for p in outside.iterdir() if p.name != "x.lock")


def test_a_claim_or_mutex_linked_elsewhere_is_not_written_through(tmp_path, outside):
    res = tmp_path / "r"
    claims = res / CLAIMS_DIR
    claims.mkdir(parents=True)
    (claims / f"{run_id(_cfg(0))}.lock").symlink_to(outside / "x.lock")
    (claims / ".mutex").symlink_to(outside / "mutex-made-here")
    before = tree_digest(outside)
    outs = _run_all(res, tmp_path / "store")
    assert tree_digest(outside) == before
    assert not (outside / "mutex-made-here").exists()
    assert outs[0].exit_code == 2 and ".mutex" in outs[0].output, outs[0].output


def test_a_store_group_linked_elsewhere_is_refused(tmp_path, outside):
    res, store = tmp_path / "r", tmp_path / "store"
    write_fake_run(res, _cfg(1))
    store.mkdir()
    (store / "runs").symlink_to(outside, target_is_directory=True)
    before = tree_digest(outside)
    r = invoke("publish", "--run", run_id(_cfg(1)), "--results", res, "--store", store)
    assert r.exit_code == 2 and "is a link" in r.output, r.output
    assert tree_digest(outside) == before
