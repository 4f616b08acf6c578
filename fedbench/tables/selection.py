"""Which runs a paper table refers to: the selection (dataset, seeds, preset, --set values,
added rows, plugins) checked once, the spec with its added rows, and the calibrated value.

Shared by every entry that reads or makes a table's runs: the CLI (table, plot, sweep --table,
export, publish, calibrate), `fedbench reproduce` and the API, so that a typo stops each of them
with the same one line instead of leaving every cell n/a."""

from __future__ import annotations

from fedbench.config import RunConfig, check_seeds
from fedbench.config_input import parse_set
from fedbench.errors import FedbenchError
from fedbench.plugins import LOADED
from fedbench.tables.result import Selection


def make_selection(dataset, seeds, preset, sets, results, add_methods=()) -> Selection:
    """The runs a paper table refers to; every key, value, seed, preset and added method
    checked here. seeds: "0,1,2" text or a sequence of ints; sets: KEY=VALUE items."""
    from fedbench.assembly import apply_overrides
    from fedbench.presets import get_preset

    seed_list = _seeds(seeds) if isinstance(seeds, str) else seeds
    check_seeds(seed_list)
    if preset:
        get_preset(preset)
    overrides = parse_set(tuple(sets or ()))
    apply_overrides(RunConfig(), overrides)  # each key known, each value valid on its own
    return Selection(
        dataset=dataset,
        seeds=tuple(seed_list) if seed_list is not None else None,
        preset=preset,
        sets=overrides,
        results=str(results),
        additions=tuple(a.text for a in additions(add_methods)),
        plugins=given_plugins() if add_methods else (),
    )


def _seeds(text: str) -> list[int]:
    """'0,1,2' -> [0, 1, 2], as --seeds reads it (fedbench.sweep.parse_list, a layer above)."""
    items = [t.strip() for t in text.split(",") if t.strip()]
    if not items:
        raise FedbenchError(f"--seeds expects a comma-separated list, got {text!r}")
    try:
        return [int(t) for t in items]
    except ValueError:
        raise FedbenchError(
            f"--seeds expects a comma-separated list of numbers, got {text!r}"
        ) from None


def additions(add_methods) -> list:
    """--add-method texts, parsed and checked (fedbench.tables.additions)."""
    from fedbench.tables.additions import parse_addition

    return [parse_addition(text) for text in add_methods or ()]


def given_plugins() -> tuple[str, ...]:
    """The plugins this command loaded from --plugin or FEDBENCH_PLUGINS (not entry points:
    installed packages load themselves), as given: the commands a table with rows added prints
    repeat them (a paper table's own commands stay as they were)."""

    return tuple(p.source for p in LOADED.values() if not p.source.startswith("entry point "))


def with_additions(spec, sel: Selection):
    """The table spec with the selection's added rows (fedbench.tables.additions)."""
    from fedbench.tables.additions import add_rows

    return add_rows(spec, additions(sel.additions))


def apply_calibration(spec, sel: Selection, calibrated: bool):
    """(selection, header line): unchanged without calibrated."""
    if not calibrated:
        return sel, None
    from fedbench.tables.calibration import calibrated_selection

    return calibrated_selection(spec, sel)


def table_selection(spec, dataset, seeds, preset, sets, results, calibrated, add_methods=()):
    """make_selection, then the calibrated value where asked: (selection, header line)."""
    sel = make_selection(dataset, seeds, preset, sets, results, add_methods)
    return apply_calibration(spec, sel, calibrated)


def table_records(spec, sel: Selection, index, on_error: str = "skip") -> list:
    """The finished records a paper table uses under a selection, each once (from `index`, a
    fedbench.results.RunIndex: local and, where it reads them, shipped runs)."""
    from fedbench.tables.evaluate import evaluate_table

    result = evaluate_table(spec, sel.results, sel, on_error=on_error, index=index)
    return list({id(rec): rec for c in result.cells for _, rec in c.records}.values())
