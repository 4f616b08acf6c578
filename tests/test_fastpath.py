"""The compiled small-model rounds (fedbench.training.fastpath) equal the engine's torch per-step
path, and the engine's step windows (model.sgd_steps) equal single steps."""

import pytest
import torch
from conftest import PARTIAL_WORK, tiny_config, tiny_data

from fedbench.data import FederatedData
from fedbench.training import fastpath
from fedbench.training.engine import Engine

# float32: the two paths round differently (sum orders, fused multiply-adds); over 3 rounds of
# up to 3 epochs here the models stayed within 7.2e-7 (1e-7 over a default-run round)
F32_TOL = 5e-6

CASES = [
    ("fedavg", {}, {}),
    ("fedavg", {}, {"weight_decay": 0.01}),
    ("fedprox", {"mu": 0.5}, {}),
    ("fedprox", {"mu": 0.5}, {"weight_decay": 0.01}),
    ("fednova", {"mu": 0.1}, {}),
    ("scaffold", {}, {}),
    ("fedcm", {"alpha": 0.3}, {"weight_decay": 0.01}),
    ("mimelite", {"beta": 0.4}, {}),
]


def quadratic_samples(sizes=(7, 12, 5, 9), dim=3, dtype=torch.float64) -> FederatedData:
    """Several samples (a, b) per device, a > 0, so batches have padding and rounds converge."""
    g = torch.Generator().manual_seed(1)
    n = sum(sizes)
    x = torch.stack([0.5 + torch.rand(n, dim, generator=g), torch.randn(n, dim, generator=g)], 1)
    x = x.to(dtype)
    y = torch.zeros(n, dtype=torch.long)
    idx, start = [], 0
    for s in sizes:
        idx.append(torch.arange(start, start + s))
        start += s
    return FederatedData(x, y, x[:5], y[:5], idx, 1, {"description": "quadratic samples"})


def paired_engines(model: str, dtype: str, method: str, params: dict, extra: dict):
    cfg = tiny_config(
        model=model,
        dataset="quadratic" if model == "quadratic" else "synthetic",
        method=method,
        method_params=params,
        **PARTIAL_WORK,
        dtype=dtype,
        lr=0.05,
        **extra,
    )
    tdt = getattr(torch, dtype)
    data = quadratic_samples(dtype=tdt) if model == "quadratic" else tiny_data(dtype=tdt)
    fast, ref = Engine(cfg, data=data), Engine(cfg, data=data)
    ref.fastpath = False
    return fast, ref


@pytest.mark.parametrize("model", ["logreg", "quadratic"])
@pytest.mark.parametrize("method,params,extra", CASES)
@pytest.mark.parametrize("dtype,tol", [("float64", 1e-12), ("float32", F32_TOL)])
def test_fast_round_equals_torch_steps(model, method, params, extra, dtype, tol, monkeypatch):
    fast, ref = paired_engines(model, dtype, method, params, extra)
    taken = []
    real = fastpath.run_round
    monkeypatch.setattr(fastpath, "run_round", lambda *a: taken.append(real(*a)) or taken[-1])
    partial = 0
    for r in range(1, 4):
        partial += int((fast.plan_round(r).tau > 1).sum())
        rec_f, rec_r = fast.run_round(r), ref.run_round(r)
        assert torch.allclose(fast.w, ref.w, atol=tol, rtol=0), (fast.w - ref.w).abs().max()
        assert rec_f["local_loss"] == pytest.approx(rec_r["local_loss"], abs=tol, rel=tol)
        assert rec_f["grad_evals"] == rec_r["grad_evals"]
    assert partial > 0, "the test needs partial-work devices"
    assert any(t is not None for t in taken), "the fast path was not taken"


@pytest.mark.parametrize(
    "cfg_kw",
    [{"momentum": 0.5}, {"grad_clip": 1.0}, {"method": "fedsam"}, {"model": "mlp"}],
)
def test_fast_path_declines_what_it_does_not_reproduce(cfg_kw):
    cfg = tiny_config(**{"model": "logreg", **cfg_kw})
    eng = Engine(cfg, data=tiny_data())
    plan = eng.plan_round(1)
    ctx = eng.context(1, plan, eng.lr_at(1))
    w = eng.w.expand(plan.k, -1).clone()
    eng.method.client_start(ctx)
    step = eng.method.linear_step()
    assert not fastpath.eligible(eng, step, w)
    assert eng.round_path(step, w, None) != "compiled"


