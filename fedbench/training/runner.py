"""One run, start to finish: engine rounds, evaluation, records on disk."""

from __future__ import annotations

import json
import math
import os
import platform
import shutil
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd
import torch

from fedbench import identity, plugins, version
from fedbench.atomic import (
    DiskFull,
    atomic_write_json,
    atomic_write_parquet,
    json_safe,
    refuse_links,
)
from fedbench.config import RunConfig
from fedbench.devices import device_name
from fedbench.errors import FedbenchError
from fedbench.results import ANY, FINISHED, summarize
from fedbench.results.locks import RunClaim
from fedbench.results.schema import rounds_table
from fedbench.training import checkpoint as checkpoints
from fedbench.training import cpu_clock, signals
from fedbench.training.checkpoint import Checkpointer, Policy, Progress
from fedbench.training.engine import Engine
from fedbench.training.folders import (
    _aside,
    _clean_run_dir,
    _finished_meta,
    _recover,
    run_folder,
    swap_in,
)

FLUSH_SECONDS = 30.0  # rewrite rounds.parquet at least this often during a run


DIVERGED_FACTOR = 1e3  # a loss above this many times max(|its first value|, 1) has diverged


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class RunExists(FedbenchError):
    """The run already finished (complete or diverged) and overwrite was not asked for."""


def check_not_done(
    cfg: RunConfig,
    results: Path | str,
    overwrite: bool,
    fingerprint: str | None = None,
    own_folders: bool = False,
) -> None:
    """Refuse to redo a finished run unless asked; an unfinished one is simply run again.

    Done means: a finished record with this identity (fedbench.identity), readable rounds with
    the rows run.json says, on data with this fingerprint (None: on any data; a record from
    before fingerprints matches any). own_folders: look only at results/<run_id>* (the cheap
    check under the claim; the full index was read before)."""
    from fedbench.results import RunIndex

    if overwrite:
        return
    prefix = identity.run_id(cfg) if own_folders else None
    index = RunIndex(results, on_error="skip", must_exist=False, prefix=prefix)
    fp = fingerprint if fingerprint is not None else ANY
    rec = index.finished(identity.config_hash(cfg), fingerprint=fp)
    if rec is not None:
        raise RunExists(
            f"run {identity.run_id(cfg)} already exists in {rec.run_dir} (status {rec.status}); "
            "pass --overwrite to run it again"
        )


def write_rounds(run_dir: Path, rows: list[dict], run_id: str):
    """rounds.parquet in the one schema of every run (fedbench.results.schema: run_id, the
    common columns, every method's record fields, null where a row lacks a field)."""
    from fedbench.results.records import write_rounds as write

    table = rounds_table(rows, run_id)
    write(run_dir / "rounds.parquet", table)
    return table


def train(
    cfg: RunConfig,
    results: Path | str = "results",
    overwrite: bool = False,
    on_round: Callable[[dict], None] | None = None,
    engine: Engine | None = None,
    checkpoint: Policy | None = None,
) -> tuple[dict, pd.DataFrame]:
    """Run cfg, writing results/<run_id>/. Returns (run.json contents, rounds).

    The run is claimed first (fedbench.results.locks), so two processes never run the same config at
    once; a claim held by a live process raises RunBusy. A run left unfinished (killed,
    interrupted, failed) resumes from its checkpoint (fedbench.training.checkpoint; `checkpoint`
    is the policy, default Policy.from_env()) when it has one, else starts again from round 0;
    leftover temp files are removed first. Overwriting a finished run writes the new one aside
    and swaps it in at the end, so a kill leaves the old result as it was; overwrite never
    resumes. A signal's stop (fedbench.training.signals) is recorded as status interrupted and
    raised again; any other error after the claim is recorded (status failed, the error's first
    line) unless that would replace a finished run.
    """
    results = Path(results)
    run_id = identity.run_id(cfg)
    refuse_links(results / run_id, results)  # a planted link: nothing is written through it
    with RunClaim(results, run_id) as claim:
        _recover(results, run_id)

        def beat(rec: dict) -> None:
            claim.heartbeat()
            if on_round:
                on_round(rec)

        meta = _start_meta(cfg)
        begun = cpu_clock.start()
        target = results / run_id
        try:
            eng = engine if engine is not None else Engine(cfg)
            fp = eng.data.info.get("fingerprint")
            check_not_done(cfg, results, overwrite, fp, own_folders=True)
            target = run_folder(results, run_id, fp)
            policy = checkpoint if checkpoint is not None else Policy.from_env()
            return _train_claimed(cfg, eng, meta, target, beat, overwrite, policy, begun)
        except RunExists:
            raise
        except BaseException as e:
            recorded = _record_failure(target, meta, e)
            if isinstance(e, DiskFull):
                raise _disk_full(e, run_id, recorded) from None
            e.recorded = recorded  # the sweep's summary says whether run.json tells of it
            raise


