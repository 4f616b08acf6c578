"""Plugins (fedbench.plugins): a method, dataset or table from a file or module outside the
package, loaded by --plugin on any command, FEDBENCH_PLUGINS or an entry point; checked like a
built-in name (a bad plugin is one line, exit 2, naming its file); recorded in run.json without
entering the run's identity; its contracts run by `fedbench check --contracts`."""

import hashlib
import importlib.metadata
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from fedbench import plugins
from fedbench.cli import cli
from fedbench.testing import registries_restored

PLUGIN = '''
"""A test plugin: a method and a dataset."""
from dataclasses import dataclass, field

import numpy as np

from fedbench.data.registry import Arrays, register_dataset
from fedbench.methods import Method, register


@dataclass(frozen=True)
class HalfParams:
    scale: float = field(default=0.5, metadata={"help": "step scale"})


@register
class Half(Method):
    """SGD at a scaled step (a test plugin)."""

    name = "half_sgd"
    Params = HalfParams
    reduces_to_fedavg = {"scale": 1.0}

    def local_step(self, ctx, w, grad_fn, local):
        _, g = grad_fn(w)
        return g * self.p.scale


@register_dataset("blobs", natural=True)
def load(cfg):
    rng = np.random.default_rng(cfg.seed)
    x = rng.normal(size=(80, 5)).astype("float32")
    y = (x[:, 0] > 0).astype("int64")
    parts = [np.arange(i * 15, (i + 1) * 15) for i in range(4)]
    return Arrays(x[:60], y[:60], x[60:], y[60:], 2, "blobs", parts=parts)
'''
FAST = ["--rounds", "2", "--set", "N=4", "--set", "K=2", "--set", "E=1", "--quiet"]


@pytest.fixture(autouse=True)
def sandbox():
    with registries_restored():
        yield


@pytest.fixture
def plugin_file(tmp_path):
    path = tmp_path / "half.py"
    path.write_text(PLUGIN)
    return path


def invoke(*args, env=None):
    return CliRunner().invoke(cli, [str(a) for a in args], obj={}, env=env)


def test_a_plugin_method_trains_on_a_plugin_dataset_and_run_json_names_the_file(
    plugin_file, tmp_path
):
    res = tmp_path / "r"
    r = invoke("train", "--plugin", plugin_file, "--method", "half_sgd", "--set",
               "dataset=blobs", *FAST, "--results", res)  # fmt: skip
    assert r.exit_code == 0, r.output
    (meta_path,) = res.glob("half_sgd-blobs-*/run.json")
    meta = json.loads(meta_path.read_text())
    (rec,) = meta["plugins"]
    assert rec["path"] == str(plugin_file.resolve())
    assert rec["sha256"] == hashlib.sha256(plugin_file.read_bytes()).hexdigest()
    assert meta["status"] == "complete" and meta["method_version"] == 1


def test_group_option_env_and_listing(plugin_file):
    r = invoke("--plugin", plugin_file, "methods")
    assert r.exit_code == 0 and "half_sgd" in r.output
    assert os.environ[plugins.ENV] == str(plugin_file.resolve())  # what workers inherit


def test_the_environment_loads_plugins(plugin_file):
    r = invoke("methods", env={plugins.ENV: str(plugin_file)})
    assert r.exit_code == 0 and "half_sgd" in r.output, r.output


def test_every_command_takes_plugin():
    def walk(cmd):
        yield cmd
        for sub in getattr(cmd, "commands", {}).values():
            yield from walk(sub)

    missing = [c.name for c in walk(cli) if not any(p.name == "plugin" for p in c.params)]
    assert not missing, missing


def test_identity_does_not_depend_on_where_the_file_is(plugin_file, tmp_path):
    """run_id is the config and the method's version: the same plugin moved and re-saved
    names the same runs; run.json records the file and its hash."""
    from fedbench.config import RunConfig
    from fedbench.identity import run_id

    cfg = RunConfig(dataset="blobs", partition="natural", method="half_sgd",
                    method_params={"scale": 0.25})  # fmt: skip
    with registries_restored():
        plugins.load([plugin_file])
        first = run_id(cfg)
    moved = tmp_path / "elsewhere" / "half_copy.py"
    moved.parent.mkdir()
    moved.write_text("# saved again\n" + PLUGIN)
    with registries_restored():  # as in a fresh process
        plugins.load([moved])
        assert run_id(cfg) == first


