"""Run records: one run's files (fedbench.results.records, run_record.py) and the index of a
results folder (fedbench.results.index; its summary table: summaries.py)."""

from fedbench.results.frames import load_frames
from fedbench.results.index import (
    ANY,
    FINISHED,
    NUMERIC_COLUMNS,
    RunIndex,
    RunRecord,
    config_key,
    expected_rows,
)
from fedbench.results.records import (
    SCHEMA_VERSION,
    STATUSES,
    SUMMARY_KEYS,
    read_run,
    run_dirs,
    summarize,
)
from fedbench.results.summaries import load_summaries, summary_frame

__all__ = [
    "ANY",
    "FINISHED",
    "NUMERIC_COLUMNS",
    "SCHEMA_VERSION",
    "STATUSES",
    "SUMMARY_KEYS",
    "RunIndex",
    "RunRecord",
    "config_key",
    "expected_rows",
    "load_frames",
    "load_summaries",
    "read_run",
    "run_dirs",
    "summarize",
    "summary_frame",
]
