"""The MLP window's compiled steps (models/_mlp_steps.py) and its devices' Grams
(training/window_gram.py) against the torch window they replace: float64 to 1e-12, float32 to
rounding; a step against a hand-written one; when each applies."""

from __future__ import annotations

import math

import pytest
import torch
from conftest import PARTIAL_WORK, tiny_config, tiny_data

from fedbench.models.mlp import BatchedMLP
from fedbench.training import window_gram
from fedbench.training.engine import Engine

CPU = torch.device("cpu")


def _window(dtype, compiled, wd=0.0, const=False, rows=False, stagger=False, due=False):
    """One window of T=6 steps of a 12-5-3 MLP over k=4 rows (a padded sample in step 2); due:
    a constant carried from earlier windows (const_due; the compiled steps take it in their
    coefficient, the torch steps from the pre-activations)."""
    model = BatchedMLP([12, 5, 3])
    model.configure(CPU, 1)
    model.compiled_steps = compiled
    gen = torch.Generator().manual_seed(3)
    T, k, b = 6, 4, 3
    w = model.init(gen, dtype).expand(k, -1).clone()
    w += 0.3 * torch.randn(w.shape, generator=gen, dtype=dtype)  # rows differ
    xs = torch.randn(T, k, b, 12, generator=gen, dtype=dtype)
    ys = torch.randint(0, 3, (T, k, b), generator=gen)
    bws = torch.full((T, k, b), 1.0 / b, dtype=dtype)
    bws[2, 1, 2] = 0.0
    active = [4, 4, 3, 3, 2, 1] if stagger else [k] * T
    c = 0.1 * torch.randn(k, model.dim, generator=gen, dtype=dtype) if const else None
    decay = 0.2 * torch.rand(k, generator=gen, dtype=dtype) if rows else wd
    more = {"const_due": 0.5 + torch.rand(k, generator=gen, dtype=dtype)} if due else {}
    losses = model.sgd_steps(w, xs, ys, bws, active, 0.3, decay, c, **more)
    return w, losses


