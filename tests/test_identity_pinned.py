"""Run identities of existing configs never change: stored results are found by these hashes."""

from __future__ import annotations

import pytest

from fedbench.assembly import build_config
from fedbench.config import RunConfig
from fedbench.identity import run_id

PINNED = [
    ((None, None, {}), "fedavg-synthetic-s0-e58e41b78302"),  # `fedbench train`'s default
    (("fedlga-fmnist", None, {}), "fedavg-fmnist-s0-1392eff9e345"),
    ((None, None, {"method": "fedprox", "mu": 0.1}), "fedprox-synthetic-s0-6b7cb0eb9b7c"),
    (
        (None, None, {"method": "fedlga", "rho": 0.3, "hetero": "fedlga", "tau_max": 3}),
        "fedlga-synthetic-s0-98718d644c0d",
    ),
    (
        (None, None, {"method": "scaffold", "lr": 0.05, "E": 5}),
        "scaffold-synthetic-s0-894d9f325703",
    ),
]


@pytest.mark.parametrize(("args", "expected"), PINNED)
def test_known_configs_keep_their_run_id(args, expected):
    assert run_id(build_config(*args)) == expected


def test_bare_config_keeps_its_run_id():
    assert run_id(RunConfig()) == "fedavg-synthetic-s0-3e545c551523"
