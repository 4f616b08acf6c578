import os
from pathlib import Path

import pytest
import torch

os.environ.setdefault("FEDBENCH_NO_DOWNLOAD", "1")  # tests never rely on a download
torch.set_num_threads(min(2, torch.get_num_threads()))

from fedbench.data import FederatedData  # noqa: E402
from fedbench.testing import tiny_config, tiny_data  # noqa: E402, F401 -- the tests' helpers

FMNIST_DIR = Path("/usr/share/datasets/fashion-mnist")
MNIST_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "data"


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