def _disk_full(e: DiskFull, run_id: str, recorded: bool) -> DiskFull:
    """The one line of a full disk: where, how much is free, what was kept, what to do."""
    kept = (
        f"run {run_id} is recorded failed in its run.json; what it wrote before is kept"
        if recorded
        else f"run {run_id} could not be recorded in its run.json (none says it is running)"
    )
    out = DiskFull(e.folder, f"{kept}; free space and run the same command again")
    out.recorded = recorded
    return out


def _start_meta(cfg: RunConfig) -> dict:
    from fedbench.identity import method_version
    from fedbench.results import SCHEMA_VERSION
    from fedbench.results.schema import normalise_meta

    return normalise_meta({
        "schema_version": SCHEMA_VERSION,
        "run_id": identity.run_id(cfg),
        "config": cfg.to_dict(),
        "config_hash": identity.config_hash(cfg),
        "method_version": method_version(cfg.method),
        "plugins": plugin_records(cfg),
        "status": "running",
        "fedbench_version": version.__version__,
        "torch_version": torch.__version__,
        "python_version": platform.python_version(),
        "host": platform.node(),
        "started": _now(),
    })  # fmt: skip


def plugin_records(cfg: RunConfig) -> list[dict]:
    """The plugins (file, SHA-256) that implement this run's method, dataset or model; empty
    for a run of built-in names (fedbench.plugins)."""
    from fedbench.data.registry import DATASETS
    from fedbench.methods import METHODS
    from fedbench.models.registry import MODELS

    if not plugins.LOADED:
        return []
    found = [METHODS.get(cfg.method), getattr(DATASETS.get(cfg.dataset), "load", None),
             MODELS.get(cfg.model)]  # fmt: skip
    return plugins.records_for(getattr(x, "__module__", None) for x in found)


# ---------------------------------------------------------------- recording how it ended


def _record_failure(target: Path, meta: dict, e: BaseException) -> bool:
    """Write a failed (or, for a signal's stop, interrupted) run.json into target, unless target
    holds a finished run (which stands). Returns whether target's run.json now says how the
    run ended (False: a link, never written through, or a write the system refused)."""
    if os.path.islink(target):
        return False
    if _finished_meta(target) is not None:
        return True
    meta.update(status=_stopped_status(e), error=_error_line(e), ended=_now())
    try:
        atomic_write_json(target / "run.json", meta)
    except DiskFull:  # no room for a new file: the old one's blocks still hold the record
        return _rewrite_in_place(target / "run.json", meta)
    except OSError:
        return False
    return True


def _rewrite_in_place(path: Path, meta: dict) -> bool:
    """run.json written over its own bytes, padded with spaces (valid JSON), when the disk has
    no room for a new file: a full disk must not leave a run `running`. Only over a regular
    file no shorter than the record, so no block is allocated and no old byte is left."""
    data = json.dumps(json_safe(meta), separators=(",", ":"), default=str).encode()
    flags = os.O_WRONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return False
    try:
        info = os.fstat(fd)
        size = info.st_size
        if not stat.S_ISREG(info.st_mode) or size < len(data):
            return False
        os.pwrite(fd, data + b" " * (size - len(data)), 0)
        os.fsync(fd)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


# ---------------------------------------------------------------- the run


def _finite_within(v, base: float | None) -> bool:
    if v is None:
        return True
    v = float(v)
    limit = DIVERGED_FACTOR * max(abs(base), 1.0) if base is not None else math.inf
    return math.isfinite(v) and abs(v) <= limit


