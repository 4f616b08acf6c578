"""`fedbench check`: regression runs for CI.

Two kinds of check, compared with the stored reference (results/reference/check.json, format
REFERENCE_FORMAT); any regression -> exit 1 with a table of what moved:
- arithmetic (fedbench.check.arithmetic): every method and server optimizer, a few rounds of a
  tiny float64 config, number for number within a relative 1e-5: a changed update rule fails;
- paper scale (CHECKS): small fixed configs rerun (or read from given results), accuracy within
  `acc_tol` (absolute), rounds to target not worse by more than `rounds_tol` (relative, at least
  one round), and the speed; and DIRECTIONS, the claims these configs reproduce, asserted as
  the papers state them (which method ends ahead).

Speed is compared only on the reference's device (the same device_name: CPU model, instruction
set and threads, or the same GPU; timings across machines say nothing), and so that a loaded
machine (a CI runner, a laptop doing other work) does not fail it: fresh check runs are timed
in CPU seconds of this process per round (the median over rounds), which other processes do
not add to, and must stay within `speed_factor` times the reference's. Runs read from given
results have only their recorded wall seconds (the median over rounds), compared the same way.
"""

from __future__ import annotations

import math
import platform
import re
import statistics
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from fedbench import version
from fedbench.assembly import build_config
from fedbench.atomic import atomic_write_json
from fedbench.config import RunConfig
from fedbench.errors import FedbenchError
from fedbench.identity import config_hash, run_id
from fedbench.safe_read import Refused, read_json

REFERENCE = Path("results") / "reference" / "check.json"
# 2: the arithmetic checks and this field (1: paper-scale checks only, no "format")
REFERENCE_FORMAT = 2

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
# FedProx's Synthetic(1, 1) with 90% stragglers (Li et al. 2020, Fig. 1's hardest setting)
_SYN11 = {**_SYN, "syn_alpha": "1", "syn_beta": "1", "N": "30", "K": "10", "lr": "0.01", "s": "0.9"}
CHECKS["fedprox-stragglers-90"] = (
    "fedprox-synthetic",
    {**_SYN11, "method": "fedprox", "mu": "1", "straggler_policy": "partial"},
)
CHECKS["fedavg-drop-90"] = ("fedprox-synthetic", {**_SYN11, "straggler_policy": "drop"})
QUICK = ("fedavg-synthetic", "fedprox-stragglers", "fedprox-stragglers-90", "fedavg-drop-90")
# (ahead, behind, metric, where the claim is): the first check must end ahead of the second.
# FedProx with partial work ahead of FedAvg dropping 90% stragglers: 0.57 vs 0.41 at round 15
DIRECTIONS = (("fedprox-stragglers-90", "fedavg-drop-90", "final_acc", "Li et al. 2020, Fig. 1"),)
METRICS = ("best_acc", "final_acc", "rounds_to_target", "mean_round_seconds")


@dataclass
class Tolerances:
    acc: float = 0.02
    rounds: float = 0.10
    speed_factor: float = 3.0
    timing: bool = True


def check_configs(names) -> dict[str, RunConfig]:
    return {n: build_config(CHECKS[n][0], None, CHECKS[n][1]) for n in names}


def same_device(a: str | None, b: str | None) -> bool:
    """Whether two run.json device_names are one device: the same CPU model, instruction set
    and thread count (names from before fedbench recorded the model never match), or GPU."""
    return bool(a) and a == b and not _anonymous_cpu(a)


def _anonymous_cpu(name: str) -> bool:
    """A CPU device_name of one part, the architecture: 'cpu (x86_64, 1 threads)' (fedbench
    before it recorded the model and instruction set)."""
    return re.fullmatch(r"cpu \([^,()]+, \d+ threads?\)", name) is not None


def measure(configs: dict[str, RunConfig], results: Path | None, threads: int = 1) -> dict:
    """{name: metrics} from runs in `results` (read) or from fresh runs in a temp folder (each
    alone, with its median CPU seconds per round, see cpu_per_round). A check whose data is
    not on this machine is returned as {"skipped": reason}."""
    failed: dict[str, str] = {}
    cpu: dict[str, float | None] = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(results) if results is not None else Path(tmp)
        if results is None:
            for name, cfg in configs.items():
                error, cpu[name] = run_timed(cfg, folder, threads)
                if error is not None:
                    failed[run_id(cfg)] = error
        return _read_checks(configs, folder, failed, cpu)


def run_timed(cfg: RunConfig, folder: Path, threads: int) -> tuple[str | None, float | None]:
    """Run one check here: (its error or None, the median CPU seconds of its rounds after
    the first). CPU time, not wall time: other processes on a loaded machine (a CI runner)
    take wall time from a round but not its CPU time; the first round also compiles."""
    from fedbench.sweep import execute_run

    ticks: list[float] = []
    out = execute_run(
        cfg.to_dict(), str(folder), threads=threads, on_round=lambda rec: ticks.append(cpu_now())
    )
    if out["status"] not in ("complete", "diverged", "done"):
        return out.get("error") or out["status"], None
    steps = [b - a for a, b in zip(ticks[1:], ticks[2:])]
    return None, statistics.median(steps) if steps else None


