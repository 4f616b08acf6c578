"""local_acc (issue 34, item 6): with eval_local the engine records the participating devices'
weighted mean accuracy of their local models on their own training data, and FedSoftMax's
smoothness is measured on that curve (the paper's), not on the global test accuracy."""

from __future__ import annotations

import math

import pandas as pd
import pytest
import torch
from conftest import tiny_config, tiny_data

from fedbench.tables.metrics import METRICS
from fedbench.training import evaluation
from fedbench.training.engine import Engine


def test_local_accuracy_by_hand():
    """logreg on 2 features, 2 classes: w = [W (2x2) | b (2)]; device 0 holds 3 samples, 2 of
    which its model classifies right; device 1's model predicts class 1 always (1 of 2 right)."""
    x = torch.tensor([[1.0, 0.0], [0.0, 1.0], [2.0, 0.0], [1.0, 1.0], [0.0, 3.0]])
    x = x.double()
    y = torch.tensor([0, 1, 1, 1, 0])
    from fedbench.data import FederatedData

    data = FederatedData(x, y, x, y, [torch.arange(3), torch.arange(3, 5)], 2, {})
    eng = Engine(tiny_config(model="logreg", num_clients=2, clients_per_round=2), data=data)
    # logits = x W^T + b: device 0 with W = I (argmax of the features): right on samples 0, 1
    # ([1,0] -> 0, [0,1] -> 1), wrong on [2,0] (-> 0, label 1); device 1: bias to class 1
    w0 = torch.tensor([1.0, 0.0, 0.0, 1.0, 0.0, 0.0], dtype=torch.float64)
    w1 = torch.tensor([0.0, 0.0, 0.0, 0.0, 0.0, 1.0], dtype=torch.float64)
    w = torch.stack([w0, w1])
    assert eng.model.dim == 6
    acc = evaluation.local_accuracy(eng.model, data, w, torch.tensor([0, 1]))
    assert acc.tolist() == pytest.approx([2 / 3, 1 / 2])


def test_eval_local_records_local_acc_and_changes_nothing_else():
    """The same run with and without eval_local: every other number equal; local_acc is the
    weighted mean (weights: the round's aggregation weights) of local_accuracy."""
    data = tiny_data(sizes=(3, 8, 6, 4))
    plain = Engine(tiny_config(), data=data)
    with_acc = Engine(tiny_config(eval_local=True), data=data)
    for r in (1, 2):
        a, b = plain.run_round(r), with_acc.run_round(r)
        assert "local_acc" not in a and 0.0 <= b.pop("local_acc") <= 1.0
        a.pop("round_seconds"), b.pop("round_seconds")
        assert a == b
    assert torch.equal(plain.w, with_acc.w)


def test_smoothness_reads_local_acc_by_hand():
    """c = local_acc over rounds 1..4: 0.5, 0.6, 0.8, 0.85; diff 0.1, 0.2, 0.05, mean 0.11667,
    std (ddof 0) sqrt((0.01667^2 + 0.08333^2 + 0.06667^2) / 3) = 0.062361: 0.53452. The test
    accuracy (a straight line, smoothness 0) is not what it reads."""
    df = pd.DataFrame(
        {
            "round": [0, 1, 2, 3, 4],
            "local_acc": [math.nan, 0.5, 0.6, 0.8, 0.85],
            "test_acc": [0.1, 0.2, 0.3, 0.4, 0.5],
        }
    )
    got = METRICS["smoothness"].fn({}, lambda cols: df[[c for c in cols if c in df]])
    assert got == pytest.approx(0.0623610 / 0.1166667, rel=1e-5)
    assert got == pytest.approx(0.534522, rel=1e-5)
