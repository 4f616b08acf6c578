"""Fake run records for tests and benchmarks: the same files the runner writes (run.json with its
summary, rounds.parquet), with made-up curves, written in milliseconds."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

import fedbench
from fedbench.atomic import json_safe
from fedbench.config import RunConfig
from fedbench.identity import config_hash, method_version, run_id
from fedbench.results import SCHEMA_VERSION, summarize


def fake_rounds(
    rounds: int = 20,
    top: float = 0.8,
    speed: float = 5.0,
    loss0: float = 2.3,
    seconds: float = 0.1,
    k: int = 3,
    **columns,
) -> pd.DataFrame:
    """Saturating accuracy, decaying loss; extra per-round columns as arrays or callables of r."""
    r = np.arange(rounds + 1)
    decay = np.exp(-r / speed)
    df = pd.DataFrame(
        {
            "round": r,
            "test_acc": top - (top - 0.1) * decay,
            "test_loss": loss0 * decay + 0.3,
            "train_loss": loss0 * decay + 0.2,
            "local_loss": np.where(r > 0, loss0 * decay + 0.1, np.nan),
            "round_seconds": np.where(r > 0, seconds, 0.0),
            "cum_seconds": seconds * r,
            "clients": [list(range((i * k) % 7, (i * k) % 7 + k)) if i else [] for i in r],
        }
    )
    for name, v in columns.items():
        df[name] = v(r) if callable(v) else v
    return df


def write_fake_run(
    results: Path | str,
    cfg: RunConfig,
    rounds: pd.DataFrame | None = None,
    status: str = "complete",
    device_name: str = "fake device",
    error: str | None = None,
) -> Path:
    """results/<run_id>/{run.json, rounds.parquet} as the runner writes them."""
    rounds = fake_rounds(cfg.rounds) if rounds is None else rounds
    run_dir = Path(results) / run_id(cfg)
    run_dir.mkdir(parents=True, exist_ok=True)
    rounds.to_parquet(run_dir / "rounds.parquet", index=False)  # no fsync: fake data, fast
    meta = {
        "schema_version": SCHEMA_VERSION,
        "method_version": method_version(cfg.method),
        "rows": len(rounds),
        "run_id": run_id(cfg),
        "config": cfg.to_dict(),
        "config_hash": config_hash(cfg),
        "status": status,
        "fedbench_version": fedbench.__version__,
        "device": "cpu",
        "device_name": device_name,
        "host": "fake",
        "data": {"devices": cfg.num_clients},
        "started": "2026-01-01T00:00:00+00:00",
        "ended": "2026-01-01T00:01:00+00:00",
        "summary": summarize(rounds, cfg.target_acc),
    }
    if error:
        meta["error"] = error
    (run_dir / "run.json").write_text(json.dumps(json_safe(meta), indent=2, default=str))
    return run_dir


def curve_until(top: float, hit_round: int | None, target: float, rounds: int) -> pd.DataFrame:
    """A curve that first reaches `target` exactly at `hit_round` (never, if None)."""
    r = np.arange(rounds + 1)
    if hit_round is None:
        acc = np.minimum(target - 0.01, 0.1 + (target - 0.11) * r / max(rounds, 1))
    else:
        acc = np.where(r < hit_round, 0.1 + (target - 0.11) * r / hit_round, top)
    df = fake_rounds(rounds)
    df["test_acc"] = acc
    return df


__all__ = ["curve_until", "fake_rounds", "write_fake_run"]
