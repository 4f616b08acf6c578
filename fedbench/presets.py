"""Named paper settings. Each preset says where its numbers come from."""

from __future__ import annotations

import dataclasses

from fedbench.config import RunConfig
from fedbench.errors import FedbenchError

# name -> (source, field values). Unlisted fields keep RunConfig's defaults.
PRESETS: dict[str, tuple[str, dict]] = {
    "default": (
        "FedAvg on FedProx's Synthetic(1,1), short run (the embedded default, no download)",
        dict(
            dataset="synthetic",
            syn_alpha=1.0,
            syn_beta=1.0,
            partition="natural",
            model="logreg",
            init="zeros",
            num_clients=30,
            clients_per_round=10,
            local_epochs=20,
            batch_size=10,
            lr=0.01,
            rounds=50,
            eval_train=True,
        ),
    ),
    "fedprox-synthetic": (
        "FedProx (MLSys 2020) §5.1-5.2, Fig. 1, App. C: Synthetic(1,1), 50% stragglers, E=20",
        dict(
            dataset="synthetic",
            syn_alpha=1.0,
            syn_beta=1.0,
            partition="natural",
            model="logreg",
            init="zeros",
            num_clients=30,
            clients_per_round=10,
            local_epochs=20,
            batch_size=10,
            lr=0.01,
            rounds=200,
            hetero="stragglers",
            stragglers=0.5,
            straggler_policy="drop-fedavg",
            eval_train=True,
        ),
    ),
    "fedlga-fmnist": (
        "FedLGA (IEEE TCYB 2023) §VI-A, Tables III-VI: FMNIST, MLP 784-400-10, P=2, "
        "N=50, K=10, E=5, B=10, rho=0.5, tau_max=E-1, target 65%",
        dict(
            dataset="fmnist",
            partition="pclass",
            classes_per_client=2,
            model="mlp",
            hidden=400,
            num_clients=50,
            clients_per_round=10,
            local_epochs=5,
            batch_size=10,
            lr=0.01,
            rounds=200,
            hetero="fedlga",
            rho=0.5,
            tau_max=4,
            target_acc=0.65,
            aggregation="uniform",
        ),
    ),
}


def get_preset(name: str) -> RunConfig:
    if name not in PRESETS:
        raise FedbenchError(
            f"unknown preset {name!r}; choose one of: {', '.join(sorted(PRESETS))} "
            "(fedbench presets lists them)"
        )
    values = PRESETS[name][1]
    return dataclasses.replace(RunConfig(), preset=name, **values)
