"""The FedExP plugin's server step against a round computed by hand (part of the repository's
test suite; also `python -m pytest examples/fedexp`).

Quadratic devices F_i(w) = a_i w^2 + b_i w, one sample each, batch 1: the gradient 2 a_i w + b_i
is exact and every local step can be done on paper."""

import subprocess
import sys
from pathlib import Path

import pytest
import torch

from fedbench import plugins
from fedbench.assembly import build_config, validate_config
from fedbench.config import RunConfig
from fedbench.data import FederatedData
from fedbench.errors import FedbenchError
from fedbench.identity import run_id
from fedbench.testing import registries_restored

PLUGIN = Path(__file__).with_name("fedexp.py")


@pytest.fixture(autouse=True)
def plugin_loaded():
    with registries_restored():
        plugins.load([PLUGIN])
        yield


def quadratic_engine(coeffs, server_opt="fedexp", steps=2, lr=0.1, **over):
    from fedbench.training.engine import Engine

    x = torch.tensor([[[a], [b]] for a, b in coeffs], dtype=torch.float64)  # [N, 2, 1]
    y = torch.zeros(len(coeffs), dtype=torch.long)
    idx = [torch.tensor([i]) for i in range(len(coeffs))]
    data = FederatedData(x, y, x, y, idx, 1, {"description": "quadratic"})
    n = len(coeffs)
    cfg = RunConfig(
        model="quadratic",
        num_clients=n,
        clients_per_round=n,
        local_steps=steps,
        batch_size=1,
        lr=lr,
        rounds=2,
        dtype="float64",
        device="cpu",
        server_opt=server_opt,
        **over,
    )
    return Engine(validate_config(cfg), data=data)


def test_one_round_by_hand():
    """w^t = 10 (the quadratic model's start), lr 0.1, 2 local steps, p_i = 1/3, eps 1e-3.

    device (a, b)  step 1            step 2             Delta_i
    (1, -2)        g = 18,  w = 8.2  g = 14.4, w = 6.76  -3.24
    (0.5, 1)       g = 11,  w = 8.9  g = 9.9,  w = 7.91  -2.09
    (1, -30)       g = -10, w = 11   g = -8,   w = 11.8  +1.8
    Delta = (-3.24 - 2.09 + 1.8) / 3 = -1.17667; sum p_i Delta_i^2 = 18.1057 / 3 = 6.03523;
    eta = max(1, 6.03523 / (2 (1.38454 + 0.001))) = 2.17793; w^1 = 10 + eta Delta = 7.43730."""
    eng = quadratic_engine([(1.0, -2.0), (0.5, 1.0), (1.0, -30.0)])
    eng.run_round(1)
    deltas = [6.76 - 10, 7.91 - 10, 11.8 - 10]
    delta = sum(deltas) / 3
    eta = max(1.0, sum(d * d for d in deltas) / 3 / (2 * (delta * delta + 1e-3)))
    assert abs(eta - 2.17793) < 1e-5
    assert abs(float(eng.w) - (10 + eta * delta)) < 1e-12
    assert abs(float(eng.w) - 7.43730) < 1e-5


def test_devices_that_agree_take_fedavgs_step():
    """Equal devices: every Delta_i = Delta, the ratio is < 1/2, eta = 1: FedAvg's round."""
    coeffs = [(1.0, -2.0)] * 3
    ours, fedavg = quadratic_engine(coeffs), quadratic_engine(coeffs, server_opt="sgd")
    for r in (1, 2):
        ours.run_round(r)
        fedavg.run_round(r)
    assert float(ours.w) == float(fedavg.w)


def test_server_lr_and_epsilon_are_its_settings():
    """server_lr scales the step; epsilon is reached by --set (a bare name or server.NAME) and
    names the run; the default run's id is untouched by the plugin being loaded."""
    coeffs = [(1.0, -2.0), (0.5, 1.0), (1.0, -30.0)]
    half = quadratic_engine(coeffs, server_lr=0.5)
    half.run_round(1)
    assert abs(float(half.w) - 8.71865) < 1e-5  # 10 + 0.5 eta Delta
    a = build_config("default", None, {"server_opt": "fedexp", "epsilon": "0.01"})
    b = build_config("default", None, {"server_opt": "fedexp", "server.epsilon": "0.01"})
    assert a.server_params == b.server_params == {"epsilon": 0.01}
    plain = build_config("default", None, {"server_opt": "fedexp"})
    assert run_id(a) != run_id(plain) != run_id(build_config("default", None, {}))
    with pytest.raises(FedbenchError, match="epsilon must be > 0"):
        build_config("default", None, {"server_opt": "fedexp", "epsilon": "0"})


def test_a_sweep_grid_varies_its_parameter():
    from fedbench.sweep.grid import grid_configs

    sets = {"server_opt": "fedexp", "rounds": "2"}
    configs = grid_configs(
        "default", methods=["fedavg", "fedprox"], grid={"epsilon": ["0.1", "1"]}, sets=sets
    )
    assert sorted((c.method, c.server_params["epsilon"]) for c in configs) == [
        ("fedavg", 0.1),
        ("fedavg", 1.0),
        ("fedprox", 0.1),
        ("fedprox", 1.0),
    ]


def test_the_command_line_trains_with_it(tmp_path):
    cmd = [sys.executable, "-m", "fedbench", "train", "--plugin", str(PLUGIN), "--quiet"]
    cmd += ["--set", "server_opt=fedexp", "--rounds", "2", "--threads", "1"]
    cmd += ["--results", str(tmp_path)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    (run,) = [p for p in tmp_path.iterdir() if (p / "run.json").exists()]
    assert '"server_opt": "fedexp"' in (run / "run.json").read_text()
