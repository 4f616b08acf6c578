"""Table contracts, driven by the table registry (fedbench.tables.TABLES): for every table,
dataset and cell, the cell's config builds and validates, every paper value it names is in
paper_values.csv, and every metric it reduces is recorded by the run its config makes.

The last check runs each distinct cell config, shrunk (2-3 rounds, <= 5 devices, <= 2 sampled,
<= 2 local epochs or steps, batches of <= 4, no resize), on a stand-in of its dataset: random
arrays of the real shapes, split by the config's own partition. Configs that differ only in
numbers that scale results (lr, clip, weight decay, seeds, tau_max, ...) and not in what a run
records are grouped and run once.
"""

from __future__ import annotations

import dataclasses
import math
from collections import defaultdict
from unittest import mock

import numpy as np
import pytest

from fedbench import data as fdata
from fedbench.assembly import validate_config
from fedbench.config import RunConfig
from fedbench.errors import FedbenchError
from fedbench.identity import canonical_method_params, config_hash, run_id
from fedbench.tables import (
    METRICS,
    TABLES,
    Cell,
    SpecError,
    cell_config,
    check_override_names,
    lookup,
    runs,
)

# ---------------------------------------------------------------- stand-in data

N_TRAIN, N_TEST = 200, 40  # enough for CIFAR-100's 100 classes over 5 devices
_real_load_arrays = fdata.load_arrays


def standin_arrays(cfg: RunConfig):
    """load_arrays' result for cfg's dataset with random data of the real shapes; generated
    datasets (synthetic, quadratic) are cheap and come from their real generators."""
    if cfg.dataset in ("synthetic", "quadratic"):
        return _real_load_arrays(cfg)
    rng = np.random.default_rng(0)
    info: dict = {"description": f"stand-in {cfg.dataset}"}
    extras: dict = {}
    lstm = cfg.model in ("charlstm", "sentlstm")  # slow on a CPU: fewer samples
    n_train, n_test = (20, 5) if lstm else (N_TRAIN, N_TEST)
    if cfg.dataset in ("cifar10", "cifar100", "cinic10"):
        n_test = 10  # ResNets are slow to evaluate on a CPU
    n = n_train + n_test
    if cfg.dataset in ("cifar10", "cifar100", "cinic10"):
        classes = 100 if cfg.dataset == "cifar100" and not cfg.coarse_labels else 10
        x = rng.integers(0, 256, (n, 3, 32, 32), dtype=np.uint8)
        extras["pipeline"] = fdata._image_pipeline(cfg, getattr(__import__("torch"), cfg.dtype))
    elif cfg.dataset in ("mnist", "fmnist", "fedprox-mnist", "femnist"):
        classes = 62 if cfg.dataset == "femnist" else 10
        x = rng.standard_normal((n, 1, 28, 28)).astype(np.float32)
    elif cfg.dataset == "shakespeare":
        classes = 80
        x = rng.integers(0, classes, (n, 80))
        info["vocab_size"] = classes
    elif cfg.dataset == "sent140":
        classes = 2
        x = rng.integers(0, 50, (n, 25))
        info.update(vocab_size=51, embedding="stand-in", glove=False)
    else:  # pragma: no cover - a dataset added without a stand-in
        raise AssertionError(f"no stand-in for dataset {cfg.dataset}")
    y = np.arange(n) % classes  # every class present, so class-based splits work
    rng.shuffle(y)
    train_y = y[:n_train].astype(np.int64)
    if cfg.partition in ("natural", "exdir"):  # exdir needs hundreds of devices to cover C=1
        parts = list(np.array_split(np.arange(n_train), cfg.num_clients))
    else:
        parts = fdata.make_partition(cfg, train_y)
    return x[:n_train], train_y, x[n_train:], y[n_train:], parts, classes, info, extras


# ---------------------------------------------------------------- shrinking and grouping

# fields that change a run's numbers or inputs, not which columns it records
NOT_IN_COLUMNS = (
    "augment",
    "normalize",
    "lr",
    "lr_decay",
    "momentum",
    "weight_decay",
    "syn_alpha",
    "syn_beta",
    "dirichlet_alpha",
    "powerlaw_sigma",
    "quad_b_scale",
    "quad_group",
    "hidden",
    "tau_max",
    "seed",
    "data_seed",
    "local_epochs",
    "local_steps",
    "classes_per_client",
    "num_shards",
    "xi",
    "stop_at_target",  # ends a run early; records the same columns
    "preset",
)
# datasets whose stand-ins have the same shapes and model (they differ in classes only)
STANDIN_FAMILY = {"cifar100": "cifar10", "cinic10": "cifar10", "fmnist": "mnist"}


def shrink(cfg: RunConfig, rounds: int = 2) -> RunConfig:
    if cfg.model in ("charlstm", "sentlstm", "resnet18"):
        rounds = 1  # ~0.5 s a step on a CPU
    n = 2 if cfg.dataset == "quadratic" else min(cfg.num_clients, 5)
    small = dataclasses.replace(
        cfg,
        rounds=rounds,
        num_clients=n,
        clients_per_round=min(cfg.clients_per_round, 2, n),
        local_epochs=min(cfg.local_epochs, 2),
        local_steps=2,  # E = 2 units of work, whatever the unit: tau_max and stragglers still apply
        batch_size=min(cfg.batch_size, 4),
        resize=None,
        tau_max=1,
        hidden=min(cfg.hidden, 16),
        eval_every=1,
        device="cpu",
        data_dir=None,
    )
    return validate_config(small)