@pytest.mark.parametrize("method", ["fedavg", "scaffold"])  # SCAFFOLD's drift: single steps
@pytest.mark.parametrize("window", [2, 3, 5])
def test_step_windows_equal_single_steps(window, method):
    cfg = tiny_config(**PARTIAL_WORK, weight_decay=0.01, method=method)
    data = tiny_data(sizes=(7, 12, 5, 9))
    windowed, ref = Engine(cfg, data=data), Engine(cfg, data=data)
    windowed.model.step_window = window  # this instance only; sgd_steps is the model's own
    ref.model.step_window = 1  # one sgd_step per step
    for r in range(1, 4):
        rec_w, rec_r = windowed.run_round(r), ref.run_round(r)
        assert torch.allclose(windowed.w, ref.w, atol=1e-12, rtol=0)
        assert rec_w["local_loss"] == pytest.approx(rec_r["local_loss"], abs=1e-12)


def test_default_sgd_steps_is_single_steps_on_active_prefixes():
    from fedbench.models.batched import BatchedModel
    from fedbench.models.mlp import BatchedMLP

    model = BatchedMLP([6, 3])
    g = torch.Generator().manual_seed(0)
    w0 = torch.randn(4, model.dim, generator=g, dtype=torch.float64)
    xs = torch.randn(3, 4, 5, 6, generator=g, dtype=torch.float64)
    ys = torch.randint(0, 3, (3, 4, 5), generator=g)
    bws = torch.full((3, 4, 5), 0.2, dtype=torch.float64)
    active = [4, 3, 1]
    w = w0.clone()
    losses = BatchedModel.sgd_steps(model, w, xs, ys, bws, active, 0.1, 0.01)
    v = w0.clone()
    for t, ka in enumerate(active):
        lt = model.sgd_step(v[:ka], xs[t, :ka], ys[t, :ka], bws[t, :ka], 0.1, 0.01)
        assert torch.equal(losses[t, :ka], lt)
        assert not losses[t, ka:].any()
    assert torch.equal(w, v)


# ---------------------------------------------------------------- thread policy


def test_thread_policy(monkeypatch):
    from fedbench.models import BatchedCNN
    from fedbench.models.mlp import BatchedMLP
    from fedbench.training import threads

    monkeypatch.setattr(threads, "_settings", {})
    cfg = tiny_config(clients_per_round=10, batch_size=10)
    before = torch.get_num_threads()
    assert threads.apply(BatchedMLP([60, 10]), cfg) == before  # not configured: torch's own
    threads.configure(None, budget=2)
    assert threads.choose(BatchedMLP([60, 10]), cfg) == 1
    assert threads.choose(BatchedMLP([784, 400, 10]), cfg) == 1  # the FedLGA MLP
    monkeypatch.setattr("fedbench.training.threads.cpu_cores", lambda: 4)
    assert threads.choose(BatchedCNN(10, (1, 28, 28)), cfg) == 2  # the budget
    # not the machine's load: the same config on the same machine takes the same thread count
    monkeypatch.setattr("os.getloadavg", lambda: (3.4, 0.0, 0.0), raising=False)
    assert threads.choose(BatchedCNN(10, (1, 28, 28)), cfg) == 2
    threads.configure(3)
    assert threads.choose(BatchedMLP([60, 10]), cfg) == 3  # --threads wins
    try:
        assert threads.apply(BatchedMLP([60, 10]), cfg) == 3
    finally:
        torch.set_num_threads(before)


def test_train_records_thread_count(tmp_path, monkeypatch):
    import json

    from click.testing import CliRunner

    from fedbench.cli import cli
    from fedbench.training import threads

    monkeypatch.setattr(threads, "_settings", {})
    before = torch.get_num_threads()
    args = ["train", "--rounds", "1", "--set", "N=6", "--set", "K=3", "--set", "E=1", "--quiet"]
    try:
        r = CliRunner().invoke(cli, [*args, "--results", str(tmp_path)], obj={})
        assert r.exit_code == 0, r.output
        (run_json,) = tmp_path.glob("*/run.json")
        assert json.loads(run_json.read_text())["threads"] == 1  # logreg: the policy's 1
    finally:
        torch.set_num_threads(before)


def test_step_windows_through_an_augmenting_input_pipeline():
    from fedbench.data.transforms import ImagePipeline

    g = torch.Generator().manual_seed(2)
    sizes = (7, 12, 5, 9)
    n = sum(sizes)
    x = torch.randint(0, 256, (n, 3, 6, 6), generator=g, dtype=torch.uint8)
    y = torch.randint(0, 3, (n,), generator=g)
    idx = list(torch.arange(n).split(list(sizes)))
    pipe = ImagePipeline((0.5, 0.4, 0.3), (0.2, 0.3, 0.4), augment=True, padding=1)
    pipe.dtype = torch.float64
    data = FederatedData(x, y, x[:5], y[:5], idx, 3, {"description": "images"}, pipeline=pipe)
    cfg = tiny_config(**PARTIAL_WORK)
    windowed, ref = Engine(cfg, data=data), Engine(cfg, data=data)
    windowed.model.step_window, ref.model.step_window = 3, 1
    for r in range(1, 3):
        windowed.run_round(r), ref.run_round(r)
        assert torch.allclose(windowed.w, ref.w, atol=1e-12, rtol=0)
