import os
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

os.environ.setdefault("FEDBENCH_NO_DOWNLOAD", "1")  # tests never rely on a download
# tests see no shipped runs (results/shipped) unless they point FEDBENCH_STORE at a store
os.environ["FEDBENCH_STORE"] = "none"
# tests time nothing before an estimate (fedbench.sweep.probe) unless they pass --probe
os.environ["FEDBENCH_PROBE"] = "0"
torch.set_num_threads(min(2, torch.get_num_threads()))

from fedbench.assembly import build_config  # noqa: E402
from fedbench.cli import cli  # noqa: E402
from fedbench.config import RunConfig  # noqa: E402
from fedbench.data import FederatedData  # noqa: E402
from fedbench.testing import PARTIAL_WORK, tiny_config, tiny_data  # noqa: E402, F401 -- helpers

FMNIST_DIR = Path("/usr/share/datasets/fashion-mnist")
MNIST_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "data"
# a tiny default run, as build_config settings and as --set flags
TINY = {"N": "6", "K": "3", "local_steps": "2", "device": "cpu", "dtype": "float64"}
TINY_SETS = [x for k, v in {"rounds": "2", **TINY}.items() for x in ("--set", f"{k}={v}")]


def tiny(**over) -> RunConfig:
    return build_config("default", None, {"rounds": "2", **TINY, **over})


def stragglers_runs(res) -> list:
    """Fake finished runs (2 rounds) of every cell of the stragglers table at the tiny default
    setting, seed 0, in `res`: their folders, in the table's order."""
    from fedbench.sweep import table_configs
    from fedbench.tables import Selection, get_table
    from fedbench.testing import fake_rounds, write_fake_run

    sel = Selection("synthetic-1-1", (0,), "default", {"rounds": "2", **TINY}, str(res))
    configs, _ = table_configs(get_table("stragglers"), sel)
    return [write_fake_run(res, c, fake_rounds(2, loss0=2.0 + i)) for i, c in enumerate(configs)]


# stragglers_runs' table setting as flags, and the commands that read those runs
TINY_TABLE = ["--dataset", "synthetic-1-1", "--preset", "default", "--seeds", "0", *TINY_SETS]


def reading_commands(out) -> list[list]:
    """table and plot over stragglers_runs (figures into `out`), less --results."""
    return [
        ["table", "summary"],
        ["table", "stragglers", *TINY_TABLE],
        ["plot", "stragglers", *TINY_TABLE, "--out", out / "p"],
        ["plot", "curves", "--out", out / "c"],
    ]


def invoke(*args):
    """The command line in-process; arguments may be paths or numbers."""
    return CliRunner().invoke(cli, [str(a) for a in args], obj={})


def one_line_error(r) -> str:
    assert r.exit_code == 2, r.output
    lines = r.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), r.output
    return lines[0]


@pytest.fixture
def one_thread():
    """Tiny runs: one torch thread (on a busy machine, more threads spin and run 100x slower)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture
def private_cache(tmp_path, monkeypatch):
    """The data-fingerprint cache in a temp folder, not the user's."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


def quadratic_data(coeffs, dtype=torch.float64):
    """One sample (a, b) per device: F_i(w) = sum_d a_d w_d^2 + b_d w_d."""
    x = torch.tensor([[a, b] for a, b in coeffs], dtype=dtype)
    if x.dim() == 2:
        x = x.unsqueeze(-1)  # [N, 2, 1]
    y = torch.zeros(len(coeffs), dtype=torch.long)
    idx = [torch.tensor([i]) for i in range(len(coeffs))]
    return FederatedData(x, y, x, y, idx, 1, {"description": "quadratic"})


@pytest.fixture
def fmnist_available():
    if not (FMNIST_DIR / "train-images-idx3-ubyte.gz").exists():
        pytest.skip("Fashion-MNIST not installed (apt-get install dataset-fashion-mnist)")


def quad_engine(
    method, params=None, coeffs=None, counts=None, steps=3, lr=0.1, k=None, validate=False, **kw
):
    """An engine on the quadratic model: device i holds counts[i] (default 1) copies of
    (a_i, b_i), F_i(w) = a_i w^2 + b_i w (a, b scalars or one per coordinate); all devices train
    each round unless k says otherwise; exact gradients, float64 (tiny_config)."""
    from fedbench.assembly import validate_config
    from fedbench.training.engine import Engine

    counts = counts or [1] * len(coeffs)
    rows, idx, start = [], [], 0
    for (a, b), n in zip(coeffs, counts):
        a, b = (a if isinstance(a, list) else [a]), (b if isinstance(b, list) else [b])
        rows += [[a, b]] * n
        idx.append(torch.arange(start, start + n))
        start += n
    x = torch.tensor(rows, dtype=torch.float64)  # [n, 2, dim]
    y = torch.zeros(len(rows), dtype=torch.long)
    data = FederatedData(x, y, x, y, idx, 1, {"description": "quadratic"})
    cfg = tiny_config(
        model="quadratic",
        method=method,
        method_params=params or {},
        num_clients=len(coeffs),
        clients_per_round=k or len(coeffs),
        local_steps=steps,
        batch_size=1,
        lr=lr,
        **kw,
    )
    return Engine(validate_config(cfg) if validate else cfg, data=data)
