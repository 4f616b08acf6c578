"""The estimate against a real run here: for each kind of run below (a run of the shipped
store), a temporary copy of the store without that run, the estimate `fedbench sweep --dry-run`
says for it (a fresh process: its store rates, its probe here now, fedbench.sweep.estimate),
then the run itself at --threads 1 into a temporary results folder (a fresh process, as `fedbench
sweep` runs a run: fedbench.sweep.one_run), and measured / estimate. The load is read before
each estimate and after each run.

Usage: python benchmarks/estimate_vs_run.py [--kinds a,b] [--probe SECONDS] [--repeat N]
  --kinds: names from KINDS (default: all); --probe: the probe's seconds (default: the
  command's); --repeat: each kind N times (a new estimate and run each time)
Real MNIST (stragglers) needs FEDBENCH_DATA; a kind whose data is not here is skipped.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pyarrow.parquet as pq

# name: (store group, method, run_id prefix) -- the first run of the group that matches
KINDS = {
    "fedprox-synthetic": ("dissimilarity", "fedprox", "fedprox-synthetic-s0"),
    "fedprox-mnist": ("stragglers_mnist", "fedprox", "fedprox-fedprox-mnist-s0"),
    "sfl-quadratic": ("quadratic-lr", "sfl", "sfl-quadratic-s"),
    "sfl-fmnist": ("sfl-fmnist-lr", "sfl", "sfl-fmnist-s"),
    "pfl-fmnist": ("sfl-fmnist-lr", "pfl", "pfl-fmnist-s"),
    "fedlga-fmnist-target": ("tau-steps_fmnist", "fedlga", "fedlga-fmnist-s"),
    "fedavg-fmnist-target": ("rho_fmnist", "fedavg", "fedavg-fmnist-s0"),
}
HERE = Path(__file__).resolve().parents[1]


def pick(store: Path, group: str, method: str, prefix: str) -> dict:
    """The first run (by run_id) of the group with that method and run_id prefix."""
    runs = pq.read_table(store / group / "runs.parquet").to_pylist()
    found = sorted((r for r in runs if r["method"] == method and r["run_id"].startswith(prefix)
                    and r["status"] == "complete"), key=lambda r: r["run_id"])  # fmt: skip
    if not found:
        raise RuntimeError(f"no {method} run {prefix}* in {group}")
    return found[0]


def store_without(store: Path, group: str, run_id: str, into: Path) -> None:
    """A copy of the store with the run left out of its group (runs and rounds)."""
    shutil.copytree(store, into)
    for name in ("runs.parquet", "rounds.parquet"):
        table = pq.read_table(into / group / name)
        keep = [i for i, r in enumerate(table.column("run_id").to_pylist()) if r != run_id]
        pq.write_table(table.take(keep), into / group / name)


def child(code: str, env: dict) -> dict:
    """A fresh Python process running `code` (its last stdout line is JSON)."""
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=HERE, capture_output=True,
                         text=True)  # fmt: skip
    if out.returncode != 0:
        raise RuntimeError(out.stderr.strip().splitlines()[-1] if out.stderr else "failed")
    return json.loads(out.stdout.strip().splitlines()[-1])


ESTIMATE = """
import json, sys
from pathlib import Path
from fedbench.config import config_from_dict
from fedbench.sweep.estimate import plan_estimate
cfg = config_from_dict(json.loads(Path({cfg!r}).read_text()))
guess, _ = plan_estimate([cfg], Path({results!r}), True, {probe!r}, 1)
print(json.dumps({{"seconds": guess.seconds if guess.timed else None,
                  "how": guess.source_text("the store")}}))
"""

RUN = """
import json, os
from pathlib import Path
from fedbench.sweep.one_run import execute_run
out = execute_run(json.loads(Path({cfg!r}).read_text()), {results!r}, False, 1)
print(json.dumps({{"seconds": out["seconds"], "status": out["status"],
                  "rounds": out["summary"].get("rounds_run"), "load": os.getloadavg()[0]}}))
"""


def one(name: str, store: Path, probe: float | None) -> dict | None:
    group, method, prefix = KINDS[name]
    run = pick(store, group, method, prefix)
    with tempfile.TemporaryDirectory(prefix="fedbench-bench-") as tmp:
        tmp = Path(tmp)
        store_without(store, group, run["run_id"], tmp / "store")
        from fedbench.results.export import meta_from_row

        cfg = meta_from_row(run)["config"]
        (tmp / "cfg.json").write_text(json.dumps(cfg))
        env = {**os.environ, "FEDBENCH_STORE": str(tmp / "store"), "OMP_NUM_THREADS": "1"}
        load = os.getloadavg()[0]
        code = dict(cfg=str(tmp / "cfg.json"), results=str(tmp / "results"), probe=probe)
        est = child(ESTIMATE.format(**code), env)
        store_only = child(ESTIMATE.format(**{**code, "probe": 0.0}), env)["seconds"]
        ran = child(RUN.format(**code), env)
    if ran["status"] != "complete" or est["seconds"] is None:
        print(f"{name}: {ran['status']}, estimate {est['seconds']}: skipped")
        return None
    return {"kind": name, "run": run["run_id"], "store_s": run["total_seconds"],
            "estimate": est["seconds"], "store_only": store_only, "measured": ran["seconds"],
            "rounds": ran["rounds"],
            "load": f"{load:.1f}-{ran['load']:.1f}", "how": est["how"]}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kinds", default=",".join(KINDS))
    ap.add_argument("--probe", type=float, default=None)
    ap.add_argument("--repeat", type=int, default=1)
    a = ap.parse_args(argv)
    from fedbench.results.shipped_store import store_root

    store = store_root()
    probe = "default" if a.probe is None else f"{a.probe:g} s"
    print(f"{os.cpu_count()} cores; store {store}; probe {probe}; store-only: the estimate "
          "with --probe 0")  # fmt: skip
    print(f"{'kind':22s} {'estimate':>9s} {'measured':>9s} {'meas/est':>8s} {'store-only':>10s} "
          "rounds load")  # fmt: skip
    rows = []
    for _ in range(a.repeat):
        for name in a.kinds.split(","):
            try:
                r = one(name, store, a.probe)
            except RuntimeError as e:
                print(f"{name}: skipped ({e})")
                continue
            if r is None:
                continue
            rows.append(r)
            ratio = r["measured"] / r["estimate"]
            only = "-" if r["store_only"] is None else f"{r['measured'] / r['store_only']:.2f}"
            print(f"{name:22s} {r['estimate']:8.1f}s {r['measured']:8.1f}s {ratio:8.2f} "
                  f"{only:>10s} {r['rounds']:>6} {r['load']}", flush=True)  # fmt: skip
            print(f"    {r['how']}", flush=True)
    within = sum(abs(r["estimate"] / r["measured"] - 1) <= 0.30 for r in rows)
    print(f"estimate within 30 % of measured: {within} of {len(rows)}")
    only = sum(r["store_only"] is not None and abs(r["store_only"] / r["measured"] - 1) <= 0.30
               for r in rows)  # fmt: skip
    print(f"store-only estimate within 30 %: {only} of {len(rows)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
