"""The dataset plugin: its settings reach the loader, name the run, and are checked (part of the
repository's test suite; also `python -m pytest examples/gaussian_blobs`)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fedbench import plugins
from fedbench.assembly import build_config
from fedbench.data import load_arrays
from fedbench.errors import FedbenchError
from fedbench.identity import run_id
from fedbench.testing import registries_restored

PLUGIN = Path(__file__).with_name("gaussian_blobs.py")
BASE = {"dataset": "gaussian_blobs", "model": "logreg", "N": "4", "K": "2", "E": "1"}


@pytest.fixture(autouse=True)
def plugin_loaded():
    with registries_restored():
        plugins.load([PLUGIN])
        yield


def test_settings_reach_the_loader():
    cfg = build_config("default", None, {**BASE, "samples_per_device": "7", "data.dims": "3"})
    assert cfg.dataset_params == {"samples_per_device": 7, "dims": 3}
    train_x, _, test_x, _, parts, classes, info, _ = load_arrays(cfg)
    assert train_x.shape == (28, 3) and [len(p) for p in parts] == [7] * 4 and classes == 2
    assert test_x.shape == (7, 3)


def test_settings_name_the_run_and_defaults_do_not():
    plain = build_config("default", None, BASE)
    same = build_config("default", None, {**BASE, "separation": "1.0"})  # the default
    other = build_config("default", None, {**BASE, "separation": "2"})
    assert run_id(plain) == run_id(same) != run_id(other)


@pytest.mark.parametrize(
    "sets,message",
    [
        ({"separation": "0"}, "gaussian_blobs: separation must be > 0, got 0.0"),
        ({"dims": "2.5"}, "gaussian_blobs: parameter dims expects int"),
        ({"data.nosuch": "1"}, "unknown parameter 'nosuch' for dataset gaussian_blobs"),
    ],
)
def test_bad_settings_are_one_line(sets, message):
    with pytest.raises(FedbenchError, match=message) as e:
        build_config("default", None, {**BASE, **sets})
    assert "\n" not in str(e.value)


def test_the_command_line_trains_on_it(tmp_path):
    cmd = [sys.executable, "-m", "fedbench", "train", "--plugin", str(PLUGIN), "--quiet"]
    for k, v in {**BASE, "separation": "2"}.items():
        cmd += ["--set", f"{k}={v}"]
    cmd += ["--rounds", "2", "--threads", "1", "--results", str(tmp_path)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    (run,) = [p for p in tmp_path.iterdir() if (p / "run.json").exists()]
    config = json.loads((run / "run.json").read_text())["config"]
    assert config["dataset_params"] == {"separation": 2.0}
    bad = [*cmd[:-1], str(tmp_path / "b"), "--set", "data.separation=-1"]  # given twice
    bad = subprocess.run(bad, capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1, bad.stderr
    assert "separation is given twice" in bad.stderr
    bad = [x.replace("separation=2", "separation=-1") for x in cmd]
    bad = subprocess.run(bad, capture_output=True, text=True)
    assert bad.returncode == 2 and "separation must be > 0" in bad.stderr, bad.stderr
