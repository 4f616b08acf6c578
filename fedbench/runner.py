"""One run, start to finish: engine rounds, evaluation, records on disk."""

from __future__ import annotations

import math
import platform
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd
import torch

import fedbench
from fedbench.claims import RunClaim
from fedbench.config import RunConfig
from fedbench.devices import device_name
from fedbench.engine import Engine
from fedbench.errors import FedbenchError
from fedbench.results import atomic_write_json, atomic_write_parquet, summarize

FLUSH_SECONDS = 30.0  # rewrite rounds.parquet at least this often during a run


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def existing_status(run_dir: Path) -> str | None:
    import json

    try:
        return json.loads((run_dir / "run.json").read_text()).get("status")
    except (FileNotFoundError, ValueError):
        return None


class RunExists(FedbenchError):
    """The run already finished (complete or diverged) and overwrite was not asked for."""


def check_not_done(cfg: RunConfig, results: Path | str, overwrite: bool) -> None:
    """Refuse to redo a finished run unless asked; an unfinished one is simply run again."""
    run_dir = Path(results) / cfg.run_id()
    status = existing_status(run_dir)
    if status in ("complete", "diverged") and not overwrite:
        raise RunExists(
            f"run {run_dir.name} already exists in {run_dir.parent} (status {status}); "
            "pass --overwrite to run it again"
        )


def rounds_frame(rows: list[dict]) -> pd.DataFrame:
    """Rows to a frame; per-round fields a row lacks (round 0, skipped evaluations) become
    None in object columns (Parquet list columns reject NaN) and NaN in numeric ones."""
    df = pd.DataFrame(rows)
    for col in df.columns[df.dtypes.map(lambda t: t.kind == "O")]:
        df[col] = df[col].astype(object).where(df[col].notna(), None)
    return df


def train(
    cfg: RunConfig,
    results: Path | str = "results",
    overwrite: bool = False,
    on_round: Callable[[dict], None] | None = None,
    engine: Engine | None = None,
) -> tuple[dict, pd.DataFrame]:
    """Run cfg, writing results/<run_id>/. Returns (run.json contents, rounds).

    The run is claimed first (fedbench.claims), so two processes never run the same config at
    once; a claim held by a live process raises RunBusy. A run left unfinished by a killed
    process starts again from round 0: its leftover temp files and rounds are removed first.
    """
    with RunClaim(results, cfg.run_id()) as claim:
        check_not_done(cfg, results, overwrite)

        def beat(rec: dict) -> None:
            claim.heartbeat()
            if on_round:
                on_round(rec)

        return _train_claimed(cfg, Path(results), beat, engine)


def _start_meta(cfg: RunConfig) -> dict:
    return {
        "run_id": cfg.run_id(),
        "config": cfg.to_dict(),
        "config_hash": cfg.config_hash(),
        "status": "running",
        "fedbench_version": fedbench.__version__,
        "torch_version": torch.__version__,
        "python_version": platform.python_version(),
        "host": platform.node(),
        "started": _now(),
    }


def _clean_run_dir(run_dir: Path) -> None:
    """Remove what an earlier, killed attempt left: temp files and its partial rounds."""
    for p in run_dir.glob(".*.tmp"):
        p.unlink(missing_ok=True)
    (run_dir / "rounds.parquet").unlink(missing_ok=True)


def _train_claimed(
    cfg: RunConfig, results: Path, on_round: Callable[[dict], None], engine: Engine | None
) -> tuple[dict, pd.DataFrame]:
    run_dir = results / cfg.run_id()
    torch.manual_seed(cfg.seed)  # nothing should draw from the global RNG; this is a backstop
    meta = _start_meta(cfg)
    run_dir.mkdir(parents=True, exist_ok=True)
    _clean_run_dir(run_dir)
    try:
        eng = engine if engine is not None else Engine(cfg)
    except BaseException as e:  # e.g. a dataset that is not there: recorded, then raised
        meta.update(status="failed", error=_error_line(e), ended=_now())
        atomic_write_json(run_dir / "run.json", meta)
        raise
    meta.update(
        device=str(eng.device),
        device_name=device_name(eng.device),
        data=eng.data.info,
        model_params=eng.model.dim,
        threads=torch.get_num_threads(),  # torch CPU threads (fedbench.threads' choice)
    )
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

    rows: list[dict] = []
    first = {
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
    rows.append(first)
    on_round(first)
    cum, last_flush = 0.0, time.monotonic()
    try:
        for r in range(1, cfg.rounds + 1):
            rec = eng.run_round(r)
            cum += rec["round_seconds"]
            rec["cum_seconds"] = cum
            if r % cfg.eval_every == 0 or r == cfg.rounds:
                rec.update(eng.eval_record())
            rows.append(rec)
            on_round(rec)
            if not math.isfinite(rec["local_loss"]) and rec["n_full"] + rec["n_partial"] > 0:
                meta["status"] = "diverged"
                break
            if cfg.stop_at_target and rec.get("test_acc", -1.0) >= cfg.target_acc:
                meta["status"] = "complete"
                meta["stopped_at_target"] = r
                break
            if time.monotonic() - last_flush > FLUSH_SECONDS:
                atomic_write_parquet(run_dir / "rounds.parquet", rounds_frame(rows))
                last_flush = time.monotonic()
        else:
            meta["status"] = "complete"
    except BaseException as e:
        meta["status"] = "failed"
        meta["error"] = _error_line(e)
        raise
    finally:
        df = rounds_frame(rows)
        atomic_write_parquet(run_dir / "rounds.parquet", df)
        meta["ended"] = _now()
        meta["summary"] = summarize(df, cfg.target_acc)
        atomic_write_json(run_dir / "run.json", meta)
    return meta, df


def _error_line(e: BaseException) -> str:
    text = f"{type(e).__name__}: {e}".strip()
    return text.splitlines()[0] if text else type(e).__name__
