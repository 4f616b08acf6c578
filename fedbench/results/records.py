"""One run's files: results/<run_id>/{run.json, rounds.parquet, partition.parquet}, written
atomically, read back, summarized.

rounds.parquet: one row per round (round 0 = the initial model, evaluated, not trained).
run.json: the full config and its hash, versions, device, status, times and the summary.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pandas as pd

from fedbench.atomic import atomic_write_bytes
from fedbench.errors import FedbenchError
from fedbench.results.schema import (  # noqa: F401 (their home before schema.py)
    SCHEMA_VERSION,
    SUMMARY_KEYS,
)
from fedbench.safe_read import PARQUET_CAP, Refused, entry_kind, open_regular, read_json

STATUSES = ("running", "complete", "diverged", "failed", "interrupted")


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
        "final_train_loss": _last(rounds, "train_loss"),
        "final_local_loss": _last(rounds, "local_loss"),
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


def _last(rounds: pd.DataFrame, col: str) -> float:
    """The last recorded value of a per-round column (NaN when there is none)."""
    if col not in rounds:
        return math.nan
    vals = rounds[col].dropna()
    return float(vals.iloc[-1]) if len(vals) else math.nan


def write_rounds(path: Path, table) -> None:
    """rounds.parquet, atomically (a pyarrow table in the schema of fedbench.results.schema)."""
    import io

    import pyarrow.parquet as pq

    buf = io.BytesIO()
    pq.write_table(table, buf)
    atomic_write_bytes(path, buf.getvalue())


def read_run(run_dir: Path) -> tuple[dict, pd.DataFrame]:
    """(run.json, rounds) of one run; a corrupt file raises a one-line FedbenchError."""
    meta_path, rounds_path = run_dir / "run.json", run_dir / "rounds.parquet"
    try:
        meta = read_json(meta_path)
    except Refused as e:
        raise FedbenchError(f"{e}; delete it or rerun the run") from None
    except FileNotFoundError:
        raise FedbenchError(f"{meta_path} is missing; rerun this run or delete {run_dir}") from None
    except json.JSONDecodeError as e:
        raise FedbenchError(f"{meta_path} is corrupt ({e}); rerun or delete {run_dir}") from None
    if not isinstance(meta, dict):
        raise FedbenchError(
            f"{meta_path} is corrupt (not a JSON object); rerun or delete {run_dir}"
        )
    try:
        with open_regular(rounds_path, PARQUET_CAP) as f:
            rounds = pd.read_parquet(f)
    except Refused as e:
        raise FedbenchError(f"{e}; delete it or rerun the run") from None
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


def _failed_before_training(run_dir: Path) -> dict | None:
    """run.json of a run that failed before writing any rounds (e.g. its dataset is missing):
    a record to list, not a corrupt one."""
    try:
        meta = read_json(run_dir / "run.json")
    except (OSError, ValueError):
        return None
    if (
        isinstance(meta, dict)
        and meta.get("status") == "failed"
        and not (run_dir / "rounds.parquet").exists()
    ):
        return meta
    return None


def run_dirs(results: Path) -> list[Path]:
    """Run folders (hidden ones, e.g. a run being written aside by --overwrite, are not runs)."""
    if not results.is_dir():
        raise FedbenchError(f"results directory {results} does not exist; run fedbench train first")
    return sorted(
        p
        for p in results.iterdir()
        if not p.name.startswith(".") and entry_kind(p) is None and (p / "run.json").exists()
    )


def _first_line(e: BaseException) -> str:
    """The first line of an error's message, cut to a few hundred characters (a huge value
    quoted in it stays out of the one-line message)."""
    line = (str(e).strip().splitlines() or [type(e).__name__])[0]
    return line if len(line) <= 300 else f"{line[:300]}..."