def cpu_now() -> float:
    """CPU seconds of this process (every thread)."""
    return time.process_time()


def _read_checks(configs: dict[str, RunConfig], folder: Path, failed: dict, cpu: dict) -> dict:
    """{name: metrics} of the check runs in folder (see measure)."""
    from fedbench.results import RunIndex

    out: dict[str, dict] = {}
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
        out[name]["median_round_seconds"] = _median_round(index, rec)
        out[name]["cpu_round_seconds"] = cpu.get(name)
        out[name]["device_name"] = rec.meta.get("device_name")
        out[name]["config_hash"] = config_hash(cfg)
    return out


def _median_round(index, rec) -> float | None:
    """The median training seconds of a run's rounds (round 0 only evaluates)."""
    rounds = index.rounds(rec, ["round", "round_seconds"])
    if rounds is None or "round_seconds" not in rounds:
        return None
    if "round" in rounds:
        rounds = rounds[rounds["round"] > 0]
    return float(rounds["round_seconds"].median()) if len(rounds) else None


def load_reference(path: Path) -> dict:
    if not path.is_file():
        raise FedbenchError(f"no reference at {path}; create it with: fedbench check --update")
    try:
        data = read_json(path)
    except Refused as e:
        raise FedbenchError(f"{e}; delete it and recreate it with --update") from None
    except ValueError as e:
        raise FedbenchError(
            f"reference {path} is corrupt ({e}); recreate it with --update"
        ) from None
    found = data.get("format", 1) if isinstance(data, dict) else None
    if found != REFERENCE_FORMAT:
        raise FedbenchError(
            f"reference {path} has format {found}, this fedbench reads {REFERENCE_FORMAT} "
            "(with the arithmetic checks); recreate it with: fedbench check --update"
        )
    return data


def write_reference(
    path: Path, measured: dict, configs: dict[str, RunConfig], arithmetic: dict | None = None
) -> None:
    """The reference with `measured` (paper-scale) and `arithmetic` numbers replacing those of
    the same names; other checks' entries are kept."""
    import torch

    from fedbench.check.arithmetic import arithmetic_config

    old = read_json(path) if path.is_file() else {}
    checks, numbers = dict(old.get("checks", {})), dict(old.get("arithmetic", {}))
    for name, m in measured.items():
        if "skipped" not in m:
            checks[name] = {**m, "config": configs[name].to_dict()}
    for name, m in (arithmetic or {}).items():
        numbers[name] = {**m, "config": arithmetic_config(name).to_dict()}
    atomic_write_json(
        path,
        {
            "about": "fedbench check reference: rerun with `fedbench check --update`",
            "format": REFERENCE_FORMAT,
            "fedbench_version": version.__version__,
            "torch_version": torch.__version__,
            "host": platform.node(),
            "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "checks": checks,
            "arithmetic": numbers,
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
        rows.append(speed_row(name, ref, now, tol))
    return rows + direction_rows(measured)


def direction_rows(measured: dict) -> list[Row]:
    """The claims of DIRECTIONS whose two checks were both measured: ahead must beat behind."""
    rows = []
    for ahead, behind, metric, source in DIRECTIONS:
        a, b = measured.get(ahead, {}), measured.get(behind, {})
        if not a or not b or "skipped" in a or "skipped" in b:
            continue
        va, vb = a.get(metric), b.get(metric)
        good = va is not None and vb is not None and va > vb
        allowed = f"ahead ({source})"
        rows.append(
            Row(f"{ahead} vs {behind}", metric, vb, va, allowed, "ok" if good else "REGRESSED")
        )
    return rows


def speed_row(name: str, ref: dict, now: dict, tol: Tolerances) -> Row:
    """Seconds per round against the reference's times speed_factor, on the reference's device
    only: the median CPU seconds of a round where both have it (fresh runs), else the median
    wall seconds that the runs' rounds recorded (runs read with --results)."""
    key, metric = "cpu_round_seconds", "CPU s/round"
    if ref.get(key) is None or now.get(key) is None:
        key, metric = "median_round_seconds", "s/round"
    r, v = ref.get(key), now.get(key)
    why = (
        "--no-timing" if not tol.timing
        else "the reference has no median: fedbench check --update" if r is None
        else f"reference on {ref.get('device_name')}"
        if not same_device(ref.get("device_name"), now.get("device_name"))
        else "no timed rounds" if v is None
        else None
    )  # fmt: skip
    if why:
        return Row(name, metric, r, v, "-", f"not compared ({why})")
    limit = r * tol.speed_factor
    return Row(name, metric, r, v, f"<= {limit:.4g}", "REGRESSED" if v > limit else "ok")


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
