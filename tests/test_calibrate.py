"""fedbench calibrate: the bracket-and-bisect search on synthetic metrics, and end to end on the
SFL quadratic where the fitted learning rate is known in closed form."""

import dataclasses
import json
import math

import pytest
from click.testing import CliRunner

from fedbench.calibration_search import Point, calibrate, search
from fedbench.cli import cli
from fedbench.errors import FedbenchError
from fedbench.results import RunIndex
from fedbench.tables import TABLES, PlotSpec, Selection, TableSpec, runs
from fedbench.tables.calibration import calibrated_selection


def metric(fn):
    return lambda x: Point(x, fn(x), [fn(x)])


def test_search_on_a_rounds_like_curve():
    """Rounds to target: flat (sampling-bound) at large lr, ~c/lr below; start in the flat part.
    The search walks down through the plateau, brackets, and bisects to the crossing."""
    c, target = 7.4e-4, 116.0  # ~ the FMNIST curve (1e-5 -> 74)
    res = search(metric(lambda lr: float(max(11, math.ceil(c / lr)))), 1e-2, target)
    exact = c / target
    assert abs(res.best.value / exact - 1) < 0.05
    assert abs(res.best.mean - target) <= 0.05 * target
    lo, hi = res.bracket
    assert lo < exact < hi and hi / lo <= 1.05
    assert [p.value for p in res.points[:4]] == [1e-2, 1e-3, 1e-4, 1e-5]  # through the plateau


def test_search_non_monotone_ends_at_a_crossing_and_walks_up():
    """A bump: bisection keeps one end on each side of the target, so it ends at a crossing."""

    def f(x):
        return 10 * math.log10(x) + (30 if 2 < x < 4 else 0)  # increasing, a bump on (2, 4)

    res = search(metric(f), 1.0, 12.0, step=4.0, rtol=0.01)  # auto: down is farther, walks up
    lo, hi = res.bracket
    assert (f(lo) - 12) * (f(hi) - 12) < 0 and hi / lo <= 1.01
    assert res.points[1].value == 0.25 and res.points[2].value == 4.0


def test_search_without_a_crossing_is_a_one_line_error():
    with pytest.raises(FedbenchError, match="no value crosses the target 5") as e:
        search(metric(lambda x: 1.0), 1.0, 5.0, max_steps=2)
    assert "\n" not in str(e.value)
    with pytest.raises(FedbenchError, match=r"after 2 values \(--max-points\)"):
        search(metric(lambda x: 1.0), 1.0, 5.0, max_points=2)
    with pytest.raises(FedbenchError, match="direction must be"):
        search(metric(lambda x: 1.0), 1.0, 5.0, direction="sideways")


# ---------------------------------------------------------------- end to end on the quadratic

# PFL on quadratic group 2 (F_m = 0.5 x^2 +- x, x* = 0), K local GD steps, R rounds, x0 = 10:
# each round maps x -> (1 - lr)^K x, so |x_R - x*| = 10 (1 - lr)^(K R) and the lr giving a
# distance D is 1 - (D / 10)^(1 / (K R)). Target D at lr = 0.05: the fit must land near 0.05.
K, R, LR_STAR = 10, 5, 0.05
TARGET = 10 * (1 - LR_STAR) ** (K * R)


def quad_spec():
    def build(ds):
        return [
            runs(ds, "PFL", "dist", "final_dist", "sfl-quadratic", None, method="pfl",
                 quad_group=2, local_steps=K, rounds=R),
        ]  # fmt: skip

    plot = PlotSpec("curves", "final_dist", ("dist_to_opt",))  # sweep --table wants a figure
    return TableSpec(
        "quadcal", "test", "calibration test", ("quadratic",), build, seeds=(1,), plot=plot
    )