BAD = [
    ("x = (\n", "syntax error at line 1"),
    ("import no_such_module_here\n", "ModuleNotFoundError: No module named 'no_such_module_here'"),
    ("def f():\n    return 1 / 0\nf()\n", "ZeroDivisionError: division by zero (line 2)"),
    (PLUGIN.replace('"help": "step scale"', '"helpx": 1'), "parameter 'scale' needs metadata help"),
    (PLUGIN.replace('name = "half_sgd"', 'name = "fedavg"'), "method name 'fedavg' is already"),
    (PLUGIN.replace('"blobs", natural', '"mnist", natural'), "dataset name 'mnist' is already"),
    ("import sys\nsys.exit(0)\n", "called sys.exit(0) while being imported"),
    ("import sys\nsys.exit('text')\n", "called sys.exit('text') while being imported"),
    ("raise KeyboardInterrupt\n", "raised KeyboardInterrupt while being imported"),
]


@pytest.mark.parametrize("source", ["import sys\nsys.exit(0)\n", "raise KeyboardInterrupt\n"])
def test_a_plugin_ending_the_process_at_import_is_one_line_exit_2(source, tmp_path):
    path = tmp_path / "quits.py"
    path.write_text(source)
    for env in ({}, {plugins.ENV: str(path)}):
        args = [] if env else ["--plugin", str(path)]
        r = subprocess.run([sys.executable, "-m", "fedbench", "methods", *args],
                           capture_output=True, text=True, env={**os.environ, **env})  # fmt: skip
        lines = (r.stdout + r.stderr).strip().splitlines()
        assert r.returncode == 2 and len(lines) == 1, (r.returncode, lines)
        assert str(path.resolve()) in lines[0], lines


@pytest.mark.parametrize("source,needle", BAD)
def test_a_bad_plugin_is_one_line_exit_2_naming_the_file(source, needle, tmp_path):
    path = tmp_path / "bad.py"
    path.write_text(source)
    for args in (["methods", "--plugin", path], ["--plugin", path, "table"]):
        with registries_restored():  # each a fresh process
            r = invoke(*args)
        assert r.exit_code == 2, r.output
        line = r.output.strip()
        assert "\n" not in line and str(path.resolve()) in line and needle in line, line


@pytest.mark.parametrize(
    "spec,needle",
    [
        ("/no/such/plugin.py", "plugin /no/such/plugin.py not found"),
        ("no_such_pkg.mod", "plugin no_such_pkg.mod: no module named no_such_pkg"),
    ],
)
def test_missing_plugins(spec, needle):
    r = invoke("methods", "--plugin", spec)
    assert r.exit_code == 2 and needle in r.output, r.output
    r = invoke("methods", env={plugins.ENV: spec})
    assert r.exit_code == 2 and "from FEDBENCH_PLUGINS" in r.output, r.output


