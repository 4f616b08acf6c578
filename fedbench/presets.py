"""Named paper settings: the preset registry. Each preset says where its numbers come from.

The papers' presets are registered by their modules in fedbench/papers/ (register_preset, next
to the paper's tables). This registry never imports them: the entry points do (the command line,
fedbench.api, a script: `import fedbench.papers`), so that nothing below the papers depends on
them. Only the default setting lives here.
"""

from __future__ import annotations

import dataclasses

from fedbench.config import RunConfig
from fedbench.errors import FedbenchError

# name -> (source, field values). Unlisted fields keep RunConfig's defaults.
PRESETS: dict[str, tuple[str, dict]] = {}


def register_preset(name: str, source: str, values: dict) -> None:
    """Add a named setting (fedbench presets lists them in the order they register)."""
    if name in PRESETS:
        raise ValueError(f"preset {name!r} is registered twice")
    PRESETS[name] = (source, values)


register_preset(
    "default",
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
)


def get_preset(name: str) -> RunConfig:
    if name not in PRESETS:
        raise FedbenchError(
            f"unknown preset {name!r}; choose one of: {', '.join(sorted(PRESETS))} "
            "(fedbench presets lists them)"
        )
    values = dict(PRESETS[name][1])
    values["method_params"] = dict(values.get("method_params", {}))  # presets stay unchanged
    return dataclasses.replace(RunConfig(), preset=name, **values)
