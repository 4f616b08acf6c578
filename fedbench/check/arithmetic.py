"""The arithmetic checks of `fedbench check`: every method and server optimizer, a few rounds of
one tiny fixed config, compared number for number with the committed reference.

The paper-scale checks (fedbench.check.CHECKS) compare accuracies within 0.02 and rounds to a
target: they cannot see FedProx's mu go from 0.1 to 0, since both reach the same accuracy in the
same round. These runs record what the arithmetic changes: the final global weights' norm and
sum, and each round's local loss, test loss and test accuracy. They run in float64 with partial
work (FedLGA's heterogeneity), so every method's correction is active, and are compared with a
relative tolerance (RTOL): float64 rounding across CPUs (AVX2 vs AVX-512 kernels, other BLAS
blocking) moves these numbers by ~1e-12, a changed update rule by far more than 1e-5.
"""

from __future__ import annotations

import math

from fedbench.assembly import build_config, validate_config
from fedbench.config import RunConfig

RTOL = 1e-5
ATOL = 1e-9  # numbers at zero (a loss or sum that is 0 in both)

# FedProx's Synthetic(0.5, 0.5), 6 devices, 4 a round, half of them slow (tau_i ~ U{1..3} of
# E = 4 epochs), 3 rounds, float64: a fraction of a second per check
_TINY = {
    "syn_alpha": "0.5",
    "syn_beta": "0.5",
    "N": "6",
    "K": "4",
    "E": "4",
    "B": "10",
    "lr": "0.05",
    "rounds": "3",
    "hetero": "fedlga",
    "rho": "0.5",
    "tau_max": "3",
    "eval_train": "false",
    "dtype": "float64",
    "device": "cpu",
}
# name -> (method, its parameters, other config fields): each method where it differs from
# FedAvg (parameters away from where it reduces to FedAvg), each server optimizer on FedAvg
ARITHMETIC: dict[str, tuple[str, dict, dict]] = {
    "tiny-fedavg": ("fedavg", {}, {}),
    "tiny-fedavg-mlp": ("fedavg", {}, {"model": "mlp", "hidden": "8", "momentum": "0.5"}),
    "tiny-fedprox": ("fedprox", {"mu": 0.1}, {}),
    "tiny-fedlga": ("fedlga", {}, {}),
    "tiny-fednova": ("fednova", {"mu": 0.1}, {}),
    "tiny-scaffold": ("scaffold", {}, {}),
    "tiny-feddyn": ("feddyn", {"alpha": 0.1}, {}),
    "tiny-fedcm": ("fedcm", {"alpha": 0.5}, {}),
    "tiny-mimelite": ("mimelite", {"beta": 0.5}, {}),
    "tiny-fedsam": ("fedsam", {"r": 0.1}, {}),
    "tiny-fedmax": ("fedmax", {}, {}),
    "tiny-fedsoftmax": ("fedsoftmax", {}, {}),
    "tiny-sfl": ("sfl", {}, {}),
    "tiny-pfl": ("pfl", {"eta_g": 0.9}, {}),
    "tiny-fedavg+momentum": ("fedavg", {}, {"server_lr": "0.5", "server_momentum": "0.9"}),
    "tiny-fedavg+adagrad": ("fedavg", {}, {"server_opt": "adagrad", "server_lr": "0.03"}),
    "tiny-fedavg+adam": ("fedavg", {}, {"server_opt": "adam", "server_lr": "0.03"}),
    "tiny-fedavg+yogi": ("fedavg", {}, {"server_opt": "yogi", "server_lr": "0.03"}),
}
SERIES = ("local_loss", "test_loss", "test_acc")
FINAL = ("w_norm", "w_sum")


def arithmetic_config(name: str) -> RunConfig:
    method, params, fields = ARITHMETIC[name]
    cfg = build_config("default", None, {**_TINY, "method": method, **fields})
    return validate_config(RunConfig(**{**cfg.to_dict(), "method_params": params}))


def run_arithmetic(name: str) -> dict:
    """One arithmetic check's numbers: {series: [one per round], w_norm, w_sum}."""
    from fedbench.training.engine import Engine

    eng = Engine(arithmetic_config(name))
    out: dict[str, list | float] = {s: [] for s in SERIES}
    for r in range(1, eng.cfg.rounds + 1):
        rec = {**eng.run_round(r), **eng.eval_record()}
        for s in SERIES:
            out[s].append(float(rec[s]))
    out["w_norm"] = float(eng.w.norm())
    out["w_sum"] = float(eng.w.sum())
    return out


def differences(ref: dict, now: dict) -> tuple[float, str, object, object]:
    """The largest relative difference of now from ref (beyond ATOL), where it is and the two
    numbers there, e.g. (3e-2, 'test_loss[round 2]', 0.51, 0.49); inf where a number is
    missing, or not finite in one only."""
    worst, where, values = 0.0, "all numbers", ("-", "-")
    for key in (*SERIES, *FINAL):
        a, b = ref.get(key), now.get(key)
        pairs = list(zip(a, b)) if isinstance(a, list) and isinstance(b, list) else [(a, b)]
        if isinstance(a, list) and isinstance(b, list) and len(a) != len(b):
            return math.inf, f"{key} rounds", len(a), len(b)
        for i, (x, y) in enumerate(pairs):
            d = relative(x, y)
            if d > worst:
                worst, values = d, (x, y)
                where = key if len(pairs) == 1 else f"{key}[round {i + 1}]"
    return worst, where, *values


def relative(x, y) -> float:
    if not isinstance(x, (int, float)) or not isinstance(y, (int, float)):
        return math.inf
    if math.isnan(x) and math.isnan(y):
        return 0.0
    if not (math.isfinite(x) and math.isfinite(y)):
        return 0.0 if x == y else math.inf
    gap = abs(x - y)
    return 0.0 if gap <= ATOL else gap / max(abs(x), abs(y))


def measure_arithmetic(names) -> dict:
    """{name: numbers} of fresh runs of these arithmetic checks (in this process)."""
    return {name: run_arithmetic(name) for name in names}


def arithmetic_rows(measured: dict, reference: dict, row) -> list:
    """One `row` (fedbench.check.Row) per check: the largest relative difference from the
    reference and where it is; REGRESSED above RTOL."""
    refs = reference.get("arithmetic", {})
    rows = []
    for name, now in measured.items():
        ref = refs.get(name)
        if ref is None:
            rows.append(row(name, "-", "-", "-", "-", "not compared: no reference (--update)"))
            continue
        worst, where, was, got = differences(ref, now)
        status = "ok" if worst <= RTOL else "REGRESSED"
        metric = "all numbers identical" if worst == 0 else f"{where}: rel. diff {worst:.2g}"
        rows.append(row(name, metric, was, got, f"rel. diff <= {RTOL:g}", status))
    return rows
