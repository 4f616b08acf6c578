"""A loss panel with a diverged run beside converging ones goes to a log axis (a linear one
flattened every other curve to its floor: runtime_fmnist_calibrated.png, a loss of 2,000 beside
1.3-2.3); accuracy never does, and a loss within two decades stays linear."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from fedbench.table_plots import X_LABELS, _spans_decades  # noqa: E402


def _axis(ys):
    fig, ax = plt.subplots()
    ax.plot(range(len(ys)), ys)
    return fig, ax


def test_a_diverged_loss_goes_to_a_log_axis():
    fig, ax = _axis([2.3, 1.9, 1.4, 2040.0])
    assert _spans_decades(ax, "local_loss")
    assert not _spans_decades(ax, "test_acc")  # accuracy: 0 to 1, always linear
    plt.close(fig)


def test_a_loss_within_two_decades_stays_linear():
    fig, ax = _axis([2.3, 1.2, 0.05])
    assert not _spans_decades(ax, "local_loss")
    plt.close(fig)


def test_seconds_are_each_runs_own_not_this_machines():
    # a table's runs may come from several devices (its header lists them)
    assert "this machine" not in X_LABELS["cum_seconds"]


def test_a_bar_without_a_number_says_why():
    """best-acc's FedLGA (Eq. 6) diverged: its bar was a silent gap."""
    from types import SimpleNamespace

    from fedbench.table_plots import _bars
    from fedbench.tables.result import CellResult

    def cell(row, **kw):
        return CellResult(cell=SimpleNamespace(row=row), **kw)

    members = [
        cell("FedAvg", mean=70.4, low=70.0, high=70.8, n=3),
        cell("Eq. 6", mean=None, diverged=1, n=1),
        cell("FedSAM", mean=None),
    ]
    fig = _bars({"fmnist": members}, SimpleNamespace(use_metric="best_acc"))
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert texts == ["diverged", "no run"]
    plt.close(fig)
