"""How fast results are read: N runs' records -> a paper table, and -> every run's curve.

    python benchmarks/read_results.py              # 1,000 generated runs in a temp folder
    python benchmarks/read_results.py --runs 5000 --keep /tmp/many

Generates fake records (run.json + a 100-round rounds.parquet, as the runner writes them) for
the `stragglers` table on the default preset, then times, each from a cold start in this
process: indexing the folder (run.json files only), building the table (`fedbench table`'s
work: index, match cells by config hash, check each run's Parquet footer, reduce, render), a
table whose metric needs every run's curve (R90 from rounds.parquet), plain pandas.read_parquet
of every rounds file, and DuckDB over the same files when it is installed.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import fedbench.papers  # noqa: E402, F401 -- a script is an entry point: it loads the catalogs
from fedbench.tables import (  # noqa: E402
    PlotSpec,
    Selection,
    TableSpec,
    cell_config,
    evaluate_table,
    get_table,
    render_paper_table,
    runs,
)
from fedbench.testing import fake_rounds, write_fake_run  # noqa: E402

SETS = {"rounds": "100", "N": "6", "K": "3", "local_steps": "2", "device": "cpu"}
ROUNDS = 100


def selection(results: Path, n: int) -> Selection:
    per_seed = len([c for c in get_table("stragglers").cells("synthetic-1-1")]) // 2
    seeds = tuple(range(math.ceil(n / per_seed)))
    return Selection("synthetic-1-1", seeds, "default", SETS, str(results))


def generate(results: Path, n: int) -> None:
    """n fake runs: the stragglers table's configs, seed after seed."""
    spec = get_table("stragglers")
    sel = selection(results, n)
    cells = [c for c in spec.cells("synthetic-1-1") if c.metric == "final_acc"]
    made = 0
    for seed in sel.seeds:
        for i, cell in enumerate(cells):
            if made == n:
                return
            cfg = cell_config(cell, seed, sel.preset, sel.sets)
            top = 0.6 + 0.03 * i + 0.001 * seed
            write_fake_run(results, cfg, fake_rounds(ROUNDS, top=top, speed=10 + i))
            made += 1


def _r90_spec() -> TableSpec:
    base = get_table("stragglers")

    def build(ds):
        return [
            runs(ds, c.row, c.col.replace("acc", "R90"), "r90", c.preset, None, **dict(c.overrides))
            for c in base.build(ds)
            if c.metric == "final_acc"
        ]

    return TableSpec(
        "r90-bench",
        "benchmark",
        "R90 of every run",
        ("synthetic-1-1",),
        build,
        plot=PlotSpec("curves", "r90"),
    )


def time_reads(results: Path) -> dict:
    import pandas as pd

    from fedbench.results import RunIndex

    out: dict = {}
    files = sorted(results.glob("*/rounds.parquet"))
    out["runs"] = len(files)
    n = len(files)
    sel = selection(results, n)

    t0 = time.perf_counter()
    RunIndex(results)
    out["index_s"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    result = evaluate_table(get_table("stragglers"), results, sel)
    render_paper_table(result, "md", [])
    out["table_s"] = time.perf_counter() - t0
    out["runs_in_table"] = sum(c.n for c in result.cells if c.cell.metric == "final_acc")

    t0 = time.perf_counter()
    result = evaluate_table(_r90_spec(), results, sel)
    render_paper_table(result, "md", [])
    out["curve_table_s"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    df = pd.concat([pd.read_parquet(f) for f in files], ignore_index=True)
    out["pandas_read_all_s"] = time.perf_counter() - t0
    out["rows"] = len(df)
    try:
        import duckdb
    except ImportError:
        out["duckdb_s"] = None
    else:
        t0 = time.perf_counter()
        duckdb.sql(f"select count(*) from read_parquet('{results}/*/rounds.parquet')").fetchall()
        out["duckdb_s"] = time.perf_counter() - t0
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--keep", help="write the runs here (kept) instead of a temp folder")
    ap.add_argument(
        "--max-seconds",
        type=float,
        default=5.0,
        help="exit 1 when building a table (or the curve table) takes longer (the target)",
    )
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        results = Path(args.keep or tmp) / "results"
        t0 = time.perf_counter()
        generate(results, args.runs)
        print(
            f"generated {args.runs} runs x {ROUNDS + 1} rounds in {time.perf_counter() - t0:.1f} s"
        )
        timings = time_reads(results)
        for k, v in timings.items():
            print(f"{k:>20}: {v if not isinstance(v, float) else f'{v:.3f}'}")
    print(f"load average: {os.getloadavg()[0]:.1f}")
    slow = [k for k in ("table_s", "curve_table_s") if timings[k] > args.max_seconds]
    if slow:
        raise SystemExit(f"{', '.join(slow)} over the {args.max_seconds:g} s target")


if __name__ == "__main__":
    main()
