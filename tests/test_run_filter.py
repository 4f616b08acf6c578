"""Telling runs apart (fedbench.run_filter): --dataset, --method, --seeds and --where really
filter `table summary` and `plot curves` (or refuse with one line), the fields that vary are
shown (summary columns, sweep listings, plot legends), and plot styles stay distinct."""

import json

import pytest
from conftest import invoke

from fedbench.config import RunConfig
from fedbench.errors import FedbenchError
from fedbench.run_filter import RunFilter, run_label, varying_fields
from fedbench.testing import write_fake_run


def cfg(**kw) -> RunConfig:
    base = dict(hetero="stragglers", stragglers=0.5, rounds=3)
    return RunConfig(**{**base, **kw})


@pytest.fixture
def results(tmp_path):
    """fedavg at s = 0, 0.5, 0.9 (seeds 0, 1), fedprox mu = 0 / 1 at s = 0.5, one fmnist run."""
    for s in (0.0, 0.5, 0.9):
        for seed in (0, 1):
            write_fake_run(tmp_path, cfg(stragglers=s, seed=seed))
    for mu in (0.0, 1.0):
        write_fake_run(tmp_path, cfg(method="fedprox", method_params={"mu": mu}))
    write_fake_run(tmp_path, RunConfig(dataset="fmnist", partition="pclass", rounds=3))
    return tmp_path


def metas(results):
    return {p.parent.name: json.loads(p.read_text()) for p in results.glob("*/run.json")}


def test_filter_fields_aliases_params_and_status(results):
    runs = list(metas(results).values())

    def kept(**kw):
        return sum(RunFilter.parse(**kw).keeps(m) for m in runs)

    assert kept() == 9
    assert kept(dataset="synthetic") == 8 and kept(dataset="fmnist") == 1
    assert kept(where=["s=0.5"]) == 4 and kept(where=["stragglers=0.5,0.9"]) == 6
    assert kept(method="fedprox", where=["mu=1"]) == 1  # 1 matches 1.0
    assert kept(method="fedavg", seeds=[1]) == 3
    assert kept(where=["status=complete"]) == 9 and kept(where=["status=failed"]) == 0
    with pytest.raises(FedbenchError, match="nosuch is not a config field"):
        RunFilter.parse(where=["nosuch=1"])
    with pytest.raises(FedbenchError, match="s=x: stragglers expects float"):
        RunFilter.parse(where=["s=x"])
    with pytest.raises(FedbenchError, match="--where expects FIELD=VALUE"):
        RunFilter.parse(where=["s"])
    with pytest.raises(FedbenchError, match="filtered on twice"):
        RunFilter.parse(where=["s=0.5", "stragglers=0.9"])


def test_varying_fields_and_labels(results):
    runs = [m for m in metas(results).values() if m["config"]["method"] == "fedavg"]
    runs = [m for m in runs if m["config"]["dataset"] == "synthetic"]
    shown = varying_fields(runs, always=("method", "seed"))
    assert shown == ["stragglers"]
    labels = {run_label(m, shown) for m in runs}
    assert labels == {
        f"fedavg stragglers={s} s{seed}" for s in ("0", "0.5", "0.9") for seed in (0, 1)
    }


def test_summary_filters_and_shows_what_varies(results):
    r = invoke("table", "summary", "--results", results, "--dataset", "synthetic", "--where",
               "s=0.5", "--format", "csv", "--out", results / "t")  # fmt: skip
    assert r.exit_code == 0, r.output
    text = (results / "t" / "summary.csv").read_text()
    rows = [x for x in text.splitlines() if not x.startswith("#")]
    header = rows[0].split(",")
    assert len(rows) == 1 + 4 and "fmnist" not in text
    assert "mu" in header and "stragglers" not in header  # varies / fixed by the filter
    head = (results / "t" / "summary.csv.json").read_text()  # the csv's metadata beside it
    assert "--where dataset=synthetic --where stragglers=0.5" in head
    r = invoke("table", "summary", "--results", results, "--method", "fedavg", "--seeds", "0")
    assert r.exit_code == 0 and r.output.count("fedavg-") == 4, r.output  # 3 synthetic, fmnist


@pytest.mark.parametrize(
    "args,needle",
    [
        (
            ["table", "summary", "--set", "s=0.5"],
            "--set does not apply to `fedbench table summary`",
        ),
        (["table", "summary", "--dataset", "cifar10"], "no run in"),
        (["plot", "curves", "--set", "s=0.5"], "--set does not apply to `fedbench plot curves`"),
        (["plot", "curves", "--dataset", "cifar10"], "no run in"),
        (["table", "report", "--dataset", "fmnist"], "--dataset does not apply"),
        (["table", "tau", "--where", "s=0.5"], "--where does not apply to `fedbench table tau`"),
    ],
)
def test_filters_that_cannot_apply_are_refused(results, args, needle):
    r = invoke(*args, "--results", results)
    assert r.exit_code == 2 and needle in r.output and r.output.count("\n") == 1, r.output


def test_curves_are_filtered_and_labelled(results, tmp_path, monkeypatch):
    import matplotlib.axes

    labels = []
    real = matplotlib.axes.Axes.plot

    def plot(self, *a, **kw):
        labels.append(kw.get("label"))
        return real(self, *a, **kw)

    monkeypatch.setattr(matplotlib.axes.Axes, "plot", plot)
    r = invoke("plot", "curves", "--results", results, "--dataset", "synthetic", "--method",
               "fedavg", "--out", tmp_path / "c")  # fmt: skip
    assert r.exit_code == 0, r.output
    assert labels == [
        f"fedavg stragglers={s} s{seed}" for s in ("0", "0.5", "0.9") for seed in (0, 1)
    ]


def test_styles_stay_distinct_past_ten_series():
    import matplotlib.pyplot as plt

    from fedbench.plots import series_styles

    for n in (1, 10, 11, 20, 21, 80, 81, 200):
        styles = series_styles(n)
        keys = {(tuple(s["color"]), s["linestyle"]) for s in styles}
        assert len(styles) == n and len(keys) == n, n
    assert {s["linestyle"] for s in series_styles(20)} == {"-"}
    assert len({tuple(s["color"]) for s in series_styles(20)}) == 20
    tab10 = [tuple(plt.get_cmap("tab10")(i)) for i in range(10)]
    assert [tuple(s["color"]) for s in series_styles(11)[:10]] == tab10  # adding keeps colours


def test_dry_run_and_closing_table_show_what_varies(tmp_path):
    from fedbench.sweep import Outcome, Plan, SweepReport, summary_table

    grid = ["--grid", "s=0.1,0.9", "--set", "hetero=stragglers", "--set", "rounds=2"]
    r = invoke("sweep", "--dataset", "synthetic", *grid, "--seeds", "0,1", "--results", tmp_path,
               "--dry-run")  # fmt: skip
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    head = next(x for x in lines if x.strip().startswith("run "))
    assert head.split() == ["run", "method", "stragglers", "seed"]
    configs = [cfg(stragglers=s, seed=seed) for s in (0.1, 0.9) for seed in (0, 1)]
    from fedbench.identity import run_id

    report = SweepReport(Plan(todo=configs), [Outcome(run_id(c), "complete") for c in configs])
    table = summary_table(report)
    assert [c.header for c in table.columns][:2] == ["run", "stragglers"]
    assert list(table.columns[1].cells) == ["0.1", "0.1", "0.9", "0.9"]
