"""Every layout of the conv nets and LSTMs (fedbench/models/layouts.py) trains the same round as
the grouped layout (the engine's only layout before layouts were measured): float64 to ~1e-15,
float32 within F32_TOL. And the rule that picks a layout, and its record in run.json."""

import pytest
import torch
from conftest import tiny_config

from fedbench.data import FederatedData
from fedbench.models import BatchedResNet18
from fedbench.models.layouts import CHOICES, GROUPED, LAYOUTS, choose_layout
from fedbench.training.engine import Engine

# tiny models at 1 thread: at 2, every parallel region of these small ops waits for a
# descheduled thread on a busy machine (fedbench/training/threads.py)
pytestmark = pytest.mark.usefixtures("one_thread")


# The gap of a layout's round: max |w - w_grouped| / max |w_grouped - w_start|, the difference
# in the global model after a whole round (and in BatchNorm's averaged statistics, alike) over
# the round's largest update. Measured here: float64 <= 1.1e-14, float32 <= 1.1e-5 (oneDNN
# picks other convolution algorithms per layout and memory format, so float32 rounds
# differently). BatchNorm over padded batches of 2 real samples makes a float32 round chaotic:
# there a 1e-7 relative change of the start model alone moves the round's result by 8e-2 of its
# update, and the layouts by as much; hence batches of at least 4 real samples here.
F64_TOL = 1e-12
F32_TOL = 1e-4

SIZES = (16, 14, 12, 7)  # unequal devices at B = 8: padded last batches, unequal step counts


def _images(shape, classes, dtype):
    g = torch.Generator().manual_seed(3)
    n = sum(SIZES)
    x = torch.randn(n, *shape, generator=g, dtype=torch.float64).to(dtype)
    y = torch.randint(0, classes, (n,), generator=g)
    return x, y, {"description": "random images"}


def _tokens(vocab, length, classes, dtype):
    g = torch.Generator().manual_seed(4)
    n = sum(SIZES)
    x = torch.randint(0, vocab, (n, length), generator=g)
    y = torch.randint(0, classes, (n,), generator=g)
    return x, y, {"vocab_size": vocab}


# family case -> (config overrides, data maker)
CASES = {
    "cnn": (dict(model="cnn"), lambda dt: _images((1, 28, 28), 10, dt)),
    "resnet20-bn": (dict(model="resnet20", norm="bn"), lambda dt: _images((3, 8, 8), 4, dt)),
    "resnet20-gn": (dict(model="resnet20", norm="gn"), lambda dt: _images((3, 8, 8), 4, dt)),
    "resnet18": (dict(model="resnet18"), lambda dt: _images((3, 8, 8), 4, dt)),  # narrowed
    "vgg9": (dict(model="vgg9"), lambda dt: _images((3, 32, 32), 4, dt)),
    "charlstm": (dict(model="charlstm"), lambda dt: _tokens(80, 6, 80, dt)),
    "sentlstm": (dict(model="sentlstm"), lambda dt: _tokens(40, 5, 2, dt)),
}


class NarrowResNet18(BatchedResNet18):
    """ResNet-18's code path (no normalization, 1x1 projection shortcuts) at 1/8 of its widths:
    the same layers, 64x fewer parameters to train five times per test."""

    widths = (8, 16, 32, 64)


def _engine(case: str, dtype: str, **kw) -> Engine:
    over, make = CASES[case]
    x, y, info = make(getattr(torch, dtype))
    idx = list(torch.arange(len(y)).split(list(SIZES)))
    data = FederatedData(x, y, x[:8], y[:8], idx, int(y.max()) + 1, info)
    base = dict(num_clients=4, clients_per_round=2, local_epochs=1, batch_size=8, lr=0.05)
    eng = Engine(tiny_config(**{**base, **over, **kw, "dtype": dtype}), data=data)
    if case == "resnet18":
        eng.model = NarrowResNet18(data.num_classes, (3, 8, 8))
        eng.w = eng.model.init(torch.Generator().manual_seed(0), eng.dtype)
    return eng


def _round(eng: Engine, layout, state) -> tuple[torch.Tensor, torch.Tensor, dict]:
    eng.model.layout = layout
    eng.w, eng.buffers = (t.clone() for t in state)
    rec = eng.run_round(1)
    return eng.w, eng.buffers, rec


