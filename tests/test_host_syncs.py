"""GPU readiness, checked on the CPU: the engine's torch path makes no host synchronisation per
local step. Every tensor -> Python conversion (.item(), .tolist(), .cpu(), .numpy(), float(),
int(), bool(), operator.index()) is counted while one round trains, at two numbers of local
steps: the counts must be equal (a fixed number per round, none per step). On a GPU each such
call waits for the device; per step, they would serialize the round.
"""

import threading

import pytest
import torch
from conftest import tiny_config

from fedbench.data import FederatedData
from fedbench.testing import token_data
from fedbench.training.engine import Engine

# tiny models at 1 thread: at 2, every parallel region of these small ops waits for a
# descheduled thread on a busy machine (fedbench/training/threads.py)
pytestmark = pytest.mark.usefixtures("one_thread")


CONVERSIONS = ("item", "tolist", "cpu", "numpy", "__float__", "__int__", "__bool__", "__index__")


class SyncCounter:
    """Counts the conversions on torch.Tensor while installed (monkeypatch undoes it)."""

    def __init__(self, monkeypatch):
        self.count = 0
        # the round's own thread: the next round's plan is built on the CPU in a helper thread
        # (training.round_plan.PlanAhead), off the critical path; its conversions are not syncs
        self.thread = threading.get_ident()
        for name in CONVERSIONS:
            monkeypatch.setattr(torch.Tensor, name, self._counted(getattr(torch.Tensor, name)))

    def _counted(self, method):
        def counted(t, *args, **kwargs):
            self.count += threading.get_ident() == self.thread
            return method(t, *args, **kwargs)

        return counted


def _images(shape, classes=4):
    g = torch.Generator().manual_seed(5)
    sizes = (20, 23, 17)  # padded last batches (BatchNorm's masked statistics)
    n = sum(sizes)
    x = torch.randn(n, *shape, generator=g)
    y = torch.randint(0, classes, (n,), generator=g)
    idx = list(torch.arange(n).split(list(sizes)))
    return FederatedData(x, y, x[:8], y[:8], idx, classes, {"description": "random"})


def _tokens():
    return token_data((20, 23, 17), length=5, seed=6)


# label -> (config overrides, data or None for the synthetic dataset); one per round path and
# model family the torch path trains
CASES = {
    "logreg-fused": (dict(model="logreg"), None),
    "mlp-window": (dict(model="mlp"), None),
    "mlp-stepwise-momentum": (dict(model="mlp", momentum=0.9), None),
    "mlp-scaffold": (dict(model="mlp", method="scaffold"), None),
    "mlp-fedprox": (dict(model="mlp", method="fedprox", method_params={"mu": 0.1}), None),
    "mlp-fedsam": (dict(model="mlp", method="fedsam"), None),
    "cnn": (dict(model="cnn"), lambda: _images((1, 28, 28))),
    "resnet20-bn": (dict(model="resnet20", norm="bn"), lambda: _images((3, 8, 8))),
    "resnet20-bn-fedsam": (
        dict(model="resnet20", norm="bn", method="fedsam"),
        lambda: _images((3, 8, 8)),
    ),
    "resnet20-gn": (dict(model="resnet20", norm="gn"), lambda: _images((3, 8, 8))),
    "vgg9": (dict(model="vgg9"), lambda: _images((3, 32, 32))),  # five 2x2 pools: 32 -> 1
    "charlstm": (dict(model="charlstm"), _tokens),
}


def _syncs_per_round(monkeypatch, case: str, steps: int) -> int:
    over, data = CASES[case]
    base = dict(num_clients=3, clients_per_round=3, local_epochs=None, local_steps=steps)
    cfg = tiny_config(**{**base, **over, "batch_size": 8, "dtype": "float32"})
    eng = Engine(cfg, data=data() if data else None)
    eng.fastpath = False  # the torch path (the compiled CPU loop is no GPU path)
    eng.run_round(1)  # warm-up: first-call work is no per-step cost
    with monkeypatch.context() as m:
        counter = SyncCounter(m)
        eng.run_round(2)
    return counter.count


@pytest.mark.parametrize("case", list(CASES))
def test_no_host_sync_per_local_step(monkeypatch, case):
    few, many = (_syncs_per_round(monkeypatch, case, s) for s in (2, 5))
    assert many == few, f"{case}: {few} syncs a round at 2 local steps, {many} at 5"


def test_the_counter_counts(monkeypatch):
    t = torch.ones(3)
    with monkeypatch.context() as m:
        counter = SyncCounter(m)
        float(t[0]), int(t[1]), bool(t[2]), t.tolist(), t.sum().item(), t.cpu(), t.numpy()
        range(torch.tensor(2))
    assert counter.count == 8
