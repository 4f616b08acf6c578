"""`fedbench check`: regression runs for CI.

Reruns a small fixed set of configs (or reads them from given results) and compares each with
the stored reference (results/reference/check.json): accuracy within `acc_tol` (absolute),
rounds to target not worse by more than `rounds_tol` (relative, at least one round), seconds per
round not slower than `speed_factor` times the reference (only when the device kind is the same
as the reference's: timings across machines say nothing). Any regression -> exit 1 with a table
of what moved.
"""

from __future__ import annotations

import json
import math
import platform
import tempfile
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import fedbench
from fedbench.assembly import build_config
from fedbench.config import RunConfig
from fedbench.errors import FedbenchError
from fedbench.identity import config_hash, run_id

REFERENCE = Path("results") / "reference" / "check.json"

# Synthetic(0.5, 0.5) on 10 devices: learns within a few rounds, so accuracy and rounds to
# target move when an update rule or the data pipeline changes.
_SYN = {
    "syn_alpha": "0.5",
    "syn_beta": "0.5",
    "N": "10",
    "K": "5",
    "local_steps": "20",
    "lr": "0.05",
    "rounds": "15",
    "target_acc": "0.9",
    "eval_train": "false",
    "device": "cpu",
}
# name -> (preset, overrides); QUICK is the CI subset (seconds on 2 CPU cores)
CHECKS: dict[str, tuple[str, dict[str, str]]] = {
    "fedavg-synthetic": ("default", _SYN),
    "fedprox-stragglers": (
        "fedprox-synthetic",
        {**_SYN, "method": "fedprox", "mu": "0.1", "s": "0.5", "straggler_policy": "partial"},
    ),
    "fedavg-fedlga-hetero": (
        "default",
        {**_SYN, "hetero": "fedlga", "rho": "0.5", "tau_max": "10"},
    ),
    "fedavg-fmnist-mlp": (
        "fedlga-fmnist",
        {"rounds": "5", "local_steps": "30", "device": "cpu", "target_acc": "0.5"},
    ),
}
QUICK = ("fedavg-synthetic", "fedprox-stragglers")
METRICS = ("best_acc", "final_acc", "rounds_to_target", "mean_round_seconds")


@dataclass
class Tolerances:
    acc: float = 0.02
    rounds: float = 0.10
    speed_factor: float = 3.0
    timing: bool = True


def check_configs(names) -> dict[str, RunConfig]:
    return {n: build_config(CHECKS[n][0], None, CHECKS[n][1]) for n in names}


def device_kind(name: str | None) -> str:
    """cpu, or the GPU's name: timings compare only within one kind."""
    if not name:
        return "?"
    return "cpu" if name.startswith("cpu") else name


def measure(configs: dict[str, RunConfig], results: Path | None, threads: int = 1) -> dict:
    """{name: metrics} from runs in `results` (read) or from fresh runs in a temp folder.
    A check whose data is not on this machine is returned as {"skipped": reason}."""
    from fedbench.results import RunIndex
    from fedbench.sweep import InlineExecutor, plan_sweep, run_sweep

    out: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(results) if results is not None else Path(tmp)
        if results is None:
            plan = plan_sweep(list(configs.values()), folder)
            report = run_sweep(plan, folder, InlineExecutor(threads), quiet=True)
            failed = {o.run_id: o.error for o in report.failed}
        else:
            failed = {}
        index = RunIndex(folder)
        for name, cfg in configs.items():
            if run_id(cfg) in failed:
                err = failed[run_id(cfg)] or "failed"
                if "not found" in err:  # a dataset this machine lacks
                    out[name] = {"skipped": err}
                    continue
                raise FedbenchError(f"check {name} failed to run: {err}")
            rec = index.finished(config_hash(cfg))
            if rec is None:
                raise FedbenchError(
                    f"{folder} has no finished run of check {name} ({run_id(cfg)}); run "
                    "fedbench check without --results to rerun the checks"
                )
            s = rec.summary
            out[name] = {m: s.get(m) for m in METRICS}
            out[name]["device_name"] = rec.meta.get("device_name")
            out[name]["config_hash"] = config_hash(cfg)
    return out


