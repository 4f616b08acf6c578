"""FedLGA (IEEE TCYB 2023): its presets and its tables at its setting (Tables V-VI, Fig. 5).

Nine methods (FedLGA under both of the paper's readings of g) run at the paper's setting, rounds
and seconds to the target accuracy, and FedLGA alone against tau_max. Figs. 6-10 (one parameter
at a time: E, rho, N, K, the imbalance xi) are in fedbench/papers/fedlga_sensitivity.py.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from fedbench.presets import register_preset
from fedbench.tables.claims import Claim, every, lowest, ordered, ratio_near, untestable
from fedbench.tables.paper_values import PaperRef
from fedbench.tables.spec import Cell, Derived, PlotSpec, runs, table

# assumed names (a config field defined elsewhere in fedbench, and the split that reads it)
IMBALANCE = "xi"  # config field xi = |X_large| / |X_small| (FedLGA Fig. 10) ...
IMBALANCE_SPLIT = {"partition": "imbalance"}  # ... read only by this split

FEDLGA_METHODS = (
    ("fedlga", "FedLGA"),
    ("fedavg", "FedAvg"),
    ("fedprox", "FedProx"),
    ("fednova", "FedNova"),
    ("scaffold", "Scaffold"),
    ("feddyn", "FedDyn"),
    ("fedcm", "FedCM"),
    ("mimelite", "MimeLite"),
    ("fedsam", "FedSAM"),
)
FEDLGA_DATASETS = ("fmnist", "cifar10", "cifar100")
E_GRID = (3, 5, 8)  # Fig. 6: the text names E=5 (default) and E=8; 3 is our third point
RHO_GRID = (0.1, 0.3, 0.5, 0.7, 0.9)  # Fig. 7: the text names 0.1 and 0.5
N_GRID = (30, 50, 100)  # Fig. 8
K_GRID = (5, 10, 25)  # Fig. 9
XI_GRID = (1, 2, 3)  # Fig. 10, with P = 3 (CIFAR-10) and 30 (CIFAR-100)
TAU_FRACTIONS = (0.8, 0.6, 0.4, 0.2)  # Table VI: tau_max in {0.8, 0.6, 0.4, 0.2} E
FEDLGA_TAU_ROW = "FedLGA tau_max=0.8E"
FEDLGA_EQ6 = "FedLGA (Eq. 6)"  # rows of FedLGA with g = eq6, the paper's Eq. 6 read literally
# Tables V-VI and Figs. 6-7 measure rounds and seconds to the target: their runs end there
# (stopping after the target changes no round before it) and share ids across tables
TO_TARGET = {"stop_at_target": True}
_TO = "rounds to target"
_BASELINES = [label for _, label in FEDLGA_METHODS[1:]]
# FedSAM takes two gradient passes a local step; the paper "evaluated [it] based on the
# operation number for comparison" (§VI-A3), so its rows at equal gradient evaluations (the same
# runs, counted per gradient: metrics.py) are the ones the claims compare with
FEDSAM_EQUAL = "FedSAM (equal grads)"
_EQUAL_GRADS_METRIC = {
    "rounds_to_target": "rounds_to_target_2grads",
    "best_acc": "best_acc_half_rounds",
}
_FAIR_BASELINES = [b for b in _BASELINES if b != "FedSAM"] + [FEDSAM_EQUAL]
_FEDSAM_NOTE = (
    f"'{FEDSAM_EQUAL}': FedSAM's runs counted at FedAvg's gradient evaluations (two a local "
    "step: rounds to target x 2, best accuracy over the first half of the rounds), as the paper "
    "compares it ('based on the operation number', §VI-A3); the claims use this row, 'FedSAM' "
    "is the same runs per round."
)
# FedAvg with no slow devices (hetero none): the partial work's cost to FedAvg (spec §7.17)
NO_PARTIAL = "FedAvg, no partial work"
_TAU_ROWS = [f"FedLGA tau_max={f}E" for f in TAU_FRACTIONS]
_CURVES = ("test_acc", "train_loss")
# FedLGA under both of the paper's readings of g (methods/fedlga.py): the text's (the default)
# and Eq. 6 read literally; the paper has one FedLGA, so both rows take its number
_FEDLGA_READINGS = (("FedLGA", {}), (FEDLGA_EQ6, {"g": "eq6"}))
# the rows of Tables V-VI and Figs. 5-7: each row's label and the fields its runs set
_COMPARED = (
    *((label, dict(method="fedlga", **over)) for label, over in _FEDLGA_READINGS),
    *((label, {"method": m}) for m, label in FEDLGA_METHODS[1:]),
)
_COMPARED_FAIR = (*_COMPARED, (FEDSAM_EQUAL, {"method": "fedsam"}))
_READINGS_NOTE = (
    "FedLGA rows use the text's reading of g (the default); 'FedLGA (Eq. 6)' rows read "
    "Eq. 6 literally (g = eq6). The paper's number is the same for both."
)


def _paper_label(label: str) -> str:
    return {FEDLGA_EQ6: "FedLGA", FEDSAM_EQUAL: "FedSAM"}.get(label, label)


def _metric(label: str, metric: str) -> str:
    """The metric of a row: FedSAM at equal gradient evaluations counts its runs per gradient."""
    return _EQUAL_GRADS_METRIC[metric] if label == FEDSAM_EQUAL else metric


# ---------------------------------------------------------------- presets

# ---- FedLGA (IEEE TCYB 2023) §VI-A, spec §2: N=50, K=10, E=5, B=10, rho=0.5, tau_max=E-1,
# lr 0.01 (not stated; LG-FedAvg's), uniform 1/K average (Eq. 7). Each preset runs the paper's
# own method (fedlga-fmnist stays FedAvg, as it always was); --method swaps in a baseline.
_FEDLGA = dict(
    partition="pclass",
    num_clients=50,
    clients_per_round=10,
    local_epochs=5,
    batch_size=10,
    lr=0.01,
    hetero="fedlga",
    rho=0.5,
    tau_max=4,
    aggregation="uniform",
)
register_preset(
    "fedlga-fmnist",
    "FedLGA (IEEE TCYB 2023) §VI-A, Tables III-VI: FMNIST, MLP 784-400-10, P=2, "
    "N=50, K=10, E=5, B=10, rho=0.5, tau_max=E-1, target 65%",
    dict(
        _FEDLGA,
        dataset="fmnist",
        classes_per_client=2,
        model="mlp",
        hidden=400,
        rounds=200,
        target_acc=0.65,
    ),
)
# CIFAR input pipeline (§VI-A, spec §2.4, §7.5): LG-FedAvg's ImageNet normalization, random
# crop 32 (padding 4), flip, resize to 224 (the text; set resize=none for 32x32)
_FEDLGA_CIFAR = dict(
    _FEDLGA,
    model="resnet20",
    normalize="imagenet",
    augment=True,
    resize=224,
    method="fedlga",
)
register_preset(
    "fedlga-cifar10",
    "FedLGA (IEEE TCYB 2023) §VI-A, Tables IV-VI, Fig. 3: CIFAR-10, ResNet-20 (BN), P=2, "
    "N=50, K=10, E=5, B=10, rho=0.5, tau_max=E-1, crop+flip, resize 224, ~600 rounds, target 55%",
    dict(_FEDLGA_CIFAR, dataset="cifar10", classes_per_client=2, rounds=600, target_acc=0.55),
)
register_preset(
    "fedlga-cifar100",
    "FedLGA (IEEE TCYB 2023) §VI-A, Tables IV-VI, Fig. 4: CIFAR-100, ResNet-20 (BN), P=20, "
    "N=50, K=10, E=5, B=10, rho=0.5, tau_max=E-1, crop+flip, resize 224, ~500 rounds, target 40%",
    dict(_FEDLGA_CIFAR, dataset="cifar100", classes_per_client=20, rounds=500, target_acc=0.40),
)


# ---------------------------------------------------------------- tables


def _tau_full(cfg) -> int:
    return cfg.work_units - 1  # tau_max = E - 1 (the default heterogeneity)


def _tau_fraction(f: float):
    def fn(cfg) -> int:
        e = cfg.work_units
        return min(e - 1, max(1, math.floor(f * e + 0.5)))

    fn.__name__ = f"tau_max={f}E"
    return fn


def _table6(label: str, fraction: float | None = None) -> PaperRef:
    setting = f"tau_max={fraction}E" if fraction else "baseline (tau_max=E-1)"
    if label == "FedLGA" and fraction is None:
        setting = "tau_max=0.8E"  # FedLGA at tau_max = E-1 = 0.8E (E=5) is Table VI's first row
    return PaperRef("fedlga", "TableVI_tau_max", label, "rounds_to_target", setting)


def _ratio(a, b):
    if a is None or b is None or b == 0 or math.isinf(b):
        return None
    return a / b


def _fedlga_first(col_of, row: str = "FedLGA") -> Callable:
    """FedLGA's row needs fewer rounds than every baseline in each of the columns col_of gives."""
    fair = _FAIR_BASELINES
    return every(*(lowest((row, c), [(b, c) for b in fair], stated="text") for c in col_of))


