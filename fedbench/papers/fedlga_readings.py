"""FedLGA's Table VI under the two readings of its heterogeneity model the paper leaves open
(spec §7.2 and §7.16), beside the default table `tau` (fedbench/papers/fedlga_paper.py):

- tau-at-most: slow devices "can only perform at most tau_max local epochs" (TCYB §VI-A4):
  E_i ~ U{1..tau_max}, tau_i = E - E_i + 1 (slow_work=at-most), where `tau` draws tau_i itself;
- tau-steps: "epoch" as one SGD step (Eq. 2 and Alg. 1 line 4 write one gradient term per e on
  one batch; Step II says devices run "E_i steps"; Fig. 2 "random steps between 1 and 5"): E = 5
  local SGD steps of B = 10 (local_steps = 5), tau counted in steps.

Each runs at its own lr where FedAvg needs about Table VI's 116 rounds: `fedbench calibrate
--table NAME --dataset fmnist --anchor fedavg --param lr`, then `--calibrated` (a table's fit is
its own). Both carry the partial-work bound (FedAvg with no slow devices) as a measured line.
"""

from __future__ import annotations

from fedbench.papers.fedlga_paper import FEDLGA_DATASETS, TAU_CLAIMS, TAU_NOTES, tau_cells
from fedbench.presets import PRESETS, register_preset
from fedbench.tables.spec import PlotSpec, TableSpec, register

STEPS_LR = 0.001  # issue 26's probe: E = 5 steps, B = 10, lr 0.001 gave FedAvg 90 rounds

# ---- the steps reading of FedLGA §VI-A: E = 5 local SGD steps (not passes) of B = 10
register_preset(
    "fedlga-fmnist-steps",
    "FedLGA (IEEE TCYB 2023) §VI-A read with 'epoch' = one SGD step (spec §7.16): FMNIST, MLP "
    "784-400-10, P=2, N=50, K=10, E=5 local steps, B=10, rho=0.5, tau_max=E-1 steps, lr 0.001, "
    "target 65%",
    dict(PRESETS["fedlga-fmnist"][1], local_steps=5, lr=STEPS_LR),
)

_PLOT = PlotSpec("versus", "rounds_to_target", xlabel="tau_max / E")

register(
    TableSpec(
        "tau-at-most",
        "FedLGA (TCYB 2023) Table VI, tau_max read as 'at most tau_max local epochs'",
        "Rounds to target for tau_max: slow devices run E_i ~ U{1..tau_max} epochs",
        FEDLGA_DATASETS,
        lambda ds: tau_cells(ds, f"fedlga-{ds}", {"slow_work": "at-most"}),
        plot=_PLOT,
        notes=(
            "slow_work = at-most (TCYB §VI-A4: slow devices 'can only perform at most tau_max "
            "local epochs'): a slow device runs E_i ~ U{1..tau_max} epochs, so tau_max = 0.2E is "
            "the most partial work here, where table tau (tau_i ~ U{1..tau_max}) has none.",
            *TAU_NOTES,
        ),
        claims=TAU_CLAIMS,
    )
)

register(
    TableSpec(
        "tau-steps",
        "FedLGA (TCYB 2023) Table VI, an 'epoch' read as one SGD step",
        "Rounds to target for tau_max: E = 5 local SGD steps, tau in steps",
        ("fmnist",),
        lambda ds: tau_cells(ds, f"fedlga-{ds}-steps"),
        plot=_PLOT,
        notes=(
            "preset fedlga-fmnist-steps: E = 5 local SGD steps of B = 10 (local_steps = 5; Step "
            "II's 'E_i steps', Alg. 1 line 4's one gradient per e), tau_i and tau_max in steps; "
            f"lr {STEPS_LR} (issue 26's probe) unless --calibrated.",
            *TAU_NOTES,
        ),
        claims=TAU_CLAIMS,
    )
)
