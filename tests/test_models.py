"""The batched conv nets and LSTMs equal K separate nn.Modules, and the engine trains them (with
BatchNorm's running statistics) as the per-client loop does."""

import pytest
import torch
import torch.nn.functional as F
from conftest import tiny_config
from test_datasets import _leaf_file, _tweet, cifar10_dir, on_cifar10  # noqa: F401 (fixture)
from torch import nn

from fedbench.assembly import validate_config
from fedbench.data import FederatedData
from fedbench.devices import generator
from fedbench.errors import FedbenchError
from fedbench.models import (
    BatchedCNN,
    BatchedResNet18,
    BatchedResNet20,
    BatchedVGG9,
    build_model,
)
from fedbench.models.lstm import char_lstm, sent_lstm
from fedbench.testing import token_data
from fedbench.training.engine import Engine
from fedbench.training.reference import client_batches, reference_local, reference_round

K = 3
DT = torch.float64
TOL = 1e-5


def _images(shape, b):
    return lambda g: torch.randn(K, b, *shape, generator=g, dtype=DT)


def _tokens(vocab, length, b):
    return lambda g: torch.randint(0, vocab, (K, b, length), generator=g)


# name -> (model factory, input maker [K, B, ...]); small inputs keep the file fast
CASES = {
    "cnn": (lambda: BatchedCNN(10, (1, 28, 28)), lambda g: _images((784,), 2)(g)),  # flat
    "resnet20-bn": (lambda: BatchedResNet20(10, (3, 8, 8), "bn"), _images((3, 8, 8), 4)),
    "resnet20-gn": (lambda: BatchedResNet20(10, (3, 8, 8), "gn"), _images((3, 8, 8), 3)),
    "vgg9": (lambda: BatchedVGG9(10, (3, 32, 32)), _images((3, 32, 32), 2)),
    "resnet18": (lambda: BatchedResNet18(10, (3, 8, 8)), _images((3, 8, 8), 2)),
    "charlstm": (lambda: char_lstm(80), _tokens(80, 7, 3)),
    "sentlstm": (lambda: sent_lstm(40), _tokens(40, 5, 3)),
    "sentlstm-glove": (
        lambda: sent_lstm(0, 2, torch.randn(30, 12, generator=torch.Generator().manual_seed(1))),
        _tokens(30, 5, 3),
    ),
}


def _setup(name):
    model = CASES[name][0]()
    g = torch.Generator().manual_seed(0)
    w = torch.stack([model.init(generator(0, "init", i), DT) for i in range(K)])
    x = CASES[name][1](g)
    y = torch.randint(0, model.module().fc.out_features, x.shape[:2], generator=g)
    buf = None
    if model.buffer_dim:  # distinct running statistics per device
        buf = torch.rand(K, model.buffer_dim, generator=g, dtype=DT) + 0.5
    return model, w, x, y, buf


def _module(model, w, buf, i):
    return model.to_module(w[i], None if buf is None else buf[i])


def _grad_vector(model, net):
    params = dict(net.named_parameters())
    return torch.cat([params[s.name].grad.reshape(-1) for s in model.slots])


