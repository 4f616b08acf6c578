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


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_FILE_MODE = 0o666 & ~_umask()  # what open() would give; mkstemp's 0600 hides shared results


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write to a temp file beside `path`, fsync, rename: a crash never leaves half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, _FILE_MODE)
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


def _failed_before_training(run_dir: Path) -> dict | None:
    """run.json of a run that failed before writing any rounds (e.g. its dataset is missing):
    a record to list, not a corrupt one."""
    try:
        meta = json.loads((run_dir / "run.json").read_text())
    except (OSError, ValueError):
        return None
    if meta.get("status") == "failed" and not (run_dir / "rounds.parquet").exists():
        return meta
    return None


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
            meta = _failed_before_training(d)
            if meta is None:
                if on_error == "skip":
                    problems.append(str(e))
                    continue
                raise
            rounds = pd.DataFrame({"round": [], "round_seconds": []})
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


# ---------------------------------------------------------------- the index of a results folder

FINISHED = ("complete", "diverged")


class RunRecord:
    """One run folder as recorded in its run.json (rounds.parquet is read only on demand)."""

    __slots__ = ("run_dir", "meta", "key")

    def __init__(self, run_dir: Path, meta: dict, key: str | None):
        self.run_dir, self.meta, self.key = run_dir, meta, key

    @property
    def run_id(self) -> str:
        return self.meta.get("run_id", self.run_dir.name)

    @property
    def status(self) -> str | None:
        return self.meta.get("status")

    @property
    def config(self) -> dict:
        return self.meta.get("config", {})

    @property
    def summary(self) -> dict:
        return self.meta.get("summary") or {}

    @property
    def rounds_path(self) -> Path:
        return self.run_dir / "rounds.parquet"


def config_key(config: dict) -> str | None:
    """The canonical hash of a stored config (see RunConfig.config_hash), None if unreadable."""
    from fedbench.config import config_from_dict

    try:
        return config_from_dict(config).config_hash()
    except Exception:  # a record from a very different version: matches nothing
        return None


class RunIndex:
    """Every run under a results folder, found by what it ran (its config), not by its folder
    name. Reads only the run.json files, so indexing a thousand runs takes a fraction of a second.

    on_error="fail" raises a one-line FedbenchError naming the first unreadable file;
    "skip" leaves such runs out and lists what was skipped in `problems`.
    """

    def __init__(self, results: Path | str, on_error: str = "fail", must_exist: bool = True):
        self.results = Path(results)
        self.on_error = on_error
        self.problems: list[str] = []
        self.by_key: dict[str, list[RunRecord]] = {}
        self._valid: dict[Path, bool] = {}
        self._meta: dict = {}  # run dir -> Parquet footer read by rounds_ok (read once)
        if not self.results.is_dir():
            if must_exist:
                raise FedbenchError(
                    f"results directory {self.results} does not exist; "
                    "run fedbench sweep (or fedbench train) first, or pass --results"
                )
            return
        for d in sorted(self.results.iterdir()):
            path = d / "run.json"
            if not path.is_file():
                continue
            try:
                meta = json.loads(path.read_text())
                if not isinstance(meta, dict):
                    raise ValueError("not a JSON object")
            except (ValueError, OSError) as e:
                self._problem(f"{path} is corrupt ({str(e).splitlines()[0]}); rerun or delete {d}")
                continue
            rec = RunRecord(d, meta, config_key(meta.get("config", {})))
            if rec.key is not None:
                self.by_key.setdefault(rec.key, []).append(rec)

    def _problem(self, message: str) -> None:
        if self.on_error == "skip":
            self.problems.append(message)
        else:
            raise FedbenchError(f"{message} (or pass --on-error skip)")

    def __len__(self) -> int:
        return sum(len(v) for v in self.by_key.values())

    def records(self):
        for recs in self.by_key.values():
            yield from recs

    def find(self, key: str) -> RunRecord | None:
        """The record of a config: a finished one if any (the latest), else the latest other."""
        recs = self.by_key.get(key, [])
        if not recs:
            return None
        finished = [r for r in recs if r.status in FINISHED]
        pool = finished or recs
        return max(pool, key=lambda r: str(r.meta.get("ended") or r.meta.get("started") or ""))

    def rounds_ok(self, rec: RunRecord) -> bool:
        """Whether rounds.parquet is there and its footer reads (cheap: metadata only)."""
        if rec.run_dir not in self._valid:
            import pyarrow.parquet as pq

            try:
                self._meta[rec.run_dir] = pq.read_metadata(rec.rounds_path)
                ok = True
            except Exception:
                ok = False
            self._valid[rec.run_dir] = ok
        return self._valid[rec.run_dir]

    def finished(self, key: str, check_files: bool = True) -> RunRecord | None:
        """The finished (complete or diverged) run of a config with readable rounds, or None.
        An unreadable rounds.parquet is reported through on_error."""
        rec = self.find(key)
        if rec is None or rec.status not in FINISHED:
            return None
        if check_files and not self.rounds_ok(rec):
            self._problem(
                f"{rec.rounds_path} is missing, corrupt or truncated; "
                f"rerun it (fedbench sweep reruns it) or delete {rec.run_dir}"
            )
            return None
        return rec

    def rounds(self, rec: RunRecord, columns: list[str] | None = None) -> pd.DataFrame | None:
        """The rounds of a run (only `columns` that exist, when given); None if unreadable
        and on_error is skip."""
        import pyarrow.parquet as pq

        try:
            meta = self._meta.get(rec.run_dir) or pq.read_metadata(rec.rounds_path)
            if columns is not None:
                have = set(meta.schema.names)
                columns = [c for c in columns if c in have]
            pf = pq.ParquetFile(rec.rounds_path, metadata=meta)
            return pf.read(columns=columns, use_threads=False).to_pandas(use_threads=False)
        except Exception as e:
            first = str(e).splitlines()[0] if str(e) else type(e).__name__
            self._problem(
                f"{rec.rounds_path} is corrupt or truncated ({first}); "
                f"rerun it or delete {rec.run_dir}"
            )
            return None
