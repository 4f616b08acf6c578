"""`table summary` and `plot curves` on a few different runs stay readable (issue 31, item 11):
the summary shows the columns that vary (the rest in its title), run ids whole; a plot's long
legend goes below the axes, not over the curves."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from conftest import invoke  # noqa: E402

from fedbench.plots import _legend  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_thread")
TINY = ("--preset", "default", "--set", "rounds=2", "--set", "N=4", "--set", "K=2")


def test_summary_shows_what_varies_and_whole_ids(tmp_path):
    res = tmp_path / "r"
    for sets in ([], ["--set", "method=fedprox", "--set", "mu=0.1"], ["--set", "lr=0.05"]):
        r = invoke("train", *TINY, *sets, "--results", res, "--threads", "1")
        assert r.exit_code == 0, r.output
    r = invoke("table", "summary", "--results", res)
    assert r.exit_code == 0, r.output
    header = next(x for x in r.output.splitlines() if " run_id " in x)
    words = " ".join(r.output[: r.output.index(header)].split())
    assert "all with status complete, dataset synthetic, seed 0, rounds_run 2" in words
    for col in ("run_id", "method", "lr", "mu", "best_acc"):
        assert f" {col} " in header, header
    for col in ("status", "dataset", "seed", "method_params"):
        assert f" {col} " not in header, header
    ids = [p.name for p in res.iterdir() if p.name[0] != "."]
    assert all(i in r.output for i in ids)


def test_a_long_legend_goes_below_the_axes():
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1], label="fedavg+momentum server_lr=0.5 server_momentum=0.9 s0")
    _legend(ax, 1, longest=52)
    box = ax.get_legend().get_bbox_to_anchor().transformed(ax.transAxes.inverted())
    assert box.y0 < 0  # below the axes
    plt.close(fig)
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1], label="fedavg s0")
    _legend(ax, 1, longest=9)
    box = ax.get_legend().get_bbox_to_anchor().transformed(ax.transAxes.inverted())
    assert box.y0 >= 0  # short: inside
    plt.close(fig)