# seconds on a shared 2-core machine drift with its load by more than seed noise (tables/README:
# per-round gaps of 3-7 % reversed between two renders): a timing difference counts only beyond
# this fraction of the faster one's mean
TIME_DRIFT = 0.10
_TIME_SAID = (
    "§VI-B3: 'FedLGA reaches the best total running time for all of the three introduced "
    "datasets, while only the third-best on the single running time ... Compared to FedAvg and "
    "FedNova which reach better single running time'"
)
# Table V's per-round gaps are 3-6 % (FedAvg 8.9 s vs FedLGA 9.4 s), below TIME_DRIFT: the
# table's runs, made minutes apart, showed FedLGA 1.15 s/round vs FedAvg 1.74 s (FedLGA does
# FedAvg's work plus a server step) while interleaved round by round (benchmarks/engine_speed.py
# --methods fedlga,fednova) the gap was -5 % and +0.5 %. Seconds from separate runs decide
# nothing here: both claims are n/a until an interleaved timing with a margin under the
# paper's gaps is made on a quiet machine.
_UNTIMED = (
    "the runs' seconds were recorded minutes apart under a changing load (drift over "
    f"{TIME_DRIFT:.0%}), above the paper's own gaps (3-6 % in Table V); interleaved "
    "(benchmarks/engine_speed.py --methods fedlga,fednova, methods alternated round by round) "
    "the per-round gap was -5 % and +0.5 %"
)
RUNTIME_CLAIMS = (
    Claim(
        "FedLGA reaches the target in the least total time of all methods",
        untestable(_UNTIMED, "text: best total time on all three datasets"),
        source=_TIME_SAID,
    ),
    Claim(
        "FedAvg and FedNova take less time per round than FedLGA (its work is on the server)",
        untestable(_UNTIMED),
        source=_TIME_SAID,
    ),
)