@pytest.mark.parametrize("name", list(CASES))
def test_batched_equals_k_modules(name):
    """Different parameters and inputs per device: train-mode logits, losses and parameter
    gradients; BatchNorm's running statistics after the step; eval-mode logits."""
    model, w, x, y, buf = _setup(name)
    b = x.shape[1]
    wt = torch.full((K, b), 1.0 / b, dtype=DT)
    kw = {} if buf is None else {"buffers": buf.clone()}
    with torch.no_grad():
        logits = model.forward(model.unflatten(w), x)  # train mode, nothing recorded
    losses, g = model.loss_and_grad(w, x, y, wt, **kw)
    pred = model.predict(w, x, kw.get("buffers"))  # eval mode
    assert pred.shape == logits.shape
    for i in range(K):
        net = _module(model, w, buf, i).train()
        out = net(x[i])
        loss = F.cross_entropy(out, y[i])
        loss.backward()
        assert torch.allclose(logits[i], out.detach(), atol=TOL, rtol=0)
        assert torch.allclose(losses[i], loss.detach(), atol=TOL, rtol=0)
        gi = _grad_vector(model, net)
        assert torch.allclose(g[i], gi, atol=TOL, rtol=0), (g[i] - gi).abs().max()
        if buf is not None:  # the module's running stats after its train-mode forward
            assert torch.allclose(kw["buffers"][i], model.buffers_from_module(net), atol=1e-12)
            assert not torch.allclose(kw["buffers"][i], buf[i])
        with torch.no_grad():
            assert torch.allclose(pred[i], net.eval()(x[i]), atol=TOL, rtol=0)


def test_batch_norm_leaves_padding_out():
    """A padded batch (weight-0 samples, a different number per device) normalizes, records
    and differentiates as nn.BatchNorm2d on the real samples alone."""
    model, w, x, y, buf = _setup("resnet20-bn")
    real = torch.tensor([[1, 1, 1, 1], [1, 0, 1, 0], [0, 0, 1, 0]], dtype=torch.bool)
    wt = real.to(DT) / real.sum(1, keepdim=True)
    got = buf.clone()
    losses, g = model.loss_and_grad(w, x, y, wt, buffers=got)
    l2, g2 = model.loss_and_grad(w, x, y, wt)  # no buffers: batch statistics only
    assert torch.allclose(losses, l2, atol=1e-12) and torch.allclose(g, g2, atol=1e-12)
    for i in range(K):
        net = _module(model, w, buf, i).train()
        loss = F.cross_entropy(net(x[i][real[i]]), y[i][real[i]])
        loss.backward()
        assert torch.allclose(losses[i], loss.detach(), atol=TOL, rtol=0)
        assert torch.allclose(g[i], _grad_vector(model, net), atol=TOL, rtol=0)
        assert torch.allclose(got[i], model.buffers_from_module(net), atol=1e-12)


def test_grouped_layout_equals_vmap():
    """The layout benchmark's vmap(functional_call) forward gives the same logits (train mode
    on batch statistics, eval mode on the buffers)."""
    model, w, x, y, buf = _setup("resnet20-bn")
    p = model.unflatten(w)
    with torch.no_grad():
        for train in (True, False):
            a = model.forward(p, x, buf.clone(), train)
            v = model.forward_vmap(p, x, buf.clone(), train)
            assert torch.allclose(a, v, atol=1e-10)


def test_vgg9_parameter_count():
    assert BatchedVGG9(10).dim == 2_308_810
    bn = BatchedResNet20(10)
    channels = sum(m.num_features for m in bn.module().modules() if isinstance(m, nn.BatchNorm2d))
    assert bn.buffer_dim == 2 * channels  # running mean and variance, nothing else
    assert BatchedResNet20(10, norm="gn").buffer_dim == 0


def test_build_model_reads_the_data():
    cfg = tiny_config(model="charlstm")
    with pytest.raises(FedbenchError, match="use dataset=shakespeare"):
        build_model(cfg, (80,), 80, {"description": "mnist"})
    assert build_model(cfg, (80,), 80, {"vocab_size": 80}).vocab_size == 80
    learned = build_model(tiny_config(model="sentlstm"), (25,), 2, {"vocab_size": 30})
    glove = torch.randn(30, 12)
    frozen = build_model(tiny_config(model="sentlstm"), (25,), 2, {"vocab_size": 30}, glove)
    assert learned.dim - frozen.dim == 30 * 300 + 4 * 256 * (300 - 12)  # no embedding slot
    assert frozen.buffer_dim == 0 and "embed.weight" not in [s.name for s in frozen.slots]
    with pytest.raises(FedbenchError, match="image inputs"):
        build_model(tiny_config(model="resnet20"), (60,), 10)