def diverged(rec: dict, base: dict, w: torch.Tensor) -> bool:
    """Whether the run has diverged (it is then recorded `diverged`, not `complete`): the model
    has a non-finite entry, or a loss is non-finite or above DIVERGED_FACTOR (1000) times
    max(|its first value|, 1): the test loss (|x - x*| for the quadratic) against round 0's,
    the devices' local training loss against the first round's. `base` keeps first values."""
    if not bool(torch.isfinite(w).all()):
        return True
    keys = ["test_loss", "dist_to_opt"]
    if rec.get("n_full", 0) + rec.get("n_partial", 0) > 0:
        keys.append("local_loss")
    for key in keys:
        v = rec.get(key)
        if v is not None and key not in base and math.isfinite(float(v)):
            base[key] = float(v)
        if not _finite_within(v, base.get(key)):
            return True
    return False


def _train_claimed(
    cfg: RunConfig,
    eng: Engine,
    meta: dict,
    final: Path,
    on_round: Callable[[dict], None],
    overwrite: bool,
    policy: Policy,
    begun: tuple = (0.0, None),
) -> tuple[dict, pd.DataFrame]:
    torch.manual_seed(cfg.seed)  # nothing should draw from the global RNG; this is a backstop
    refuse_links(final, final.parent)  # <run_id>-d<fingerprint> too
    overwriting = _finished_meta(final) is not None
    meta["run_id"] = final.name  # <run_id>-d<fingerprint> for a second run on other data
    run_dir = _aside(final) if overwriting else final
    run_dir.mkdir(parents=True, exist_ok=True)
    progress = None if overwrite else checkpoints.resume(run_dir, cfg, eng)
    _clean_run_dir(run_dir, resuming=progress is not None)
    try:
        saver = Checkpointer(run_dir, policy, cfg, eng)
        meta, df = _rounds(_Attempt(cfg, eng, meta, run_dir, on_round, saver, begun), progress)
    except BaseException:
        if overwriting:  # the old, finished run stands
            shutil.rmtree(run_dir, ignore_errors=True)
        raise
    if overwriting:
        swap_in(run_dir, final)
    return meta, df


def _start(cfg: RunConfig, eng: Engine, meta: dict, run_dir: Path, progress: Progress | None):
    """run.json (status running), partition.parquet and the rows so far, written before the
    first round; the progress to go on from (round 0 evaluated, or the checkpoint's)."""
    meta.update(
        device=str(eng.device),
        device_name=device_name(eng.device),
        data=eng.data.info,
        model_params=eng.model.dim,
        threads=torch.get_num_threads(),  # torch CPU threads (fedbench.training.threads' choice)
        layout=eng.model.layout_name,  # how the K devices run (fedbench/models/layouts.py)
        tf32=eng.tf32,  # CUDA float32 work in TF32 (FEDBENCH_TF32; docs/gpu.md)
        # runs trained as one stack (fedbench.training.stack); above 1, seconds include stack-mates'
        stack_size=getattr(getattr(eng, "stack", None), "size", 1),
    )
    if progress is None:
        progress = Progress(rows=[_first_row(cfg, eng)], started=meta["started"])
        diverged(progress.rows[0], progress.base, eng.w)  # the first values, for the growth rule
    else:
        meta.update(started=progress.started or meta["started"], resumed=progress.resumed)
    atomic_write_json(run_dir / "run.json", meta)
    atomic_write_parquet(
        run_dir / "partition.parquet",
        pd.DataFrame(
            {
                "client": torch.cat(
                    [torch.full((len(ix),), c) for c, ix in enumerate(eng.data.client_indices)]
                ).numpy(),
                "index": torch.cat(eng.data.client_indices).numpy(),
            }
        ),
    )
    # readers see the run's rounds so far from its start (fedbench table summary beside it)
    _write_rows(run_dir, progress.rows, meta["run_id"])
    return progress


def _write_rows(run_dir: Path, rows: list[dict], run_id: str) -> pd.DataFrame:
    """rounds.parquet of the rows so far in the one schema (atomic); returns the frame written."""
    return write_rounds(run_dir, rows, run_id).to_pandas()


