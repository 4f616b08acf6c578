"""The batched engine equals a plain per-client loop, and its bookkeeping is right."""

import pytest
import torch
from conftest import PARTIAL_WORK, tiny_config, tiny_data

from fedbench.training.engine import Engine
from fedbench.training.reference import reference_round


@pytest.mark.parametrize("method,params", [("fedavg", {}), ("fedprox", {"mu": 0.5})])
@pytest.mark.parametrize("dtype,tol", [("float64", 1e-10), ("float32", 1e-5)])
def test_batched_round_equals_per_client_loop(method, params, dtype, tol):
    cfg = tiny_config(
        method=method,
        method_params=params,
        **PARTIAL_WORK,
        dtype=dtype,
        momentum=0.0,
    )
    data = tiny_data(sizes=(7, 12, 5, 9), dtype=getattr(torch, dtype))
    eng = Engine(cfg, data=data)
    partial = 0
    for r in range(1, 5):
        partial += int((eng.plan_round(r).tau > 1).sum())
        expected, _ = reference_round(eng, r, mu=params.get("mu", 0.0))
        eng.run_round(r)
        assert torch.allclose(eng.w, expected, atol=tol, rtol=0), (eng.w - expected).abs().max()
    assert partial > 0, "the test needs partial-work devices"


def test_momentum_and_weight_decay_match_torch_sgd():
    cfg = tiny_config(momentum=0.5, weight_decay=1e-3, hetero="fedlga", rho=0.5, tau_max=2)
    eng = Engine(cfg, data=tiny_data())
    expected, _ = reference_round(eng, 1)
    eng.run_round(1)
    assert torch.allclose(eng.w, expected, atol=1e-10)


def test_logreg_round_equals_loop():
    cfg = tiny_config(model="logreg", init="zeros", local_epochs=2)
    eng = Engine(cfg, data=tiny_data(sizes=(3, 8, 6, 4)))
    expected, _ = reference_round(eng, 1)
    eng.run_round(1)
    assert torch.allclose(eng.w, expected, atol=1e-10)