@table(
    "runtime",
    "FedLGA (TCYB 2023) Table V",
    "Running time: seconds per round and to target",
    FEDLGA_DATASETS,
    plot=PlotSpec("curves", "seconds_to_target", _CURVES, panels="dataset", x="cum_seconds"),
    notes=(
        "paper: GTX 1080Ti; ours: the device in the header. Compare ratios, not "
        "seconds. Targets: FMNIST 65%, CIFAR-10 55%, CIFAR-100 40%.",
        "fedbench plot runtime draws the learning curves of these runs (the default "
        "setting: FedLGA Figs. 3-4, test accuracy and training loss).",
        _READINGS_NOTE,
    ),
    claims=RUNTIME_CLAIMS,
    calibrated_by="tau",  # its cells are Table VI's runs
)
def _runtime(ds: str) -> list[Cell]:
    out = []
    for label, over in _COMPARED:
        for col, metric, paper_metric in (
            ("single s/round", "mean_round_seconds", "single_round_seconds"),
            ("total s to target", "seconds_to_target", "total_seconds_to_target"),
        ):
            ref = PaperRef("fedlga", "TableV_runtime", _paper_label(label), paper_metric)
            out.append(runs(ds, label, col, metric, f"fedlga-{ds}", ref, **over, **TO_TARGET))
    return out


