"""Size caps (issue 24): what cannot be planned or cannot fit is refused before any work, with one
line and exit 2: a sweep over the cell cap (counted before expanding the grid), a config whose
memory estimate exceeds the device's memory, an empty --results path."""

import dataclasses
import math
import time
from pathlib import Path

import click
import pytest
from test_bad_inputs import assert_one_line_exit_2

from fedbench import resources
from fedbench.assembly import build_config
from fedbench.cli import cli
from fedbench.errors import FedbenchError
from fedbench.sweep.grid import MAX_CELLS


def refused(args, cwd: Path, needle: str) -> str:
    """The one stderr line of a command that exits 2, prints nothing else and writes nothing."""
    return assert_one_line_exit_2([str(a) for a in args], cwd, needle)


def values(n: int) -> str:
    return ",".join(str(0.001 * (i + 1)) for i in range(n))


# ---------------------------------------------------------------- the cell cap


def test_a_grid_of_a_million_cells_is_refused_at_once(tmp_path):
    args = ["sweep", "--grid", f"lr={values(1000)}", "--grid", f"rho={values(1000)}"]
    for dry in ([], ["--dry-run"]):
        t0 = time.perf_counter()
        line = refused([*args, *dry, "--results", tmp_path / "r"], tmp_path, "1,000,000 runs")
        assert time.perf_counter() - t0 < 30  # counted, not expanded (today: > 120 s)
        assert f"cap of {MAX_CELLS:,}" in line and "split it into several sweeps" in line


def test_a_sweep_file_of_a_million_cells_is_refused(tmp_path):
    f = tmp_path / "big.toml"
    f.write_text(
        'methods = ["fedavg", "fedprox"]\nseeds = [0, 1]\n'
        f"[grid]\nlr = [{values(500)}]\n[grid.fedprox]\nmu = [{values(1000)}]\n"
    )
    # fedavg: 500 x 2 seeds; fedprox: 500 x 1000 x 2 seeds
    refused(["sweep", "--file", f, "--dry-run", "--results", tmp_path / "r"], tmp_path, "1,001,000")


def test_the_cap_counts_seeds_and_method_axes_before_expanding(monkeypatch):
    from fedbench.sweep import grid as grid_module
    from fedbench.sweep import grid_configs

    monkeypatch.setattr(grid_module, "MAX_CELLS", 12)
    built = []
    real = grid_module.build_config
    monkeypatch.setattr(
        grid_module, "build_config", lambda *a, **k: built.append(1) or real(*a, **k)
    )
    # fedavg 2 lr x 2 seeds + fedprox 2 lr x 2 mu x 2 seeds = 12: at the cap, planned
    kw = dict(methods=["fedavg", "fedprox"], seeds=[0, 1], grid={"lr": ["0.1", "0.2"]})
    kw["method_grids"] = {"fedprox": {"mu": [0.1, 1.0]}}
    assert len(grid_configs(**kw)) == 12
    built.clear()
    kw["seeds"] = [0, 1, 2]  # 18: refused before a single config is built but the base
    with pytest.raises(FedbenchError, match="has 18 runs, over fedbench's cap of 12"):
        grid_configs(**kw)
    assert len(built) == 1


def test_a_table_sweep_over_the_cap_is_refused(tmp_path):
    seeds = ",".join(str(i) for i in range(MAX_CELLS + 1))
    refused(
        ["sweep", "--table", "tau", "--dataset", "fmnist", "--seeds", seeds, "--dry-run",
         "--results", tmp_path / "r"],
        tmp_path,
        "over fedbench's cap",
    )  # fmt: skip


# ---------------------------------------------------------------- the memory estimate


def test_the_estimate_of_the_default_run_by_hand():
    """Synthetic(1,1): N 30 devices of E[int(lognormal(4, 2))] + 50 = e^6 + 49.5 samples
    (90/10 split), 60 float32 features; logreg D = 60 x 10 + 10; K 10, E 20, B 10."""
    cfg = build_config("default")
    n = int(30 * (math.exp(6) + 49.5))
    train, test = n * 9 // 10, n // 10
    steps = 20 * math.ceil(train / 30 / 10)
    want = {
        "plan": 10 * steps * 10 * (8 + 4),  # int64 indices and float32 weights [K, S, B]
        "data": (train + test) * (60 * 4 + 8) + train * 8,  # inputs, labels, device indices
        "rows": 2 * 10 * 610 * 4,  # models and gradients [K, D]
        "inputs": 10 * 10 * 60 * 4,  # a step's batch [K, B, 60]
    }
    parts = resources.memory_parts(cfg)
    assert [p.nbytes for p in parts] == [want["plan"], want["data"], want["rows"], want["inputs"]]
    assert "K 10 x 820 steps x B 10" in parts[0].what and "D 610" in parts[2].what


