"""Fake run records for tests and benchmarks: the same files the runner writes (run.json with its
summary, rounds.parquet), with made-up curves, written in milliseconds."""

from __future__ import annotations

import json
import os
import sys
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pandas as pd

from fedbench import config, plugins, version
from fedbench.atomic import json_safe
from fedbench.config import RunConfig
from fedbench.identity import config_hash, method_version, run_id
from fedbench.results import SCHEMA_VERSION, summarize


def fake_rounds(
    rounds: int = 20,
    top: float = 0.8,
    speed: float = 5.0,
    loss0: float = 2.3,
    seconds: float = 0.1,
    k: int = 3,
    **columns,
) -> pd.DataFrame:
    """Saturating accuracy, decaying loss; extra per-round columns as arrays or callables of r."""
    r = np.arange(rounds + 1)
    decay = np.exp(-r / speed)
    df = pd.DataFrame(
        {
            "round": r,
            "test_acc": top - (top - 0.1) * decay,
            "test_loss": loss0 * decay + 0.3,
            "train_loss": loss0 * decay + 0.2,
            "local_loss": np.where(r > 0, loss0 * decay + 0.1, np.nan),
            "round_seconds": np.where(r > 0, seconds, 0.0),
            "cum_seconds": seconds * r,
            "clients": [list(range((i * k) % 7, (i * k) % 7 + k)) if i else [] for i in r],
        }
    )
    for name, v in columns.items():
        df[name] = v(r) if callable(v) else v
    return df


def write_fake_run(
    results: Path | str,
    cfg: RunConfig,
    rounds: pd.DataFrame | None = None,
    status: str = "complete",
    device_name: str = "fake device",
    error: str | None = None,
) -> Path:
    """results/<run_id>/{run.json, rounds.parquet} as the runner writes them."""
    rounds = fake_rounds(cfg.rounds) if rounds is None else rounds
    run_dir = Path(results) / run_id(cfg)
    run_dir.mkdir(parents=True, exist_ok=True)
    rounds.to_parquet(run_dir / "rounds.parquet", index=False)  # no fsync: fake data, fast
    meta = {
        "schema_version": SCHEMA_VERSION,
        "method_version": method_version(cfg.method),
        "rows": len(rounds),
        "run_id": run_id(cfg),
        "config": cfg.to_dict(),
        "config_hash": config_hash(cfg),
        "status": status,
        "fedbench_version": version.__version__,
        "device": "cpu",
        "device_name": device_name,
        "host": "fake",
        "data": {"devices": cfg.num_clients},
        "started": "2026-01-01T00:00:00+00:00",
        "ended": "2026-01-01T00:01:00+00:00",
        "summary": summarize(rounds, cfg.target_acc),
    }
    if error:
        meta["error"] = error
    (run_dir / "run.json").write_text(json.dumps(json_safe(meta), indent=2, default=str))
    return run_dir


def curve_until(top: float, hit_round: int | None, target: float, rounds: int) -> pd.DataFrame:
    """A curve that first reaches `target` exactly at `hit_round` (never, if None)."""
    r = np.arange(rounds + 1)
    if hit_round is None:
        acc = np.minimum(target - 0.01, 0.1 + (target - 0.11) * r / max(rounds, 1))
    else:
        acc = np.where(r < hit_round, 0.1 + (target - 0.11) * r / hit_round, top)
    df = fake_rounds(rounds)
    df["test_acc"] = acc
    return df


def tiny_data(sizes=(7, 12, 5, 9), dim=6, classes=3, seed=0, dtype=None):
    """Random classification data split into devices of the given sizes (float64 default)."""
    import torch

    from fedbench.data import FederatedData

    g = torch.Generator().manual_seed(seed)
    n = sum(sizes)
    x = torch.randn(n, dim, generator=g, dtype=dtype or torch.float64)
    y = torch.randint(0, classes, (n,), generator=g)
    idx, start = [], 0
    for s in sizes:
        idx.append(torch.arange(start, start + s))
        start += s
    return FederatedData(x, y, x[:10], y[:10], idx, classes, {"description": "tiny"})


# tiny_config's runs with partial work: FedLGA's heterogeneity, 70% of the sampled devices slow,
# each running E - tau_i + 1 of the E = 3 epochs, tau_i ~ U{1, 2}
PARTIAL_WORK = {"hetero": "fedlga", "rho": 0.7, "tau_max": 2}


def token_data(sizes, length: int, seed: int, vocab: int = 80, n_test: int = 8):
    """Random token sequences [n, length] (int64) with random next tokens, split into devices
    of the given sizes (the LSTMs' input); the first n_test are the test set."""
    import torch

    from fedbench.data import FederatedData

    g = torch.Generator().manual_seed(seed)
    n = sum(sizes)
    x = torch.randint(0, vocab, (n, length), generator=g)
    y = torch.randint(0, vocab, (n,), generator=g)
    idx = list(torch.arange(n).split(list(sizes)))
    return FederatedData(x, y, x[:n_test], y[:n_test], idx, vocab, {"vocab_size": vocab})


def tiny_config(**kw) -> RunConfig:
    """A 4-device, 3-per-round MLP run of 2 rounds in float64 on the CPU (tiny_data's size)."""
    base = dict(
        dataset="synthetic",
        model="mlp",
        hidden=8,
        num_clients=4,
        clients_per_round=3,
        local_epochs=3,
        batch_size=4,
        lr=0.1,
        rounds=2,
        dtype="float64",
        device="cpu",
    )
    base.update(kw)
    return RunConfig(**base)


@contextmanager
def registries_restored():
    """Every registry a plugin can add to (methods, server optimizers, datasets, models, presets,
    tables, the config's accepted names), the loaded plugins and FEDBENCH_PLUGINS, put back as
    they were when the block ends: a test may load plugins without leaking them into other tests."""
    from fedbench.data.registry import DATASETS
    from fedbench.methods import METHODS
    from fedbench.methods.server_opt import SERVER_OPTIMIZERS
    from fedbench.models.registry import MODELS
    from fedbench.presets import PRESETS
    from fedbench.tables.spec import TABLES

    kinds = (METHODS, SERVER_OPTIMIZERS, DATASETS, MODELS, PRESETS, TABLES, plugins.LOADED)
    saved = [(r, dict(r)) for r in kinds]
    names = (config.DATASETS, config.NATURAL_DATASETS, config.MODELS, config.SERVER_OPTS)
    env = os.environ.get(plugins.ENV)
    modules = set(sys.modules)
    before = set(plugins.LOADED)
    try:
        yield
    finally:
        added = [p.module for k, p in plugins.LOADED.items() if k not in before]
        for registry, items in saved:
            registry.clear()
            registry.update(items)
        config.DATASETS, config.NATURAL_DATASETS, config.MODELS, config.SERVER_OPTS = names
        config.CHOICES["dataset"], config.CHOICES["model"] = names[0], names[2]
        config.CHOICES["server_opt"] = names[3]
        if env is None:
            os.environ.pop(plugins.ENV, None)
        else:
            os.environ[plugins.ENV] = env
        for name in set(sys.modules) - modules:  # so that loading them again registers again
            if any(name == m or name.startswith(m + ".") for m in added):
                del sys.modules[name]


__all__ = [
    "PARTIAL_WORK",
    "curve_until",
    "fake_rounds",
    "registries_restored",
    "tiny_config",
    "tiny_data",
    "token_data",
    "write_fake_run",
]
