"""Error bars from a cell's min-max: the mean of equal seeds can round one ulp outside its own
min-max (quadratic-lr's SFL K=2 lr 0.06: mean 1.8018025590412906e-53, min = max
1.8018025590412909e-53), which made `fedbench plot quadratic-lr` fail with matplotlib's
"'yerr' must not contain negative values"."""

from __future__ import annotations

from types import SimpleNamespace

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from fedbench.table_plots import _versus_panel  # noqa: E402


def _cell(x, mean, low, high):
    return SimpleNamespace(
        cell=SimpleNamespace(x=x, row="SFL K=2"), mean=mean, low=low, high=high, not_reached=0
    )


def test_a_mean_one_ulp_outside_its_min_max_draws():
    m = 1.8018025590412909e-53
    cells = [_cell(0.06, 1.8018025590412906e-53, m, m), _cell(0.1, 2.0, 1.0, 3.0)]
    fig, ax = plt.subplots()
    try:
        drawn = _versus_panel(ax, {"SFL K=2": cells}, SimpleNamespace(logx=True), paper=False)
    finally:
        plt.close(fig)
    assert drawn == 1
