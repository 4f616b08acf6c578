"""TF32 (docs/gpu.md, "TF32"): off unless FEDBENCH_TF32=1, recorded in run.json, a bad value
stops with one line before any work."""

import json

import pytest
import torch
from test_bad_inputs import TINY, assert_one_line_exit_2, run_cli

from fedbench.devices import apply_tf32, tf32_requested
from fedbench.results.schema import RUN_KEYS


@pytest.fixture
def tf32_flags():
    """torch's two TF32 flags, restored after the test."""
    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    yield
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


def test_tf32_is_off_by_default_on_cuda(tf32_flags, monkeypatch):
    """torch's own default lets cuDNN convolutions use TF32: a CUDA run turns it off."""
    monkeypatch.delenv("FEDBENCH_TF32", raising=False)
    torch.backends.cudnn.allow_tf32 = True
    assert apply_tf32(torch.device("cuda")) is False
    assert not torch.backends.cudnn.allow_tf32
    assert not torch.backends.cuda.matmul.allow_tf32


def test_tf32_on_when_asked(tf32_flags, monkeypatch):
    monkeypatch.setenv("FEDBENCH_TF32", "1")
    assert apply_tf32(torch.device("cuda")) is True
    assert torch.backends.cudnn.allow_tf32 and torch.backends.cuda.matmul.allow_tf32
    assert apply_tf32(torch.device("cpu")) is False  # no TF32 on a CPU: recorded false


@pytest.mark.parametrize("value", ["yes", "2", "tf32"])
def test_bad_tf32_value_is_refused(monkeypatch, value):
    monkeypatch.setenv("FEDBENCH_TF32", value)
    with pytest.raises(Exception, match="FEDBENCH_TF32"):
        tf32_requested()


def test_bad_tf32_value_stops_train_before_any_work(tmp_path, monkeypatch):
    monkeypatch.setenv("FEDBENCH_TF32", "on")
    args = ["train", "--preset", "default", "--results", tmp_path / "res", *TINY]
    assert_one_line_exit_2(args, tmp_path, "FEDBENCH_TF32")


def test_run_json_records_tf32(tmp_path, monkeypatch):
    monkeypatch.setenv("FEDBENCH_TF32", "1")  # asked for, but this run is on the CPU
    res = tmp_path / "res"
    r, _, _ = run_cli(["train", "--preset", "default", "--results", res, *TINY], tmp_path)
    assert r.exit_code == 0, r.output
    (meta,) = [json.loads(p.read_text()) for p in res.rglob("run.json")]
    assert meta["tf32"] is False
    assert "tf32" in [k for k, _, _ in RUN_KEYS]