def test_float64_and_images_count_their_bytes():
    cfg = build_config("fedlga-cifar10", None, {"dtype": "float64", "resize": 64})
    data, rows, inputs = resources.memory_parts(cfg)[1:]
    assert data.nbytes == 60000 * (3 * 32 * 32 * 1 + 8) + 50000 * 8  # uint8 images on the device
    assert inputs.nbytes == cfg.clients_per_round * cfg.batch_size * 3 * 64 * 64 * 8
    assert (
        rows.nbytes
        == 2 * cfg.clients_per_round * resources.model_dim(cfg, resources.data_shape(cfg)) * 8
    )


@pytest.mark.parametrize(
    "sets,needle",
    [
        (["N=10000000", "K=10000000"], "lower num_clients (N)"),
        (["batch_size=2000000000"], "lower batch_size (B)"),
        (["model=mlp", "hidden=2000000000"], "or the model (mlp, hidden)"),
    ],
)  # fmt: skip
@pytest.mark.parametrize("command", ["train", "sweep"])
def test_what_cannot_fit_is_refused_before_allocating(tmp_path, command, sets, needle):
    args = [command, "--results", tmp_path / "r", "--threads", "1", "--quiet"]
    t0 = time.perf_counter()
    line = refused([*args, *(x for s in sets for x in ("--set", s))], tmp_path, needle)
    assert time.perf_counter() - t0 < 60  # today: masked allocation errors or no answer
    assert "of memory" in line and "available RAM" in line
    if command == "sweep":
        assert "run fedavg-synthetic-s0-" in line


def test_the_refusal_names_the_estimate_and_the_memory(monkeypatch):
    monkeypatch.setattr(resources, "available_ram", lambda: 1e6)
    cfg = build_config("default")
    with pytest.raises(FedbenchError) as e:
        resources.check_memory(cfg)
    total = sum(p.nbytes for p in resources.memory_parts(cfg))
    msg = str(e.value)
    assert msg.startswith(f"the run needs an estimated {resources.fmt_bytes(total)} of memory")
    assert "this machine has 1 MB available RAM" in msg
    monkeypatch.setattr(resources, "available_ram", lambda: total)
    resources.check_memory(cfg)  # exactly enough: runs
    monkeypatch.setattr(resources, "available_ram", lambda: None)
    resources.check_memory(dataclasses.replace(cfg, batch_size=2_000_000_000))  # unknown: runs


def test_paper_presets_fit_this_machine():
    """No preset is refused here (the estimate must not stop real work)."""
    from fedbench.presets import PRESETS

    for name in PRESETS:
        resources.check_memory(build_config(name), name)


# ---------------------------------------------------------------- an empty --results


def _commands_with_results():
    out = []

    def walk(cmd, path):
        if isinstance(cmd, click.Group):
            for name, sub in cmd.commands.items():
                walk(sub, [*path, name])
        elif any(isinstance(p, click.Option) and "--results" in p.opts for p in cmd.params):
            out.append(path)

    walk(cli, [])
    return out


ARGS = {"table": ["summary"], "plot": ["tau"]}  # the commands' required arguments


@pytest.mark.parametrize("path", _commands_with_results(), ids=" ".join)
@pytest.mark.parametrize("empty", ["", "  "])
def test_an_empty_results_path_is_refused(tmp_path, path, empty):
    line = refused([*path, *ARGS.get(path[0], []), "--results", empty], tmp_path, "--results")
    assert "current directory; give a folder" in line


def test_every_command_with_results_is_covered():
    assert {p[0] for p in _commands_with_results()} >= {
        "train", "sweep", "table", "plot", "check", "calibrate"
    }  # fmt: skip
