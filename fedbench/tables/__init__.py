"""Paper tables and figures: the spec language and registry (spec), metrics, the papers'
reported values, claims, evaluation against stored runs, rendering, and the tables report.

The specs themselves live with their paper's presets in fedbench/papers/ and register on import.
This package never imports them: the entry points do (`import fedbench.papers`: the command line,
fedbench.api), so TABLES holds the papers' tables once an entry point has started.
"""

from __future__ import annotations

import importlib

from fedbench.tables.claims import (
    Claim,
    Verdict,
    every,
    lowest,
    ordered,
    ratio_near,
    reached,
    same_as_paper,
    within_ci,
)
from fedbench.tables.metrics import METRICS, Metric
from fedbench.tables.paper_values import PaperRef, PaperValue, lookup, paper_values
from fedbench.tables.result import CellResult, ClaimResult, Selection, TableResult
from fedbench.tables.spec import (
    TABLES,
    Cell,
    Derived,
    PlotSpec,
    SpecError,
    TableSpec,
    cell_config,
    check_override_names,
    get_table,
    register,
    runs,
    table,
)
from fedbench.tables.verdicts import CellView, claim_lines, claims_summary, evaluate_claims

# Evaluation and rendering (pandas, the run index) load on first use: the specs above are
# imported by every paper module, which needs neither.
_LAZY = {
    **dict.fromkeys(("SPREADS", "evaluate_table"), "evaluate"),
    **dict.fromkeys(
        (
            "FORMATS",
            "SUMMARY_COLUMNS",
            "console",
            "fmt_cell",
            "header_lines",
            "long_frame",
            "render_file",
            "render_paper_table",
            "rich_paper_table",
            "rich_table",
            "table_file_name",
            "table_frame",
            "table_notes",
            "write_table",
        ),
        "render",
    ),
}


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "FORMATS",
    "METRICS",
    "SPREADS",
    "SUMMARY_COLUMNS",
    "TABLES",
    "Cell",
    "CellResult",
    "CellView",
    "Claim",
    "ClaimResult",
    "Derived",
    "Metric",
    "PaperRef",
    "PaperValue",
    "PlotSpec",
    "Selection",
    "SpecError",
    "TableResult",
    "TableSpec",
    "Verdict",
    "cell_config",
    "check_override_names",
    "claim_lines",
    "claims_summary",
    "console",
    "evaluate_claims",
    "evaluate_table",
    "every",
    "fmt_cell",
    "get_table",
    "header_lines",
    "long_frame",
    "lookup",
    "lowest",
    "ordered",
    "paper_values",
    "ratio_near",
    "reached",
    "register",
    "render_file",
    "render_paper_table",
    "rich_paper_table",
    "rich_table",
    "runs",
    "same_as_paper",
    "table",
    "table_file_name",
    "table_frame",
    "table_notes",
    "within_ci",
    "write_table",
]