def _first_row(cfg: RunConfig, eng: Engine) -> dict:
    return {
        "round": 0,
        "lr": cfg.lr,
        "round_seconds": 0.0,
        "cum_seconds": 0.0,
        "n_full": 0,
        "n_partial": 0,
        "n_dropped": 0,
        "grad_evals": 0,
        "clients": [],
        "units": [],
        "dropped": [],
        **eng.eval_record(),
    }


@dataclass
class _Attempt:
    """One attempt at a run: what its rounds read and write."""

    cfg: RunConfig
    eng: Engine
    meta: dict
    run_dir: Path
    on_round: Callable[[dict], None]
    saver: Checkpointer
    begun: tuple  # cpu_clock.start() at the run's start


def _rounds(at: _Attempt, progress: Progress | None) -> tuple[dict, pd.DataFrame]:
    meta = at.meta
    progress = _start(at.cfg, at.eng, meta, at.run_dir, progress)
    rows = progress.rows
    try:
        with signals.checking():
            at.on_round(rows[-1])
            _round_loop(at, progress)
    except BaseException as e:
        meta["status"] = _stopped_status(e)
        meta["error"] = _error_line(e)
        raise
    finally:
        df = _write_rows(at.run_dir, rows, meta["run_id"])
        meta["ended"] = _now()
        meta.update(cpu_clock.finish(at.begun, meta.get("stack_size"), bool(meta.get("resumed"))))
        meta["rows"] = len(df)
        meta["summary"] = summarize(df, at.cfg.target_acc)
        if meta["status"] in FINISHED:
            at.saver.remove()
            meta.pop("checkpoint_round", None)
        else:  # where the next attempt resumes (None: from round 0)
            meta["checkpoint_round"] = _kept_round(at.saver, progress)
        atomic_write_json(at.run_dir / "run.json", meta)
    return meta, df


def _round_loop(at: _Attempt, progress: Progress) -> None:
    """Rounds progress.round + 1 .. cfg.rounds; sets meta's status when the run ends on its own.
    After each round: a checkpoint when due (or when a signal asks the run to stop, which then
    stops it), the rounds so far at least every FLUSH_SECONDS."""
    cfg, eng, meta, saver = at.cfg, at.eng, at.meta, at.saver
    rows, last_flush = progress.rows, time.monotonic()
    for r in range(progress.round + 1, cfg.rounds + 1):
        signals.check()  # asked to stop before this round began (e.g. while loading)
        rec = eng.run_round(r)
        progress.cum_seconds += rec["round_seconds"]
        rec["cum_seconds"] = progress.cum_seconds
        if r % cfg.eval_every == 0 or r == cfg.rounds:
            rec.update(eng.eval_record())
        rows.append(rec)
        if r == progress.round + 1:  # a field no method declares stops the run now, not at its end
            rounds_table(rows, meta["run_id"])
        at.on_round(rec)
        if diverged(rec, progress.base, eng.w):
            meta["status"] = "diverged"
            return
        if cfg.stop_at_target and rec.get("test_acc", -1.0) >= cfg.target_acc:
            meta["status"] = "complete"
            meta["stopped_at_target"] = r
            return
        stopping = signals.requested() is not None and r < cfg.rounds
        if (stopping or (r < cfg.rounds and saver.due(r))) and saver.save(progress):
            meta["checkpoint_round"] = r  # readers see where the run would resume
            atomic_write_json(at.run_dir / "run.json", meta)
            last_flush = 0.0  # the rounds on disk go with the checkpoint
        if stopping:
            signals.check()
        if time.monotonic() - last_flush > FLUSH_SECONDS:
            _write_rows(at.run_dir, rows, meta["run_id"])
            last_flush = time.monotonic()
    meta["status"] = "complete"


def _kept_round(saver: Checkpointer, progress: Progress) -> int | None:
    """The round of the checkpoint in the run folder: written now, or resumed from."""
    if saver.saved_round is not None:
        return saver.saved_round
    return progress.resumed[-1] if progress.resumed else None


def _stopped_status(e: BaseException) -> str:
    """interrupted for a signal's stop (Ctrl-C, SIGTERM), failed for anything else."""
    return "interrupted" if isinstance(e, KeyboardInterrupt) else "failed"


def _error_line(e: BaseException) -> str:
    text = f"{type(e).__name__}: {e}".strip()
    return text.splitlines()[0] if text else type(e).__name__