def partial_work_cost() -> Claim:
    """The reading-free bound (spec §7.17), measured, not counted: FedAvg's rounds with the
    table's partial work over its rounds with none; Table VI implies 116 / 29 for FMNIST (FedLGA
    at 0.2E has no partial work under the tau reading and "FedAvg ... could be considered as a
    special case of the proposed FedLGA ... with tau_i = 1 for all devices", §IV-B)."""
    return Claim(
        "partial work costs FedAvg this many times its rounds with no slow devices (FedAvg at "
        "tau_max = E-1 over FedAvg with none); the paper implies FedAvg 116 / FedLGA at 0.2E 29 "
        "= 4.0x on FMNIST (Table VI; at 0.2E = 1 epoch short FedLGA has nothing to correct)",
        ratio_near(
            ("FedAvg", _TO), (NO_PARTIAL, _TO), paper_from=(("FedAvg", _TO), (_TAU_ROWS[-1], _TO))
        ),
        counted=False,
    )


_TAU_SAID = (
    "§VI-C1: 'on each considered value of tau_max, FedLGA outperforms the compared FL methods. "
    "In addition, as tau_max becomes larger, the performance of FedLGA degrades'; Table VI "
    "gives the baselines one number each ('-' under tau_max: the default tau_max = E-1)"
)
TAU_CLAIMS = (
    Claim(
        "FedLGA (tau_max = 0.8E) needs fewer rounds to the target than FedAvg",
        lowest((FEDLGA_TAU_ROW, _TO), [("FedAvg", _TO)]),
    ),
    Claim(
        "FedLGA read as Eq. 6 (tau_max = 0.8E) needs fewer rounds to the target than FedAvg",
        lowest((f"{FEDLGA_EQ6} tau_max=0.8E", _TO), [("FedAvg", _TO)]),
    ),
    Claim(
        "FedAvg needs about 1.9x (FMNIST, CIFAR-100) / 1.6x (CIFAR-10) FedLGA's rounds",
        ratio_near(("FedAvg", _TO), (FEDLGA_TAU_ROW, _TO)),
    ),
    Claim(
        "at every tau_max FedLGA needs fewer rounds than every baseline (as Table VI is built: "
        "FedLGA at each tau_max against the baselines at tau_max = E-1 = 0.8E, so at 0.2E "
        "FedLGA has no partial work at all and the baselines the most)",
        every(*(lowest((r, _TO), [(b, _TO) for b in _FAIR_BASELINES]) for r in _TAU_ROWS)),
        source=_TAU_SAID,
    ),
    Claim(
        "FedLGA degrades as tau_max grows (rounds: 0.2E <= 0.4E <= 0.6E <= 0.8E)",
        ordered([(r, _TO) for r in reversed(_TAU_ROWS)]),
        source=_TAU_SAID,
    ),
    partial_work_cost(),
)
TAU_NOTES = (
    "baselines run at tau_max = E-1; 'x FedLGA's rounds' is a baseline's rounds "
    "over FedLGA's (paper: the CIFAR-100 text, 1.9x ... 1.1x).",
    _READINGS_NOTE,
    _FEDSAM_NOTE,
    f"'{NO_PARTIAL}': FedAvg with no slow devices (hetero none), the bound no correction of "
    "partial work can beat (spec §7.17).",
)


def tau_cells(ds: str, preset: str, reading: dict | None = None) -> list[Cell]:
    """Table VI's cells on `preset`, every FedLGA and baseline run under `reading` (fields of the
    heterogeneity model; none: the default), FedSAM also at equal gradient evaluations, and
    FedAvg with no slow devices (hetero none: no reading applies)."""
    reading = reading or {}

    def cell(row: str, ref, x: float, metric: str = "rounds_to_target", **over) -> Cell:
        return runs(ds, row, _TO, metric, preset, ref, x=x, **over, **TO_TARGET)

    out = [
        cell(
            f"{name} tau_max={f}E",
            _table6("FedLGA", f),
            f,
            method="fedlga",
            tau_max=_tau_fraction(f),
            **over,
            **reading,
        )
        for name, over in _FEDLGA_READINGS
        for f in TAU_FRACTIONS
    ]
    for m, label in (*FEDLGA_METHODS[1:], ("fedsam", FEDSAM_EQUAL)):
        # x: tau_max = E-1 = 0.8E at the default E = 5
        metric = _metric(label, "rounds_to_target")
        ref = _table6(_paper_label(label))
        out.append(cell(label, ref, 0.8, metric, method=m, tau_max=_tau_full, **reading))
        ratio = Derived(((label, _TO), (FEDLGA_TAU_ROW, _TO)), _ratio)
        ref = PaperRef("fedlga", "text_rounds", _paper_label(label), "fedlga_speedup_x", "default")
        out.append(Cell(ds, label, "x FedLGA's rounds", derived=ratio, paper=ref))
    out.append(cell(NO_PARTIAL, None, 0.0, method="fedavg", hetero="none"))
    return out