def _gap(got, want, start) -> float:
    """max |got - want| over the round's largest update max |want - start|."""
    return float((got - want).abs().max() / (want - start).abs().max())


def _layouts_against_grouped(case, dtype, **kw) -> dict[str, float]:
    eng = _engine(case, dtype, **kw)
    state = (eng.w.clone(), eng.buffers.clone())
    w0, b0, rec0 = _round(eng, GROUPED, state)
    gaps = {}
    for lay in LAYOUTS.values():
        if lay is GROUPED:
            continue
        w, b, rec = _round(eng, lay, state)
        gaps[lay.name] = _gap(w, w0, state[0])
        if b0.numel():  # BatchNorm's averaged running statistics
            gaps[lay.name] = max(gaps[lay.name], _gap(b, b0, state[1]))
        assert abs(rec["local_loss"] - rec0["local_loss"]) <= 10 * gaps[lay.name] + 1e-12
    return gaps


@pytest.mark.parametrize("case", list(CASES))
def test_layouts_train_the_grouped_round_float64(case):
    gaps = _layouts_against_grouped(case, "float64")
    assert max(gaps.values()) < F64_TOL, gaps


@pytest.mark.parametrize("case", list(CASES))
def test_layouts_train_the_grouped_round_float32(case):
    gaps = _layouts_against_grouped(case, "float32")
    if case == "resnet20-bn":  # BatchNorm nets never run NHWC (layouts.py, BatchNorm)
        gaps = {name: gap for name, gap in gaps.items() if not LAYOUTS[name].channels_last}
    assert max(gaps.values()) < F32_TOL, gaps


def test_batch_norm_nets_stay_nchw():
    """torch's channels-last batch_norm loses float32 precision (layouts.py): on this batch
    (float32 draws) NCHW layouts keep a round within F32_TOL of float64, NHWC ones did not."""
    assert not any(LAYOUTS[name].channels_last for name in CHOICES["resnet-bn"].values())
    g = torch.Generator().manual_seed(3)
    x = torch.randn(64, 3, 8, 8, generator=g)
    y = torch.randint(0, 4, (64,), generator=g)
    idx = list(torch.arange(64).split(16))
    truth = None
    for dtype in ("float64", "float32"):
        data = FederatedData(x.to(getattr(torch, dtype)), y, x[:8], y[:8], idx, 4, {})
        cfg = dict(model="resnet20", norm="bn", num_clients=4, clients_per_round=2)
        over = dict(local_epochs=1, batch_size=8, lr=0.05, dtype=dtype)
        eng = Engine(tiny_config(**cfg, **over), data=data)
        state = (eng.w.clone(), eng.buffers.clone())
        if truth is None:
            truth = _round(eng, GROUPED, state)[0]
            continue
        for lay in LAYOUTS.values():
            if not lay.channels_last:
                w = _round(eng, lay, state)[0].double()
                assert _gap(w, truth, state[0].double()) < F32_TOL, lay.name


def test_layouts_through_the_stepwise_path():
    """Momentum sends every step through loss_and_grad (not the fused sgd_step)."""
    gaps = _layouts_against_grouped("resnet20-bn", "float64", momentum=0.9)
    assert max(gaps.values()) < F64_TOL, gaps


def test_evaluation_in_every_layout():
    eng = _engine("cnn", "float64")
    eng.run_round(1)
    eng.model.layout = GROUPED
    want = eng.evaluate(eng.data.train_x, eng.data.train_y)
    for lay in LAYOUTS.values():
        eng.model.layout = lay
        got = eng.evaluate(eng.data.train_x, eng.data.train_y)
        assert abs(got[0] - want[0]) < 1e-12 and got[1] == want[1]


def test_the_rule():
    """CPU: the measured table, thread counts above the largest measured one use its entry;
    other devices and unknown families: grouped."""
    for family, table in CHOICES.items():
        for threads, name in table.items():
            assert choose_layout(family, "cpu", threads).name == name
        top = max(table)
        assert choose_layout(family, "cpu", top + 6) == LAYOUTS[table[top]]
        assert choose_layout(family, "cuda", 1) is GROUPED
    assert choose_layout("mlp", "cpu", 1) is GROUPED


def test_engine_applies_the_rule():
    eng = _engine("cnn", "float64")
    assert eng.model.layout is choose_layout("cnn", "cpu", eng.threads)
    assert eng.model.layout_name == eng.model.layout.name
