"""benchmarks/engine_speed.py honours --device (issue 37): its random data goes where the plan's
batch indices go, and --layouts runs on the device asked for (or stops with one line)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

BENCH = Path(__file__).resolve().parent.parent / "benchmarks"


@pytest.fixture
def engine_speed(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH))
    import engine_speed

    return engine_speed


@pytest.mark.parametrize("model", ["cnn", "charlstm"])
def test_random_data_goes_to_the_device(engine_speed, model):
    """A meta tensor stands in for a GPU's: it says where the data went without one."""
    data = engine_speed.random_data(model, 2, per_client=4, device="meta")
    assert data.train_x.device.type == "meta" and data.train_y.device.type == "meta"
    assert data.test_x.device.type == "meta"
    assert all(ix.device.type == "cpu" for ix in data.client_indices)  # index lists stay CPU


def test_layout_step_inputs_on_the_device(engine_speed):
    model, w, x, y, wt = engine_speed._step_inputs("cnn", 2, 3, "meta")
    assert {t.device.type for t in (w, x, y, wt)} == {"meta"}


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
@pytest.mark.parametrize("extra", [["--layouts"], ["--no-loop"]])
def test_missing_device_is_one_line_before_any_work(extra):
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(BENCH.parent)}
    args = [sys.executable, str(BENCH / "engine_speed.py"), "--model", "cnn", "--device", "cuda"]
    r = subprocess.run([*args, "--rounds", "1", *extra], capture_output=True, text=True, env=env)
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert r.stderr.strip().splitlines() == [
        "error: device cuda asked for but CUDA is not available; use device=cpu"
    ]
    assert r.stdout == ""