def contract_key(cfg: RunConfig) -> str:
    """What decides the columns a run records: categorical fields, method parameters, and
    whether there are slow devices / stragglers / a target at all."""
    d = cfg.to_dict()
    for k in NOT_IN_COLUMNS:
        d.pop(k)
    d.update(
        dataset=STANDIN_FAMILY.get(cfg.dataset, cfg.dataset),
        grad_clip=cfg.grad_clip is not None,
        rho=cfg.rho > 0,
        stragglers=cfg.stragglers > 0,
        target_acc=cfg.target_acc is not None,
        method_params=canonical_method_params(cfg),
    )
    return repr(sorted(d.items()))


def _run_cells(name: str) -> list[Cell]:
    return [c for c in TABLES[name].cells() if c.kind == "runs"]


def _first_seed(cell: Cell, name: str) -> int:
    seeds = cell.seeds or TABLES[name].seeds
    return seeds[0] if seeds else 0


# ---------------------------------------------------------------- 1. configs build


@pytest.mark.parametrize("name", list(TABLES))
def test_every_cell_config_builds_and_validates(name):
    bad = []
    for c in TABLES[name].cells():
        try:
            if c.kind == "runs":
                for seed in c.seeds or TABLES[name].seeds:
                    cell_config(c, seed)
            elif c.kind == "data":
                cell_config(dataclasses.replace(c, overrides=()), 0)
        except FedbenchError as e:
            bad.append(f"{c.dataset} / {c.row} / {c.col}: {e}")
    assert not bad, f"{name}: {len(bad)} cells do not build:\n" + "\n".join(bad[:5])


# ---------------------------------------------------------------- 2. paper values exist


@pytest.mark.parametrize("name", list(TABLES))
def test_every_paper_value_a_cell_names_exists(name):
    missing = [
        f"{c.dataset} / {c.row} / {c.col}: {c.paper}"
        for c in TABLES[name].cells()
        if c.paper is not None and lookup(c.paper, c.dataset) is None
    ]
    assert not missing, f"{name}: paper values not in the CSV:\n" + "\n".join(missing[:5])


# ---------------------------------------------------------------- 3. metrics are recorded

_RUNS: dict[str, tuple[dict, object]] = {}  # contract key -> (summary, rounds loader)


def _record(cfg: RunConfig, results) -> tuple[dict, object]:
    """Run cfg once on its stand-in (cached by contract key) and read it back as tables do."""
    from fedbench.results import RunIndex
    from fedbench.training.engine import Engine
    from fedbench.training.runner import train

    key = contract_key(cfg)
    if key not in _RUNS:
        with mock.patch.object(fdata, "load_arrays", standin_arrays):
            train(cfg, results, engine=Engine(cfg))
        index = RunIndex(results)
        rec = index.finished(config_hash(cfg))
        assert rec is not None and rec.status == "complete", f"{run_id(cfg)}: {rec}"
        _RUNS[key] = (rec.summary, lambda cols, rec=rec, ix=index: ix.rounds(rec, list(cols)))
    return _RUNS[key]


@pytest.mark.parametrize("name", [n for n in TABLES if _run_cells(n)])
def test_every_metric_a_cell_reduces_is_recorded(name, tmp_path_factory):
    results = tmp_path_factory.getbasetemp() / "contract-results"
    groups: dict[str, list[tuple[Cell, RunConfig]]] = defaultdict(list)
    for c in _run_cells(name):
        rounds = 3 if c.metric == "smoothness" else 2  # a curve's spread needs 3 points
        cfg = shrink(cell_config(c, _first_seed(c, name)), rounds)
        groups[contract_key(cfg)].append((c, cfg))
    bad = []
    for cells in groups.values():
        summary, rounds = _record(cells[0][1], results)
        for c, _ in cells:
            v = METRICS[c.metric].fn(summary, rounds)
            if v is None or (isinstance(v, float) and math.isnan(v)):
                bad.append(f"{c.dataset} / {c.row} / {c.col}: no {c.metric}")
    assert not bad, f"{name}: {len(bad)} cells get no number:\n" + "\n".join(bad[:5])


# ---------------------------------------------------------------- names checked when built


def test_a_spec_naming_an_unknown_field_or_parameter_fails_when_built():
    with pytest.raises(SpecError, match="'adaptive_mu' is neither a config field"):
        runs(
            "synthetic-iid",
            "r",
            "c",
            "final_train_loss",
            "default",
            method="fedprox",
            adaptive_mu=1,
        )
    with pytest.raises(SpecError, match="'imbalance'.*method fedlga"):
        check_override_names("fedlga-cifar10", {"imbalance": 2}, "here")
    # fields, paper aliases and the method's own parameters are fine; so is an unknown method,
    # which its cell shows as n/a
    check_override_names("fedlga-cifar10", {"xi": 2, "P": 3, "g": "B", "method.lam": 1}, "x")
    check_override_names("default", {"method": "fedprox", "mu": 1, "dissimilarity": True}, "x")
    check_override_names("default", {"method": "nosuch", "whatever": 1}, "x")