VARIANTS = {
    "plain": {},
    "weight decay": {"wd": 0.05},
    "constant": {"const": True},
    "per-row decay": {"rows": True},
    "rows finishing": {"stagger": True},
    "all": {"const": True, "rows": True, "stagger": True},
    "carried constant": {"const": True, "wd": 0.05, "due": True},
    "carried, per row": {"const": True, "rows": True, "stagger": True, "due": True},
}


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_compiled_steps_equal_the_torch_window(variant):
    kw = VARIANTS[variant]
    w_t, l_t = _window(torch.float64, False, **kw)
    w_c, l_c = _window(torch.float64, True, **kw)
    torch.testing.assert_close(w_c, w_t, rtol=0, atol=1e-12)
    torch.testing.assert_close(l_c, l_t, rtol=0, atol=1e-12)
    w_t, l_t = _window(torch.float32, False, **kw)
    w_c, l_c = _window(torch.float32, True, **kw)
    torch.testing.assert_close(w_c, w_t, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(l_c, l_t, rtol=1e-5, atol=1e-6)


def test_one_compiled_step_by_hand():
    """A 2-2-2 MLP, one sample: the step written out with math, element by element."""
    model = BatchedMLP([2, 2, 2])
    model.configure(CPU, 1)
    w1, b1 = [[0.5, -1.0], [1.5, 0.25]], [0.1, -0.2]
    w2, b2 = [[1.0, -2.0], [0.5, 0.75]], [0.05, -0.05]
    flat = [v for row in w1 for v in row] + b1 + [v for row in w2 for v in row] + b2
    w = torch.tensor([flat], dtype=torch.float64)
    x, y, lr = [2.0, 1.0], 1, 0.1
    xs = torch.tensor([[[x]], [[x]]], dtype=torch.float64)  # [T=2, k=1, B=1, 2]
    ys, bws = torch.full((2, 1, 1), y), torch.ones(2, 1, 1, dtype=torch.float64)
    loss = model.sgd_steps(w, xs, ys, bws, [1, 1], lr)  # two steps on the same sample
    z = [sum(w1[i][j] * x[j] for j in range(2)) + b1[i] for i in range(2)]  # [1.1, 3.05]
    a = [max(v, 0.0) for v in z]
    logits = [sum(w2[c][i] * a[i] for i in range(2)) + b2[c] for c in range(2)]
    lse = math.log(sum(math.exp(v) for v in logits))
    assert float(loss[0, 0]) == pytest.approx(lse - logits[y], abs=1e-12)
    p = [math.exp(v - lse) for v in logits]
    d2 = [p[c] - (c == y) for c in range(2)]
    d1 = [sum(d2[c] * w2[c][i] for c in range(2)) * (z[i] > 0) for i in range(2)]
    w1n = [[w1[i][j] - lr * d1[i] * x[j] for j in range(2)] for i in range(2)]
    b1n = [b1[i] - lr * d1[i] for i in range(2)]
    w2n = [[w2[c][i] - lr * d2[c] * a[i] for i in range(2)] for c in range(2)]
    b2n = [b2[c] - lr * d2[c] for c in range(2)]
    z = [sum(w1n[i][j] * x[j] for j in range(2)) + b1n[i] for i in range(2)]
    logits = [sum(w2n[c][i] * max(z[i], 0.0) for i in range(2)) + b2n[c] for c in range(2)]
    lse = math.log(sum(math.exp(v) for v in logits))
    assert float(loss[1, 0]) == pytest.approx(lse - logits[y], abs=1e-12)


def test_the_engine_turns_them_on_for_cpu_and_off_with_its_fastpath():
    eng = Engine(tiny_config(hidden=7, **PARTIAL_WORK), data=tiny_data(sizes=(7, 12, 5, 9)))
    assert eng.model.layout_name == f"batched, compiled steps, window {eng.model.step_window}"
    eng.fastpath = False
    assert eng.model.layout_name == f"batched, window {eng.model.step_window}"
    assert not eng.model.compiled_steps
    logreg = Engine(tiny_config(model="logreg"), data=tiny_data(sizes=(7, 12)))
    assert logreg.model.layout_name == "batched"  # no hidden layer: fastpath.py's loop


def _engines():
    cfg = tiny_config(hidden=7, **PARTIAL_WORK)
    with_grams = Engine(cfg, data=tiny_data(sizes=(7, 12, 5, 9)))
    without = Engine(cfg, data=tiny_data(sizes=(7, 12, 5, 9)))
    without._grams = None
    return with_grams, without


def test_device_grams_give_the_windows_gram_and_the_same_rounds():
    with_grams, without = _engines()
    assert with_grams.device_grams() is not None
    for r in range(1, 4):
        rec_g, rec_n = with_grams.run_round(r), without.run_round(r)
        torch.testing.assert_close(with_grams.w, without.w, rtol=0, atol=1e-12)
        assert rec_g["local_loss"] == pytest.approx(rec_n["local_loss"], abs=1e-12)
    grams = with_grams.device_grams()
    plan = with_grams.plan_round(4)
    clients = [int(c) for c in plan.clients]
    rg = grams.for_round(clients, with_grams.data.positions(clients, plan.batch_idx))
    t, ka = 3, plan.k
    x = with_grams.data.train_x.index_select(0, plan.batch_idx[:ka, :t].reshape(-1))
    x = x.view(ka, -1, x[0].numel())
    full = torch.bmm(x, x.transpose(1, 2))  # the blocks of steps t <= s; 0 above
    b = plan.batch_idx.shape[2]
    step = torch.arange(t * b) // b
    lower = (step.view(1, -1) <= step.view(-1, 1)).expand_as(full)
    got = rg.window(0, t, ka)
    torch.testing.assert_close(got[lower], full[lower])
    assert not got[~lower].any()
    compiled, rg.gather = rg.window(1, t, ka), None  # torch's gather (a GPU's)
    assert torch.equal(rg.window(1, t, ka), compiled)


def test_runs_on_the_same_data_share_its_grams_and_merged_data_does_not():
    import dataclasses

    data = tiny_data(sizes=(7, 12, 5, 9))
    a, b = (Engine(tiny_config(hidden=7, seed=s), data=data) for s in (0, 1))
    assert a.device_grams() is b.device_grams() is not None
    merged = dataclasses.replace(data, train_x=data.train_x.clone())
    assert merged.derived == {}


def test_no_device_grams_over_the_budget(monkeypatch):
    eng, _ = _engines()
    monkeypatch.setattr(window_gram, "BUDGET_BYTES", 100)
    assert window_gram.device_grams(eng) is None


def test_positions_of_a_rounds_samples_in_their_devices():
    """FederatedData.positions, by hand: device 0 holds samples [4, 1], device 1 [0, 2, 3]; a
    slot holding another device's sample (masked) gets place 0, inside its row's block."""
    from fedbench.data import FederatedData

    x = torch.zeros(5, 2)
    data = FederatedData(
        x,
        torch.zeros(5, dtype=torch.long),
        x,
        torch.zeros(5, dtype=torch.long),
        [torch.tensor([4, 1]), torch.tensor([0, 2, 3])],
        2,
    )
    batch = torch.tensor([[[2, 3], [0, 4]], [[1, 4], [1, 3]]])  # rows: device 1, device 0
    assert data.positions([1, 0], batch).tolist() == [[[1, 2], [0, 0]], [[1, 0], [1, 0]]]


def test_the_window_is_chosen_by_the_cpu_kind(monkeypatch):
    """T = 10 on an AVX2 CPU, 16 on an AVX-512 one or a GPU (a function of the device: the same
    device sums in the same order), said in run.json's layout."""
    model = Engine(tiny_config(hidden=7), data=tiny_data(sizes=(7, 12))).model
    for kind, window in (("AVX2", 10), ("AVX512", 16), ("DEFAULT", 16)):
        monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda k=kind: k)
        model.configure(torch.device("cpu"), 1)
        assert model.step_window == window
        assert model.layout_name.endswith(f", window {window}")
        assert model.window_for(torch.device("cuda")) == 16
    logreg = Engine(tiny_config(model="logreg"), data=tiny_data(sizes=(7, 12))).model
    logreg.configure(torch.device("cpu"), 1)
    assert logreg.step_window == 1  # no hidden layer: no window
