"""The summary table of a results folder: one row per run (fedbench summary, fedbench table
--summary), unfinished runs from their rounds so far. Imports no torch."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from fedbench.results.index import RunIndex
from fedbench.results.records import (
    SUMMARY_KEYS,
    _first_line,
    summarize,
)
from fedbench.results.run_record import UNFINISHED, RunRecord


def load_summaries(
    results: Path, on_error: str = "fail", strict: bool = False
) -> tuple[pd.DataFrame, list[str]]:
    """One row per run (a folder copied under another name is one run): config fields that tell
    runs apart, and the summary. on_error="skip" leaves out unreadable runs and returns their
    messages; "fail" raises. Notes (old records, copies) are in the index: see summary_frame."""
    index = RunIndex(results, on_error=on_error, strict=strict)
    return summary_frame(index), index.problems


def summary_frame(index: RunIndex) -> pd.DataFrame:
    rows = []
    for key in index.by_key:
        for rec in index.runs(key):
            summary = _record_summary(index, rec)
            if summary is None:
                continue
            cfg = rec.config
            status = rec.shown_status() if rec.status in UNFINISHED else rec.status
            if status in ("running", "interrupted", "killed"):
                index.unfinished[status] = index.unfinished.get(status, 0) + 1
            rows.append(
                {
                    "run_id": rec.run_id,
                    "status": status,
                    "preset": cfg.get("preset"),
                    "method": cfg.get("method"),
                    "dataset": cfg.get("dataset"),
                    "seed": cfg.get("seed"),
                    "method_params": json.dumps(cfg.get("method_params", {}), sort_keys=True),
                    **{k: summary.get(k) for k in SUMMARY_KEYS},
                    # above 1: trained in a stack (training/stack.py), seconds include stack-mates'
                    "stack_size": rec.meta.get("stack_size", 1),
                }
            )
    return pd.DataFrame(rows)


def _record_summary(index: RunIndex, rec: RunRecord) -> dict | None:
    """A run's summary for the summary table; None: left out (its damage reported). An
    unfinished run's summary is of its rounds so far (none where they are not flushed yet)."""
    empty = pd.DataFrame({"round": [], "round_seconds": []})
    if rec.status == "failed" and not rec.rounds_path.exists():
        return summarize(empty, None)
    if rec.status in UNFINISHED:
        rounds = index.rounds(rec, quiet=True) if index.rounds_ok(rec) else None
        if rounds is not None:
            rounds = _summary_or_problem(index, rec, rounds, quiet=True)
        return rounds or summarize(empty, rec.config.get("target_acc"))
    if not index.rounds_ok(rec, report=True):
        return None
    if rec.summary:
        return rec.summary
    rounds = index.rounds(rec)
    return None if rounds is None else _summary_or_problem(index, rec, rounds)


def _summary_or_problem(
    index: RunIndex, rec: RunRecord, rounds: pd.DataFrame, quiet: bool = False
) -> dict | None:
    try:
        return summarize(rounds, rec.config.get("target_acc"))
    except Exception as e:  # missing columns, wrong types
        if not quiet:
            index._problem(f"{rec.rounds_path} cannot be summarized ({_first_line(e)}); rerun it")
        return None
