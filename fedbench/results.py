"""Run records: results/<run_id>/{run.json, rounds.parquet, partition.parquet}, written atomically.

rounds.parquet: one row per round (round 0 = the initial model, evaluated, not trained).
run.json: the full config and its hash, versions, device, status, times and the summary.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd

from fedbench.errors import FedbenchError

STATUSES = ("running", "complete", "diverged", "failed")


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write to a temp file beside `path`, fsync, rename: a crash never leaves half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_json(path: Path, obj: Any) -> None:
    atomic_write_bytes(path, json.dumps(obj, indent=2, default=str).encode())


def atomic_write_parquet(path: Path, df: pd.DataFrame) -> None:
    import io

    buf = io.BytesIO()
    df.to_parquet(buf, index=False)
    atomic_write_bytes(path, buf.getvalue())


def summarize(rounds: pd.DataFrame, target: float | None) -> dict[str, Any]:
    """Best accuracy, rounds and seconds to target, mean seconds per training round."""
    trained = rounds[rounds["round"] > 0]
    acc = rounds["test_acc"].dropna() if "test_acc" in rounds else pd.Series(dtype=float)
    out: dict[str, Any] = {
        "rounds_run": int(trained["round"].max()) if len(trained) else 0,
        "best_acc": float(acc.max()) if len(acc) else math.nan,
        "final_acc": float(acc.iloc[-1]) if len(acc) else math.nan,
        "mean_round_seconds": float(trained["round_seconds"].mean()) if len(trained) else math.nan,
        "total_seconds": float(trained["round_seconds"].sum()) if len(trained) else 0.0,
        "target_acc": target,
        "rounds_to_target": None,
        "seconds_to_target": None,
    }
    if target is not None and "test_acc" in rounds:
        hit = rounds[rounds["test_acc"] >= target]
        if len(hit):
            first = hit.iloc[0]
            out["rounds_to_target"] = int(first["round"])
            out["seconds_to_target"] = float(first["cum_seconds"])
    return out


def read_run(run_dir: Path) -> tuple[dict, pd.DataFrame]:
    """(run.json, rounds) of one run; a corrupt file raises a one-line FedbenchError."""
    meta_path, rounds_path = run_dir / "run.json", run_dir / "rounds.parquet"
    try:
        meta = json.loads(meta_path.read_text())
    except FileNotFoundError:
        raise FedbenchError(f"{meta_path} is missing; rerun this run or delete {run_dir}") from None
    except json.JSONDecodeError as e:
        raise FedbenchError(f"{meta_path} is corrupt ({e}); rerun or delete {run_dir}") from None
    try:
        rounds = pd.read_parquet(rounds_path)
    except FileNotFoundError:
        raise FedbenchError(
            f"{rounds_path} is missing; rerun this run or delete {run_dir}"
        ) from None
    except Exception as e:  # pyarrow raises several types for truncated/garbled files
        first_line = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise FedbenchError(
            f"{rounds_path} is corrupt or truncated ({first_line}); rerun or delete {run_dir}"
        ) from None
    return meta, rounds


def run_dirs(results: Path) -> list[Path]:
    if not results.is_dir():
        raise FedbenchError(f"results directory {results} does not exist; run fedbench train first")
    return sorted(p for p in results.iterdir() if (p / "run.json").exists())


def load_summaries(results: Path, on_error: str = "fail") -> tuple[pd.DataFrame, list[str]]:
    """One row per run: config fields that tell runs apart, and the summary.

    on_error="skip" leaves out unreadable runs and returns their messages; "fail" raises.
    """
    rows, problems = [], []
    for d in run_dirs(results):
        try:
            meta, rounds = read_run(d)
        except FedbenchError as e:
            if on_error == "skip":
                problems.append(str(e))
                continue
            raise
        cfg = meta.get("config", {})
        summary = summarize(rounds, cfg.get("target_acc"))
        rows.append(
            {
                "run_id": meta.get("run_id", d.name),
                "status": meta.get("status"),
                "preset": cfg.get("preset"),
                "method": cfg.get("method"),
                "dataset": cfg.get("dataset"),
                "seed": cfg.get("seed"),
                "method_params": json.dumps(cfg.get("method_params", {}), sort_keys=True),
                **summary,
            }
        )
    return pd.DataFrame(rows), problems