# ---------------------------------------------------------------- through the engine
def image_data(sizes=(5, 7, 6, 3), shape=(3, 8, 8), classes=4):
    g = torch.Generator().manual_seed(3)
    n = sum(sizes)
    x = torch.randn(n, *shape, generator=g, dtype=DT)
    y = torch.randint(0, classes, (n,), generator=g)
    idx = list(torch.arange(n).split(list(sizes)))
    return FederatedData(x, y, x[:8], y[:8], idx, classes, {"description": "random images"})


def resnet_config(**kw):
    base = dict(model="resnet20", norm="bn", num_clients=4, clients_per_round=2, local_epochs=2)
    return tiny_config(**{**base, **kw})


def test_resnet20_round_equals_per_client_loop():
    """Two FedAvg rounds (short last batches, unequal steps): models and averaged BatchNorm
    buffers equal the nn.Module loop's, and evaluation uses the averaged buffers."""
    eng = Engine(resnet_config(), data=image_data())
    assert eng.buffers.shape == (eng.model.buffer_dim,)
    for r in (1, 2):
        plan = eng.plan_round(r)
        assert len(set(plan.steps.tolist())) > 1 or r == 2
        w_ref, b_ref = reference_round(eng, r)
        eng.run_round(r)
        assert torch.allclose(eng.w, w_ref, atol=TOL, rtol=0), (eng.w - w_ref).abs().max()
        assert torch.allclose(eng.buffers, b_ref, atol=TOL, rtol=0)
    net = eng.model.to_module(eng.w, eng.buffers).eval()
    data = eng.data
    with torch.no_grad():
        logits = net(data.test_x)
    loss, acc = eng.evaluate(data.test_x, data.test_y)
    assert abs(loss - float(F.cross_entropy(logits, data.test_y))) < 1e-10
    assert acc == float((logits.argmax(1) == data.test_y).double().mean())


def test_fedsam_records_each_batch_once():
    """FedSAM with r=0 evaluates the gradient twice at the same point: same models and same
    running statistics as FedAvg (the second pass does not record the batch again)."""
    data = image_data()
    avg = Engine(resnet_config(local_epochs=1), data=data)
    sam = Engine(resnet_config(local_epochs=1, method="fedsam", method_params={"r": 0.0}), data)
    avg.run_round(1)
    sam.run_round(1)
    assert torch.allclose(sam.w, avg.w, atol=1e-12) and torch.allclose(
        sam.buffers, avg.buffers, atol=1e-12
    )


def test_sfl_chains_buffers():
    """SFL: each device starts from the previous device's model and buffers; the round keeps
    the last one's, as the per-client loop run as a chain."""
    eng = Engine(resnet_config(method="sfl", local_epochs=1), data=image_data())
    plan = eng.plan_round(1)
    order = torch.randperm(plan.k, generator=generator(eng.cfg.seed, "order", 1))
    w0, b0 = eng.w, eng.buffers
    for i in order.tolist():
        sub = plan.rows(slice(i, i + 1))
        batches = [client_batches(plan, i)]
        finals, bufs = reference_local(eng, sub, eng.lr_at(1), batches=batches)
        eng.w, eng.buffers = finals[0], bufs[0]
    w_ref, b_ref = eng.w, eng.buffers
    eng.w, eng.buffers = w0, b0
    eng.run_round(1)
    assert torch.allclose(eng.w, w_ref, atol=TOL, rtol=0)
    assert torch.allclose(eng.buffers, b_ref, atol=TOL, rtol=0)