def test_a_module_plugin_and_an_entry_point(plugin_file, tmp_path, monkeypatch):
    pkg = tmp_path / "site"
    pkg.mkdir()
    (pkg / "halfmod.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(pkg))
    with registries_restored():
        r = invoke("methods", "--plugin", "halfmod")
        assert r.exit_code == 0 and "half_sgd" in r.output, r.output
        assert plugins.LOADED["halfmod"].path == str(pkg / "halfmod.py")
    assert "halfmod" not in sys.modules  # the sandbox forgets it: the next import registers
    with registries_restored():
        ep = importlib.metadata.EntryPoint("half", "halfmod", plugins.ENTRY_POINT_GROUP)
        monkeypatch.setattr(importlib.metadata, "entry_points", lambda group: [ep])
        monkeypatch.setattr(plugins, "_SCANNED", [])
        r = invoke("methods")
        assert r.exit_code == 0 and "half_sgd" in r.output, r.output
        assert plugins.LOADED["halfmod"].source == "entry point half"


def test_config_validation_accepts_plugin_names(plugin_file):
    from fedbench.config import RunConfig
    from fedbench.errors import FedbenchError

    with pytest.raises(FedbenchError, match="unknown dataset 'blobs'"):
        RunConfig(dataset="blobs", partition="natural").validate_data()
    plugins.load([plugin_file])
    RunConfig(dataset="blobs", partition="natural").validate_data()
    with pytest.raises(FedbenchError, match="dataset blobs has its own per-device split"):
        RunConfig(dataset="blobs", partition="iid").validate_data()


def test_a_sweep_worker_loads_the_plugins_from_the_environment(plugin_file, tmp_path):
    """What a pool worker or Ray task does: a fresh process, FEDBENCH_PLUGINS set, a config
    dict naming the plugin's method and dataset."""
    code = (
        "from fedbench.config import RunConfig\n"
        "from fedbench.sweep.executors import execute_run\n"
        "cfg = RunConfig(dataset='blobs', partition='natural', method='half_sgd', rounds=2,"
        " num_clients=4, clients_per_round=2, local_epochs=1)\n"
        f"out = execute_run(cfg.to_dict(), {str(tmp_path / 'r')!r}, threads=1)\n"
        "print(out['status'], out['error'])\n"
    )
    env = {**os.environ, plugins.ENV: str(plugin_file)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.stdout.split() == ["complete", "None"], out.stdout + out.stderr


def test_contracts_of_a_plugin(plugin_file, tmp_path):
    with registries_restored():
        r = invoke("check", "--contracts", "--plugin", plugin_file)
    assert r.exit_code == 0, r.output
    assert "method half_sgd" in r.output and "dataset blobs" in r.output
    assert "ok: 8 contract check(s) passed" in r.output
    liar = tmp_path / "liar.py"  # declares plain SGD but scales the gradient
    liar.write_text(
        PLUGIN.replace(
            "    def local_step",
            "    def linear_step(self):\n"
            "        from fedbench.methods.base import LinearStep\n"
            "        return LinearStep()\n\n    def local_step",
        )  # fmt: skip
    )
    with registries_restored():
        r = invoke("check", "--contracts", "--plugin", liar, "--only", "half_sgd")
    assert r.exit_code == 1, r.output
    assert "local_step matches linear_step" in r.output.splitlines()[-1], r.output


def test_module_names_of_files_are_stable(tmp_path):
    a = tmp_path / "my plugin.py"
    assert plugins._module_name(a) == plugins._module_name(Path(str(a)))
    assert plugins._module_name(a).startswith("fedbench_plugin_my_plugin_")


TABLE_PLUGIN = """
from fedbench.presets import register_preset
from fedbench.tables.spec import runs, table

register_preset("blobs-tiny", "a test preset", dict(dataset="blobs", partition="natural",
                num_clients=4, clients_per_round=2, local_epochs=1, rounds=2))


@table("blobs-acc", "test plugin", "Final accuracy on blobs", ("blobs",), seeds=(0,))
def _build(ds):
    rows = (("FedAvg", "fedavg"), ("Half", "half_sgd"))
    return [runs(ds, label, "acc %", "final_acc", "blobs-tiny", method=m) for label, m in rows]
"""


def test_a_plugin_table_sweeps_renders_and_takes_added_rows(plugin_file, tmp_path):
    tables = tmp_path / "tables.py"
    tables.write_text(TABLE_PLUGIN)
    load = ["--plugin", plugin_file, "--plugin", tables]
    res = tmp_path / "r"
    r = invoke("sweep", "--table", "blobs-acc", *load, "--results", res, "--quiet")
    assert r.exit_code == 0 and "2 run(s)" in r.output and "2 complete" in r.output, r.output
    r = invoke("table", "blobs-acc", *load, "--results", res)
    assert r.exit_code == 0 and "missing" not in r.output and "Half" in r.output, r.output
    r = invoke("sweep", "--table", "blobs-acc", *load, "--results", res, "--quiet",
               "--add-method", "fedprox:mu=0.1")  # fmt: skip
    assert r.exit_code == 0 and "1 run(s)" in r.output, r.output
    r = invoke("table", "blobs-acc", *load, "--results", res, "--add-method", "fedprox:mu=0.1")
    assert "fedprox mu=0.1 (added)" in r.output and "missing" not in r.output, r.output
    r = invoke("check", "--contracts", *load, "--only", "blobs-acc")
    assert r.exit_code == 0 and "table blobs-acc" in r.output and "2 run configs" in r.output