@table(
    "tau",
    "FedLGA (TCYB 2023) Table VI",
    "Rounds to target accuracy for tau_max",
    FEDLGA_DATASETS,
    plot=PlotSpec("versus", "rounds_to_target", xlabel="tau_max / E"),
    notes=TAU_NOTES,
    claims=TAU_CLAIMS,
)
def _tau(ds: str) -> list[Cell]:
    return tau_cells(ds, f"fedlga-{ds}")


_BEST = "best acc %"
_GAIN = "FedLGA's gain over this (% relative)"
BEST_ACC_CLAIMS = (
    Claim(
        "FedLGA has the best test accuracy of all methods",
        lowest(
            ("FedLGA", _BEST),
            [(b, _BEST) for b in _FAIR_BASELINES],
            lower=False,
            stated="text: best on each dataset",
        ),
    ),
    Claim(
        "FedLGA improves FedAvg's best accuracy (64.44 vs 60.91 % on CIFAR-10)",
        lowest(("FedLGA", _BEST), [("FedAvg", _BEST)], lower=False),
    ),
    Claim(
        "FedLGA read as Eq. 6 improves FedAvg's best accuracy",
        lowest((FEDLGA_EQ6, _BEST), [("FedAvg", _BEST)], lower=False),
    ),
)


def _gain(fedlga, other):
    """FedLGA's best accuracy over another's, in % relative (the text's 'improves ... by 5.7%':
    64.44 vs FedAvg's 60.91 %, abstract)."""
    return None if fedlga is None or not other else 100.0 * (fedlga - other) / other


@table(
    "best-acc",
    "FedLGA (TCYB 2023) Fig. 5",
    "Best test accuracy",
    FEDLGA_DATASETS,
    plot=PlotSpec("bars", "best_acc"),
    notes=(
        "paper numbers are from the text (CIFAR-10 only): FedLGA 64.44 % 'improves' FedAvg's "
        "(60.91 %, the abstract) 'by 5.7%, 3.8%, ...': relative gains, (FedLGA - this) / this "
        f"(64.44 vs 60.91 is 5.8 % relative, 3.53 points); '{_GAIN}' is ours in the same unit.",
        _READINGS_NOTE,
        _FEDSAM_NOTE,
    ),
    claims=BEST_ACC_CLAIMS,
    calibrated_by="tau",  # Fig. 5 gives no FMNIST number; its setting is Table VI's
)
def _best_acc(ds: str) -> list[Cell]:
    out = []
    for label, over in _COMPARED_FAIR:
        ref, paper_label = None, _paper_label(label)
        # the text's absolute numbers are FedLGA's and FedAvg's (the rest: relative gains)
        if paper_label in ("FedLGA", "FedAvg"):
            ref = PaperRef(
                "fedlga", "text_best_acc", paper_label, "best_test_accuracy_pct", "default"
            )
        metric = _metric(label, "best_acc")
        out.append(runs(ds, label, _BEST, metric, f"fedlga-{ds}", ref, **over))
        if paper_label != "FedLGA":
            gain = PaperRef(
                "fedlga", "text_best_acc", paper_label, "fedlga_improvement_pct_relative", "default"
            )
            derived = Derived((("FedLGA", _BEST), (label, _BEST)), _gain)
            out.append(Cell(ds, label, _GAIN, derived=derived, paper=gain))
    return out
