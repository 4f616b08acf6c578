"""The runs and rounds of a results folder and the shipped store as two DataFrames: the reading
API under fedbench.load_runs."""

from __future__ import annotations

from pathlib import Path

from fedbench.results.export import export_tables


def load_frames(results: Path | str = "results", shipped: bool = True, on_error: str = "skip"):
    """(runs, rounds) as pandas DataFrames: every run of the results folder (one record per
    identity and data fingerprint, failed ones included) and, with shipped, of the shipped store
    (a run in both is the shipped record), in the schema of docs/results-schema.md; runs has a
    `source` column: "local" or "shipped". The reading API under fedbench.load_runs."""
    from fedbench.results.index import RunIndex

    index = RunIndex(results, on_error=on_error, must_exist=False, shipped=shipped)
    records = [rec for key in index.by_key for rec in index.runs(key)]
    runs, rounds = export_tables(index, records)
    runs_df = runs.to_pandas()
    source = {r.run_id: "shipped" if r.shipped else "local" for r in records}
    runs_df["source"] = runs_df["run_id"].map(source)
    return runs_df, rounds.to_pandas()