def load_reference(path: Path) -> dict:
    if not path.is_file():
        raise FedbenchError(f"no reference at {path}; create it with: fedbench check --update")
    try:
        return json.loads(path.read_text())
    except ValueError as e:
        raise FedbenchError(
            f"reference {path} is corrupt ({e}); recreate it with --update"
        ) from None


def write_reference(path: Path, measured: dict, configs: dict[str, RunConfig]) -> None:
    import torch

    from fedbench.atomic import atomic_write_json

    old = json.loads(path.read_text()).get("checks", {}) if path.is_file() else {}
    checks = dict(old)
    for name, m in measured.items():
        if "skipped" not in m:
            checks[name] = {**m, "config": configs[name].to_dict()}
    atomic_write_json(
        path,
        {
            "about": "fedbench check reference: rerun with `fedbench check --update`",
            "fedbench_version": fedbench.__version__,
            "torch_version": torch.__version__,
            "host": platform.node(),
            "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "checks": checks,
        },
    )


@dataclass
class Row:
    check: str
    metric: str
    reference: object
    now: object
    allowed: str
    status: str  # ok | REGRESSED | improved | not compared | skipped


def compare(measured: dict, reference: dict, tol: Tolerances) -> list[Row]:
    rows: list[Row] = []
    refs = reference.get("checks", {})
    for name, now in measured.items():
        if "skipped" in now:
            rows.append(Row(name, "-", "-", "-", "-", f"skipped: {now['skipped']}"))
            continue
        ref = refs.get(name)
        if ref is None:
            rows.append(Row(name, "-", "-", "-", "-", "not compared: no reference (--update)"))
            continue
        for metric in ("best_acc", "final_acc"):
            r, v = ref.get(metric), now.get(metric)
            ok = r is not None and v is not None and abs(v - r) <= tol.acc
            status = (
                "ok"
                if ok
                else ("improved" if v is not None and r is not None and v > r else "REGRESSED")
            )
            rows.append(
                Row(name, metric, r, v, f"{r:.4f} ± {tol.acc}" if r is not None else "-", status)
            )
        r, v = ref.get("rounds_to_target"), now.get("rounds_to_target")
        if r is None:
            status, allowed = ("improved" if v is not None else "ok"), "not reached before"
        else:
            limit = r + max(1, math.ceil(tol.rounds * r))
            allowed = f"<= {limit}"
            status = "REGRESSED" if v is None or v > limit else ("improved" if v < r else "ok")
        rows.append(Row(name, "rounds_to_target", r, v, allowed, status))
        r, v = ref.get("mean_round_seconds"), now.get("mean_round_seconds")
        same = device_kind(ref.get("device_name")) == device_kind(now.get("device_name"))
        if not tol.timing or not same or r is None or v is None:
            why = "not compared" + ("" if same else f" (reference on {ref.get('device_name')})")
            rows.append(Row(name, "s/round", r, v, "-", why))
        else:
            limit = r * tol.speed_factor
            status = "REGRESSED" if v > limit else "ok"
            rows.append(Row(name, "s/round", r, v, f"<= {limit:.4g}", status))
    return rows


def rows_table(rows: list[Row]):
    from rich.table import Table

    from fedbench.tables import fmt_cell

    t = Table(title="fedbench check against the reference")
    for col in ("check", "metric", "reference", "now", "allowed", "status"):
        t.add_column(col, justify="right" if col in ("reference", "now") else "left")
    for r in rows:
        style = "bold red" if r.status == "REGRESSED" else None
        t.add_row(
            r.check,
            r.metric,
            fmt_cell(r.reference),
            fmt_cell(r.now),
            r.allowed,
            r.status,
            style=style,
        )
    return t


def regressions(rows: list[Row]) -> list[Row]:
    return [r for r in rows if r.status == "REGRESSED"]


def describe(r: Row) -> str:
    from fedbench.tables import fmt_cell

    return f"{r.check} {r.metric} {fmt_cell(r.reference)} -> {fmt_cell(r.now)} ({r.allowed})"