def test_calibrate_the_quadratic_lr_end_to_end(tmp_path):
    spec = quad_spec()
    sel = Selection(results=str(tmp_path))
    fit = calibrate(spec, sel, "pfl", "lr", target=TARGET, quiet=True)
    assert abs(fit["value"] / LR_STAR - 1) < 0.05  # preset lr 0.1 -> bracket [0.01, 0.1]
    assert fit["achieved"] == pytest.approx(10 * (1 - fit["value"]) ** (K * R), rel=1e-9)
    saved = json.loads((tmp_path / "calibration" / "quadcal-quadratic.json").read_text())
    assert saved["param"] == "lr" and saved["value"] == fit["value"]
    assert saved["anchor"] == {"row": "PFL", "col": "dist", "metric": "final_dist"}
    assert saved["target_source"] == "given" and saved["runs_spent"] == len(saved["points"])
    # every point is a normal finished run in results/
    index = RunIndex(tmp_path)
    assert len(index) == saved["runs_spent"]
    # again: every point found in results/, no new run
    again = calibrate(spec, sel, "pfl", "lr", target=TARGET, quiet=True)
    assert again["value"] == fit["value"] and len(RunIndex(tmp_path)) == saved["runs_spent"]
    # --calibrated: the fitted value as a --set, and the header line names the anchor
    fsel, line = calibrated_selection(spec, sel)
    assert fsel.sets["lr"] == fit["value"] and fsel.dataset == "quadratic"
    assert line.startswith(f"calibrated: lr = {fit['value']:g}, fitted so that PFL / dist")
    # the commands a table prints to fill its missing cells say --calibrated, not the value
    assert "--set" not in fsel.options() and fsel.options().endswith("--calibrated")
    seeded = Selection(results=str(tmp_path), seeds=(0,), sets={"rounds": 5})
    assert calibrated_selection(spec, seeded)[0].options() == (
        f"--seeds 0 --set rounds=5 --results {tmp_path} --calibrated"
    )
    with pytest.raises(FedbenchError, match="clashes with --calibrated"):
        calibrated_selection(spec, Selection(results=str(tmp_path), sets={"lr": "0.1"}))
    # a table with no anchor of its own takes this table's fit (calibrated_by), and says so
    other = dataclasses.replace(spec, name="quadcal-other", calibrated_by="quadcal")
    osel, oline = calibrated_selection(other, sel)
    assert osel.sets["lr"] == fit["value"]
    assert "fitted so that table quadcal's cell PFL / dist" in oline
    assert "quadcal-quadratic.json" in oline
    with pytest.raises(FedbenchError, match="takes the fit of table quadcal"):
        calibrate(other, sel, "pfl", "lr", target=TARGET, quiet=True)


def test_calibrate_errors(tmp_path):
    spec = quad_spec()
    sel = Selection(results=str(tmp_path))
    with pytest.raises(FedbenchError, match="no runs cell for anchor 'fedavg'"):
        calibrate(spec, sel, "fedavg", target=1.0)
    with pytest.raises(FedbenchError, match="fixes local_steps itself"):
        calibrate(spec, sel, "pfl", "local_steps", target=1.0)
    with pytest.raises(FedbenchError, match="no numeric paper value; pass --target"):
        calibrate(spec, sel, "pfl")
    with pytest.raises(FedbenchError, match="no calibration of table quadcal"):
        calibrated_selection(spec, sel)


def test_calibrate_command_and_calibrated_table(tmp_path, monkeypatch):
    monkeypatch.setitem(TABLES, "quadcal", quad_spec())
    res, out = str(tmp_path / "r"), str(tmp_path / "t")

    def invoke(*args):
        return CliRunner().invoke(cli, list(args), obj={})

    r = invoke("calibrate", "--table", "quadcal", "--anchor", "pfl", "--target", str(TARGET),
               "--results", res, "--quiet", "--threads", "1")  # fmt: skip
    assert r.exit_code == 0, r.output
    assert "wrote" in r.output and "quadcal-quadratic.json" in r.output
    r = invoke("sweep", "--table", "quadcal", "--calibrated", "--results", res, "--quiet")
    assert r.exit_code == 0 and "1 already done, 0 to run" in r.output, r.output
    r = invoke("table", "quadcal", "--calibrated", "--results", res, "--format", "md",
               "--out", out)  # fmt: skip
    assert r.exit_code == 0, r.output
    text = (tmp_path / "t" / "quadcal_calibrated.md").read_text()  # one dataset: no _DATASET
    assert "calibrated: lr = " in text and "--calibrated" in text
    r = invoke("table", "report", "--results", res, "--out", out)  # the report finds the file
    assert r.exit_code == 0, r.output
    report = (tmp_path / "t" / "REPORT.md").read_text()
    assert "## quadcal (calibrated) (quadratic)" in report
    assert "- calibrated: lr = " in report and "--calibrated`" in report
    r = invoke("table", "quadcal", "--calibrated", "--set", "lr=0.1", "--results", res)
    assert r.exit_code == 2 and "clashes with --calibrated" in r.output