def test_charlstm_round_on_token_data():
    """Token ids (int64) and the vocabulary from the data's info reach the LSTM."""
    data = token_data((4, 6, 5), length=6, seed=4, n_test=5)
    cfg = tiny_config(model="charlstm", num_clients=3, clients_per_round=2, local_epochs=1)
    eng = Engine(cfg, data=data)
    w_ref, b_ref = reference_round(eng, 1)
    eng.run_round(1)
    assert b_ref.numel() == 0 and eng.buffers.numel() == 0
    assert torch.allclose(eng.w, w_ref, atol=TOL, rtol=0)


def test_fedprox_adaptive_evaluates_new_model_with_new_buffers():
    params = {"mu": 0.1, "adaptive": True}
    eng = Engine(
        resnet_config(local_epochs=1, method="fedprox", method_params=params), image_data()
    )
    rec = eng.run_round(1)
    loss, _ = eng.evaluate(eng.data.train_x, eng.data.train_y)  # new global model and buffers
    assert rec["global_train_loss"] == loss


# ---------------------------------------------------------------- the data loaders' tensors
def test_cifar_pipeline_resnet20_equals_loop(cifar10_dir):  # noqa: F811 (fixture)
    """uint8 CIFAR through the input pipeline (normalize, resize) into ResNet-20."""
    cfg = resnet_config(
        **on_cifar10(cifar10_dir), resize=8, batch_size=10, local_epochs=1, dtype="float64"
    )
    eng = Engine(validate_config(cfg))
    assert eng.data.train_x.dtype == torch.uint8 and eng.model.image_shape == (3, 8, 8)
    w_ref, b_ref = reference_round(eng, 1)
    eng.run_round(1)
    assert torch.allclose(eng.w, w_ref, atol=TOL, rtol=0)
    assert torch.allclose(eng.buffers, b_ref, atol=TOL, rtol=0)
    assert 0 <= eng.eval_record()["test_acc"] <= 1


@pytest.mark.parametrize("name", ["shakespeare", "sent140", "sent140-glove"])
def test_leaf_tokens_reach_the_lstms(tmp_path, name):
    """LEAF's int64 token ids, its vocabulary (info) and GloVe table (embeddings) build the
    model the data needs, and a round equals the per-client loop."""
    dataset = name.split("-")[0]
    root = tmp_path / dataset
    if dataset == "shakespeare":
        line = ("To be, or not to be: that is the question. " * 2)[:80]
        train = {"A": ([line, line[1:] + "!"], ["W", "a"]), "B": ([line] * 3, ["a", "b", "c"])}
        test = {"A": ([line], ["}"])}
    else:
        train = {
            "a": ([_tweet("good day good"), _tweet("bad day")], [1, 0]),
            "b": ([_tweet("ok"), _tweet("good ok")], ["4", "0"]),
        }
        test = {"a": ([_tweet("good unseen")], [1])}
    _leaf_file(root / "train" / "t.json", train)
    _leaf_file(root / "test" / "t.json", test)
    glove = None
    if name.endswith("glove"):
        glove = tmp_path / "glove.txt"
        glove.write_text("good 0.1 0.2 0.3\nday -1 0 1\nok 0 0.5 0\n")
    model = "charlstm" if dataset == "shakespeare" else "sentlstm"
    cfg = validate_config(
        tiny_config(
            dataset=dataset,
            partition="natural",
            data_dir=str(tmp_path),
            model=model,
            num_clients=2,
            clients_per_round=2,
            local_epochs=1,
            batch_size=2,
            glove=None if glove is None else str(glove),
        )
    )
    eng = Engine(cfg)
    assert eng.data.train_x.dtype == torch.int64
    assert eng.model.vocab_size == eng.data.info["vocab_size"] or glove is not None
    if glove is not None:  # the frozen table, no embedding parameter
        assert eng.model.frozen is eng.data.embeddings and eng.model.vocab_size == 4
        assert "embed.weight" not in [s.name for s in eng.model.slots]
    w_ref, _ = reference_round(eng, 1)
    eng.run_round(1)
    assert torch.allclose(eng.w, w_ref, atol=TOL, rtol=0)