def test_plan_orders_by_work_and_masks_padding():
    cfg = tiny_config(**PARTIAL_WORK, batch_size=4)
    eng = Engine(cfg, data=tiny_data(sizes=(7, 12, 5, 9)))
    plan = eng.plan_round(1)
    assert torch.all(plan.steps[:-1] >= plan.steps[1:])
    for row in range(plan.k):
        c = int(plan.clients[row])
        n = len(eng.data.client_indices[c])
        nb = -(-n // 4)
        assert int(plan.steps[row]) == int(plan.units[row]) * nb
        # every sample of the device appears exactly once per local epoch
        for e in range(int(plan.units[row])):
            rows = plan.batch_idx[row, e * nb : (e + 1) * nb]
            wts = plan.batch_weight[row, e * nb : (e + 1) * nb]
            got = sorted(rows[wts > 0].tolist())
            assert got == eng.data.client_indices[c].tolist()
        # each batch's weights sum to one; steps past the device's work are all padding
        s = int(plan.steps[row])
        assert torch.allclose(plan.batch_weight[row, :s].sum(1), torch.ones(s, dtype=torch.float64))
        assert plan.batch_weight[row, s:].sum() == 0


def test_partial_work_is_a_prefix_of_full_work():
    """A slow device's batches are the first E_i epochs of what it would do at full work."""
    data = tiny_data()
    full = Engine(tiny_config(), data=data).plan_round(3)
    part = Engine(tiny_config(hetero="fedlga", rho=1.0, tau_max=2), data=data).plan_round(3)
    for row in range(part.k):
        c = part.clients[row]
        frow = int((full.clients == c).nonzero())
        s = int(part.steps[row])
        assert torch.equal(part.batch_idx[row, :s], full.batch_idx[frow, :s])


def test_drop_policy_removes_stragglers():
    cfg = tiny_config(
        hetero="stragglers",
        stragglers=0.5,
        straggler_policy="drop-fedavg",
        num_clients=4,
        clients_per_round=4,
    )
    eng = Engine(cfg, data=tiny_data())
    rec = eng.run_round(1)
    assert rec["n_dropped"] == 2 and len(rec["clients"]) == 2 and len(rec["dropped"]) == 2
    prox = Engine(tiny_config(**{**cfg.__dict__, "method": "fedprox"}), data=tiny_data())
    rec2 = prox.run_round(1)
    assert rec2["n_dropped"] == 0 and rec2["n_partial"] == 2
    # both policies pick the same stragglers
    assert sorted(rec["dropped"]) == sorted(
        c for c, u in zip(rec2["clients"], rec2["units"]) if u < cfg.local_epochs
    )


def test_fixed_local_steps_mode():
    cfg = tiny_config(local_steps=5, batch_size=3)
    eng = Engine(cfg, data=tiny_data())
    plan = eng.plan_round(1)
    assert plan.steps.tolist() == [5, 5, 5]
    rec = eng.run_round(1)
    assert rec["grad_evals"] == 15


def test_full_batch_grads_match_one_big_batch():
    data = tiny_data(sizes=(7, 12, 5, 9))
    eng = Engine(tiny_config(), data=data)
    clients = torch.tensor([1, 3])
    loss, grad = eng.full_batch_grads(eng.w, clients, chunk=4)  # several chunks
    for row, c in enumerate(clients.tolist()):
        idx = data.client_indices[c]
        n = len(idx)
        w1 = eng.w.unsqueeze(0)
        l1, g1 = eng.model.loss_and_grad(
            w1,
            data.train_x[idx].unsqueeze(0),
            data.train_y[idx].unsqueeze(0),
            torch.full((1, n), 1.0 / n, dtype=torch.float64),
        )
        assert torch.allclose(loss[row], l1[0], atol=1e-12)
        assert torch.allclose(grad[row], g1[0], atol=1e-12)


def test_fused_sgd_step_equals_gradient_then_update():
    from fedbench.models.batched import BatchedModel
    from fedbench.models.mlp import BatchedMLP

    m = BatchedMLP([6, 5, 4, 3])  # two hidden layers: exercises the layer order
    g = torch.Generator().manual_seed(0)
    w = torch.randn(3, m.dim, generator=g, dtype=torch.float64) * 0.3
    x = torch.randn(3, 4, 6, generator=g, dtype=torch.float64)
    y = torch.randint(0, 3, (3, 4), generator=g)
    wt = torch.full((3, 4), 0.25, dtype=torch.float64)
    expected = w.clone()
    l_ref = BatchedModel.sgd_step(m, expected, x, y, wt, lr=0.1, weight_decay=0.01)
    got = w.clone()
    l_got = m.sgd_step(got, x, y, wt, lr=0.1, weight_decay=0.01)
    assert torch.allclose(got, expected, atol=1e-14) and torch.allclose(l_got, l_ref)
    # and the explicit backward equals autograd
    l1, g1 = m.loss_and_grad(w, x, y, wt)
    l2, g2 = BatchedModel.loss_and_grad(m, w, x, y, wt)
    assert torch.allclose(g1, g2, atol=1e-14) and torch.allclose(l1, l2, atol=1e-14)


def test_full_batch_grads_take_the_models_chunk(monkeypatch):
    """chunk=None takes model.grad_chunk (the MNIST CNN: 32 a device, its activations at 512
    were 430 MB for 10 devices); any chunk gives the same loss and gradient (float64)."""
    from fedbench.models.convnets import BatchedCNN
    from fedbench.training import evaluation

    assert BatchedCNN.grad_chunk == 32
    data = tiny_data(sizes=(7, 12, 5, 9))
    eng = Engine(tiny_config(), data=data)
    eng.model.grad_chunk = 3  # this instance only
    seen = []
    real = eng.model.loss_and_grad

    def spy(w, x, y, weight):
        seen.append(x.shape[1])
        return real(w, x, y, weight)

    monkeypatch.setattr(eng.model, "loss_and_grad", spy)
    clients = torch.tensor([1, 3])
    loss, grad = evaluation.full_batch_grads(eng.model, data, eng.w, clients)
    assert max(seen) == 3 and len(seen) == 4  # 12 samples a device at most, 3 at a time
    monkeypatch.setattr(eng.model, "loss_and_grad", real)
    whole_loss, whole_grad = eng.full_batch_grads(eng.w, clients, chunk=12)
    torch.testing.assert_close(loss, whole_loss, rtol=0, atol=1e-12)
    torch.testing.assert_close(grad, whole_grad, rtol=0, atol=1e-12)
