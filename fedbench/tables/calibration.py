"""Using a calibration (`fedbench calibrate`, fedbench.calibration_search): where a fit is kept,
reading it, and a table's selection at the fitted value (sweep/table/plot --calibrated)."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

from fedbench.errors import FedbenchError
from fedbench.safe_read import Refused, read_json

CALIBRATION_DIR = "calibration"  # under the results folder


def calibration_path(results: str | Path, table: str, dataset: str) -> Path:
    return Path(results) / CALIBRATION_DIR / f"{table}-{dataset}.json"


def one_dataset(spec, dataset: str | None) -> str:
    if dataset is not None:
        spec.variants(dataset)  # one-line error for a dataset the table lacks
        return dataset
    if len(spec.datasets) == 1:
        return spec.datasets[0]
    raise FedbenchError(
        f"table {spec.name} has several datasets ({', '.join(spec.datasets)}); pass --dataset"
    )


def fit_path(results: str | Path, table: str, dataset: str) -> tuple[Path, str]:
    """(the fit's file, how to name it in a table's header): the results folder's own fit, else
    the shipped store's (fedbench.results.shipped_store), else the local path (missing)."""
    path = calibration_path(results, table, dataset)
    if os.path.lexists(path):  # a file, or something load_fit refuses by name
        return path, str(path)
    from fedbench.results.shipped_store import CALIBRATION, default_store

    shipped = default_store().calibration(table, dataset)
    if shipped is not None:  # named alike on every machine: table files stay byte-equal
        return shipped, f"shipped store: {CALIBRATION}/{shipped.name}"
    return path, str(path)


def load_fit(results: str | Path, table: str, dataset: str) -> dict:
    path, _ = fit_path(results, table, dataset)
    try:
        return read_json(path)
    except Refused as e:
        raise FedbenchError(f"{e}; delete it and calibrate again") from None
    except FileNotFoundError:
        raise FedbenchError(
            f"no calibration of table {table} on {dataset} in {path.parent} or the shipped store; "
            f"run first: fedbench calibrate --table {table} --dataset {dataset} --anchor METHOD "
            "--param lr"
        ) from None
    except ValueError as e:
        raise FedbenchError(f"{path} is corrupt ({e}); calibrate again") from None


def calibrated_selection(spec, sel):
    """(selection at the fitted value, the header line saying what was fitted to which cell).
    The fit's own --set values come first, the user's next; the fitted parameter last."""
    dataset = one_dataset(spec, sel.dataset)
    source = spec.calibrated_by or spec.name
    fit = load_fit(sel.results, source, dataset)
    param, value = fit["param"], fit["value"]
    if param in sel.sets:
        raise FedbenchError(
            f"--set {param}=... clashes with --calibrated ({param} = {value:g} from the fit)"
        )
    sets = {**fit.get("sets", {}), **sel.sets, param: value}
    preset = sel.preset or fit.get("preset")
    a = fit["anchor"]
    where = "" if source == spec.name else f"table {source}'s cell "
    line = (
        f"calibrated: {param} = {value:g}, fitted so that {where}{a['row']} / {a['col']} "
        f"= {fit['achieved']:g} (paper {fit['target']:g}) on {dataset}, seeds "
        f"{','.join(map(str, fit['seeds']))}, {fit['runs_spent']} runs; "
        f"every other cell is a prediction ({fit_path(sel.results, source, dataset)[1]})"
    )
    fitted = replace(sel, dataset=dataset, preset=preset, sets=sets, calibrated_from=sel)
    return fitted, line
