"""Do two fedbench builds give the same records? Trains a fixed set of runs with the `fedbench`
found on PATH (or `--python` for another build) and prints, per run, a SHA-256 of every column of
rounds.parquet that does not hold seconds (wall time differs between any two runs).

    python benchmarks/same_records.py --out /tmp/new                 # this build
    PYTHONPATH=/path/to/old/checkout python benchmarks/same_records.py --out /tmp/old
    python benchmarks/same_records.py --compare /tmp/old /tmp/new    # equal or not, per column
    python benchmarks/same_records.py --out /tmp/new --only 'fmnist-*' 'fedlga-*'   # some runs

A refactor must leave every digest as it was (the issue's "same records, bit for bit"): the
default run, a FedLGA-FMNIST run under both readings, and one run of each other engine path
(SCAFFOLD and FedDyn state, MimeLite's server statistics, SFL's chain, FedSAM's two gradients).
Columns a later build adds (e.g. run_id) are listed, not compared.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
from fnmatch import fnmatch
from pathlib import Path

import pandas as pd

# (label, fedbench train arguments); each with --threads 1 so the numbers do not follow the load
RUNS = {
    "default": [],
    "fedlga-fmnist-fedlga": ["--preset", "fedlga-fmnist", "--method", "fedlga", "--rounds", "8"],
    "fedlga-fmnist-eq6": [
        *("--preset", "fedlga-fmnist", "--method", "fedlga", "--rounds", "4", "--set", "g=eq6"),
    ],
    "fedlga-fmnist-fedavg": ["--preset", "fedlga-fmnist", "--method", "fedavg", "--rounds", "8"],
    "scaffold": ["--method", "scaffold", "--rounds", "20"],
    "feddyn": ["--method", "feddyn", "--rounds", "20"],
    "mimelite": ["--method", "mimelite", "--rounds", "20"],
    "fedsam": ["--method", "fedsam", "--rounds", "20"],
    "fedprox-torch": ["--method", "fedprox", "--set", "mu=0.1", "--rounds", "10"],
    # each method of the FedLGA-FMNIST MLP on its window path (or the stepwise one)
    **{
        f"fmnist-{m}": ["--preset", "fedlga-fmnist", "--method", m, "--rounds", "2"]
        for m in ("fedsam", "feddyn", "mimelite", "scaffold", "fedprox", "fednova", "fedcm")
    },
    "sfl-quadratic": ["--preset", "sfl-quadratic", "--method", "sfl", "--rounds", "50"],
    "fedsoftmax-cnn": [
        *("--preset", "fedsoftmax-mnist", "--method", "fedsoftmax", "--rounds", "1"),
        *("--set", "K=3", "--set", "N=50"),
    ],
}


def digest(df: pd.DataFrame) -> dict[str, str]:
    out = {}
    for col in df.columns:
        if "seconds" in col:
            continue
        text = json.dumps(df[col].tolist(), default=str, allow_nan=True)
        out[col] = hashlib.sha256(text.encode()).hexdigest()[:16]
    return out


def train_all(out: Path, fedbench: list[str], labels: list[str]) -> dict:
    digests = {}
    for label in labels:
        args = RUNS[label]
        folder = out / label
        cmd = [*fedbench, "train", *args, "--results", str(folder), "--threads", "1", "--quiet"]
        env = dict(os.environ, FEDBENCH_NO_DOWNLOAD="1")
        done = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if done.returncode:
            digests[label] = {"error": (done.stderr or done.stdout).strip().splitlines()[-1:]}
            print(f"{label}: failed: {digests[label]['error']}")
            continue
        (run_dir,) = [p for p in folder.iterdir() if (p / "rounds.parquet").exists()]
        digests[label] = digest(pd.read_parquet(run_dir / "rounds.parquet"))
        print(f"{label}: {len(digests[label])} columns")
    (out / "digests.json").write_text(json.dumps(digests, indent=1, sort_keys=True))
    return digests


def compare(old: Path, new: Path) -> int:
    a = json.loads((old / "digests.json").read_text())
    b = json.loads((new / "digests.json").read_text())
    bad, both = 0, [k for k in RUNS if k in a and k in b]
    one_side = [k for k in RUNS if (k in a) != (k in b)]  # an --only subset on one side
    if one_side:
        print(f"not compared (run on one side only): {', '.join(one_side)}")
    for label in both:
        x, y = a[label], b[label]
        if "error" in x or "error" in y:
            print(f"{label}: not comparable ({x.get('error') or y.get('error')})")
            bad += 1
            continue
        differ = sorted(c for c in x if c in y and x[c] != y[c])
        missing = sorted(set(x) - set(y))
        added = sorted(set(y) - set(x))
        ok = not differ and not missing
        bad += not ok
        note = f"; new columns {', '.join(added)}" if added else ""
        if ok:
            print(f"{label}: same ({len(x)} columns){note}")
        else:
            print(f"{label}: DIFFERENT columns {differ}, missing {missing}{note}")
            print(f"  {label}: {change_size(old / label, new / label, differ)}")
    print("all the same" if not bad else f"{bad} of {len(both)} runs differ")
    return 1 if bad else 0


def change_size(old: Path, new: Path, columns: list[str]) -> str:
    """The largest difference of each differing numeric column over the run's rounds (relative
    to the old value's magnitude; accuracy in test samples' worth where it is one)."""
    rounds = [pd.read_parquet(next(d.glob("*/rounds.parquet"))) for d in (old, new)]
    parts = []
    for col in columns:
        a, b = (r[col] for r in rounds)
        if not pd.api.types.is_numeric_dtype(a) or len(a) != len(b):
            parts.append(f"{col} differs")
            continue
        diff = (a - b).abs().max()
        rel = diff / max(a.abs().max(), 1e-300)
        parts.append(f"{col} max |diff| {diff:.2g} ({rel:.2g} relative)")
    return "; ".join(parts)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, help="folder for the runs and digests.json")
    ap.add_argument("--compare", nargs=2, type=Path, metavar=("OLD", "NEW"))
    ap.add_argument("--only", nargs="+", metavar="PATTERN", help="runs whose label matches")
    args = ap.parse_args()
    labels = [k for k in RUNS if not args.only or any(fnmatch(k, p) for p in args.only)]
    if not labels:
        ap.error(f"--only matches none of: {', '.join(RUNS)}")
    if args.compare:
        return compare(*args.compare)
    if args.out is None:
        ap.error("give --out or --compare")
    args.out.mkdir(parents=True, exist_ok=True)
    # -P: the current folder is not put first on sys.path, so PYTHONPATH picks the build even
    # when this runs from inside another checkout (plain -m imported the cwd's fedbench)
    train_all(args.out, [sys.executable, "-P", "-m", "fedbench.cli"], labels)
    return 0


if __name__ == "__main__":
    sys.exit(main())
