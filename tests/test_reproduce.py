"""`fedbench reproduce` (issue 33): a quick reproduction end to end, a budget that ends mid-run
then the same records as an uninterrupted reproduction, the plan and its estimate against a
hand-made store, and one-line refusals."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from conftest import invoke, one_line_error
from resume_helpers import assert_same_rounds

from fedbench.reproduce import reproduction_plan as plan_mod
from fedbench.sweep import budget
from fedbench.sweep.budget import EXIT_BUDGET

# FedProx's synthetic-iid: two small tables (dissimilarity, adaptive-mu) of logreg runs
SMALL = ["fedprox", "--dataset", "synthetic-iid", "--threads", "1"]


def _runs(folder: Path) -> dict[str, dict]:
    return {p.parent.name: json.loads(p.read_text()) for p in folder.glob("*/run.json")}


@pytest.fixture(autouse=True)
def quiet_machine(monkeypatch):
    """Estimates at a quiet machine's rates: the test machine's load does not scale them."""
    monkeypatch.setattr("fedbench.sweep.rates.load_factor", lambda: (1.0, ""))


def test_a_quick_reproduction_runs_renders_and_keeps_apart(
    tmp_path, one_thread, private_cache, monkeypatch
):
    # beside the real shipped store: its paper-scale tables stay out of the quick report
    monkeypatch.setenv(
        "FEDBENCH_STORE", str(Path(__file__).resolve().parents[1] / "results/shipped")
    )
    res = tmp_path / "r"
    r = invoke("reproduce", *SMALL, "--scale", "quick", "--results", res)
    assert r.exit_code == 0, r.output
    assert "reproduce at the quick CI scale" in r.output
    assert "complete: " in r.output and "partial" not in r.output
    quick = res / plan_mod.QUICK_DIR
    runs = _runs(quick)
    assert runs and all(m["status"] == "complete" for m in runs.values())
    assert all(m["config"]["rounds"] == plan_mod.QUICK_ROUNDS for m in runs.values())
    assert not _runs(res), "quick runs never sit beside paper-scale ones"
    for name in ("dissimilarity_synthetic-iid.md", "adaptive-mu_synthetic-iid.md", "REPORT.md"):
        assert (quick / "tables" / name).is_file(), name
    report = (quick / "tables" / "REPORT.md").read_text()
    assert "| full |" not in report, "the quick report is of its runs, not the shipped store's"
    again = invoke("reproduce", *SMALL, "--scale", "quick", "--results", res, "--dry-run")
    assert again.exit_code == 0, again.output
    assert "in all: 0 runs to do" in again.output


def test_a_budget_ends_mid_run_and_the_next_call_gives_the_same_records(
    tmp_path, one_thread, private_cache, monkeypatch
):
    """The deadline's stop asked at round 5 of the first run (deterministic, instead of a
    wall-clock deadline): exit 75, the run interrupted with its checkpoint; the next call
    finishes with the records of a reproduction never stopped."""
    monkeypatch.setattr(plan_mod, "QUICK_ROUNDS", 12)
    monkeypatch.setenv("FEDBENCH_CHECKPOINT_ROUNDS", "1")
    args = ["reproduce", *SMALL, "--tables", "dissimilarity", "--scale", "quick"]
    whole = invoke(*args, "--results", tmp_path / "whole")
    assert whole.exit_code == 0, whole.output

    armed: list = []
    monkeypatch.setattr(budget.Deadline, "arm", lambda self, s=0.0: armed.append(self))
    from fedbench.sweep import run as sweep_run

    seen = sweep_run._Lines.round

    def round_then_stop(self, cfg, rec):
        seen(self, cfg, rec)
        if int(rec["round"]) == 5 and not armed[0].expired:
            armed[0]._stop()

    monkeypatch.setattr(sweep_run._Lines, "round", round_then_stop)
    res = tmp_path / "stopped"
    first = invoke(*args, "--results", res, "--budget", "1h")
    assert first.exit_code == EXIT_BUDGET, first.output
    assert "budget ended" in first.output and "to continue: fedbench reproduce" in first.output
    stopped = [m for m in _runs(res / "quick").values() if m["status"] == "interrupted"]
    assert len(stopped) == 1 and stopped[0]["checkpoint_round"] >= 5
    monkeypatch.setattr(sweep_run._Lines, "round", seen)
    second = invoke(*args, "--results", res)
    assert second.exit_code == 0, second.output
    assert "complete: dissimilarity (synthetic-iid)" in second.output
    a, b = _runs(tmp_path / "whole" / "quick"), _runs(res / "quick")
    assert sorted(a) == sorted(b)
    assert any(m.get("resumed") for m in b.values())
    for name in a:
        assert_same_rounds(tmp_path / "whole" / "quick" / name, res / "quick" / name)


def _finished(results: Path, cfg, seconds: float, device: str) -> None:
    from fedbench.testing import write_fake_run

    meta_path = write_fake_run(results, cfg, device_name=device) / "run.json"
    meta = json.loads(meta_path.read_text())
    start = datetime(2026, 1, 1)
    meta.update(started=start.isoformat(), ended=(start + timedelta(seconds=seconds)).isoformat())
    meta_path.write_text(json.dumps(meta))


def test_the_plan_and_its_estimate_read_a_hand_made_store(tmp_path, monkeypatch, private_cache):
    """18 of the 20 runs of dissimilarity (synthetic-iid, 2 methods x 10 seeds) shipped, 40 s
    each (0.2 s a round) on this device: those are done, the other two are expected to take
    2 x 200 x 0.2 s."""
    from fedbench.sweep import table_configs
    from fedbench.sweep.estimate import this_device
    from fedbench.tables import get_table
    from fedbench.tables.selection import make_selection

    spec = get_table("dissimilarity")
    sel = make_selection("synthetic-iid", None, None, (), tmp_path / "made")
    configs, _ = table_configs(spec, sel)
    assert len(configs) == 20
    here = this_device(configs[0])
    for cfg in configs[:18]:
        _finished(tmp_path / "made", cfg, 40, here)
    store = tmp_path / "store"
    r = invoke("publish", "--table", "dissimilarity", "--dataset", "synthetic-iid", "--results",
               tmp_path / "made", "--store", store)  # fmt: skip
    assert r.exit_code == 0, r.output
    monkeypatch.setenv("FEDBENCH_STORE", str(store))
    r = invoke("reproduce", "fedprox", "--tables", "dissimilarity", "--dataset", "synthetic-iid",
               "--results", tmp_path / "fresh", "--dry-run")  # fmt: skip
    assert r.exit_code == 0, r.output
    row = next(line.split() for line in r.output.splitlines() if "dissimilarity (" in line)
    assert row[2:7] == ["20", "18", "2", "400", "80"], row  # runs, done, to do, rounds, 80 s
    assert f"expected 80 s on {here}" in r.output
    assert "and the shipped store: 2 from runs of the same settings on this device" in r.output
    assert not (tmp_path / "fresh").exists() or not _runs(tmp_path / "fresh")


def test_cheapest_complete_table_first_and_shared_runs_once(tmp_path, private_cache):
    """SFL's quadratic tables share runs: planned once, under the cheaper table, first."""
    specs = plan_mod.choose_tables(["sfl"], False, "quadratic-lr,quadratic", None)
    rp = plan_mod.build_plan(specs, None, "quick", tmp_path / "r")
    assert [u.name for u in rp.units] == ["quadratic (quadratic)", "quadratic-lr (quadratic)"]
    from fedbench.identity import config_hash

    wanted = {config_hash(c) for u in rp.units for c in u.todo}
    assert len(rp.todo) == len(wanted) < sum(len(u.todo) for u in rp.units)
    first, second = rp.units
    assert first.own == first.todo  # the first unit runs all of its runs ...
    assert {config_hash(c) for c in second.own}.isdisjoint(map(config_hash, first.own))


@pytest.mark.parametrize(
    "args, text",
    [
        (["nopaper"], "unknown paper 'nopaper'; choose one of: "),
        (["fedprox", "--tables", "nosuch"], "unknown table 'nosuch' here; choose from: "),
        (["fedprox", "--dataset", "cifar10"], "no chosen table has dataset 'cifar10'"),
        ([], "reproduce what? name papers"),
        (["fedprox", "--all"], "give papers or --all, not both"),
        (["fedprox", "--budget", "soon"], "--budget expects a duration such as 90s, 30m or 2h"),
        (["fedprox", "--until", "25:99"], "--until expects a time HH:MM"),
        (["fedprox", "--budget", "1h", "--until", "10:00"], "--budget and --until both set"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, args, text):
    r = invoke("reproduce", *args, "--results", tmp_path / "r", "--dry-run")
    assert text in one_line_error(r)


def test_no_run_starts_that_its_rate_says_cannot_end_in_time():
    from fedbench.assembly import build_config
    from fedbench.reproduce.run_units import fitting
    from fedbench.sweep.rates import Rates

    rates = Rates()
    cfgs = [build_config("default", None, {"seed": s}) for s in range(4)]  # 50 rounds each
    rates.add("dev", cfgs[0].to_dict(), 0.1)  # 5 s a run
    assert len(fitting(cfgs, rates, "dev", left=12, jobs=1)) == 2
    assert len(fitting(cfgs, rates, "dev", left=12, jobs=2)) == 4
    assert fitting(cfgs, rates, "dev", left=4, jobs=1) == []


def test_budget_and_until_parse():
    assert budget.parse_budget("30m") == 1800 and budget.parse_budget("2h") == 7200
    assert budget.parse_budget("90") == 90
    now = datetime(2026, 1, 1, 14, 0)
    assert budget.parse_until("14:30", now) == 1800
    assert budget.parse_until("13:00", now) == 23 * 3600  # passed today: tomorrow


def test_a_real_deadline_stops_the_run_going_on_at_a_round_end(tmp_path):
    """The wall-clock path: the deadline's timer asks the stop, the run going on ends its
    round, checkpoints and is recorded interrupted; the command exits 75 on time."""
    import time

    from resume_helpers import fedbench_env, run_to_end

    res = tmp_path / "r"
    args = ["reproduce", *SMALL, "--tables", "dissimilarity", "--results", res, "--budget", "20s"]
    t0 = time.monotonic()
    r = run_to_end(args, fedbench_env(FEDBENCH_STORE="none"))
    took = time.monotonic() - t0
    assert r.returncode == EXIT_BUDGET, r.stdout + r.stderr
    assert "the budget ends: stopping the runs at the end of a round" in r.stderr
    metas = _runs(res)
    stopped = [name for name, m in metas.items() if m["status"] == "interrupted"]
    assert stopped and all((res / name / "checkpoint.pt").is_file() for name in stopped)
    assert took < 20 + 30, f"{took:.0f} s"  # start-up, the round's end and the files


def test_a_complete_table_is_written_and_published(tmp_path, monkeypatch, private_cache):
    """Every run of dissimilarity (synthetic-iid) finished in the results folder: no run to do;
    its Markdown, figure and REPORT.md are written to --out and its runs go to the store."""
    from fedbench.sweep import table_configs
    from fedbench.tables import get_table
    from fedbench.tables.selection import make_selection

    res, store, out = tmp_path / "r", tmp_path / "store", tmp_path / "tables"
    sel = make_selection("synthetic-iid", None, None, (), res)
    configs, _ = table_configs(get_table("dissimilarity"), sel)
    for cfg in configs:
        _finished(res, cfg, 40, "cpu (Some CPU, x86_64, AVX2)")
    store.mkdir()
    monkeypatch.setenv("FEDBENCH_STORE", str(store))
    r = invoke("reproduce", "fedprox", "--tables", "dissimilarity", "--dataset", "synthetic-iid",
               "--results", res, "--out", out)  # fmt: skip
    assert r.exit_code == 0, r.output
    assert "complete: dissimilarity (synthetic-iid)" in r.output
    for name in ("dissimilarity_synthetic-iid.md", "dissimilarity_synthetic-iid.png", "REPORT.md"):
        assert (out / name).is_file(), name
    assert "dissimilarity_synthetic-iid: 20 run(s) added" in r.output
    again = invoke("reproduce", "fedprox", "--tables", "dissimilarity", "--dataset",
                   "synthetic-iid", "--results", tmp_path / "fresh", "--dry-run")  # fmt: skip
    assert "in all: 0 runs to do" in again.output  # the store now holds them


def test_the_cut_scale_is_the_committed_table_files(tmp_path):
    """--scale cut: a table's selection is its committed file's command (here a file made at
    seed 0, K 10, 25 rounds, as tables/r90_mnist.md was before its paper-scale runs); a table
    with no committed file runs at the paper's scale."""
    from fedbench.tables import get_table

    folder = tmp_path / "tables"
    folder.mkdir()
    cmd = "fedbench table r90 --dataset mnist --seeds 0 --set K=10 --set rounds=25 --format md"
    (folder / "r90_mnist.md").write_text(f"<!-- made by: {cmd} -->\n")
    sel = plan_mod.committed_selection("r90", "mnist", str(tmp_path), folder)
    assert sel.seeds == (0,) and sel.sets == {"K": "10", "rounds": "25"}
    assert plan_mod.committed_selection("r90", "fmnist", str(tmp_path), folder) is None
    sel, note = plan_mod.unit_selection(get_table("r90"), "mnist", "cut", tmp_path)
    assert note is None  # the source tree's tables/r90_mnist.md
    sel, note = plan_mod.unit_selection(get_table("r90"), "fmnist", "cut", tmp_path)
    assert sel.seeds is None and note == "no committed table file: at the paper's scale"


def test_a_table_whose_data_is_not_here_is_skipped_with_the_command_that_gets_it(
    tmp_path, monkeypatch, private_cache
):
    """SFL's CIFAR-10 table on a machine without CIFAR-10: listed as skipped with `fedbench
    data get cifar10`, none of its runs planned (a reproduction never downloads: under a budget
    the download would spend it, and with no network every run would fail)."""
    monkeypatch.setenv("FEDBENCH_DATA", str(tmp_path / "data"))
    monkeypatch.delenv("FEDBENCH_NO_DOWNLOAD", raising=False)  # downloadable, yet not fetched
    monkeypatch.chdir(tmp_path)
    r = invoke("reproduce", "sfl", "--tables", "sfl", "--dataset", "cifar10", "--results",
               tmp_path / "r", "--dry-run")  # fmt: skip
    assert r.exit_code == 0, r.output
    assert "skipped: sfl (cifar10): no cifar10 data here; fedbench data get cifar10" in r.output
    assert "in all: 0 runs to do; 0 tables, every run done, 1 skipped" in r.output


def test_runs_quicker_than_their_estimate_leave_time_for_more(monkeypatch):
    """The runs that fit are fitted again as they end: four 5 s runs in 12 s, each batch done
    in 1 s, all run (fitted once, two would run and the budget would end)."""
    from fedbench.assembly import build_config
    from fedbench.reproduce import run_units as units_mod
    from fedbench.sweep.rates import Rates

    now = [0.0]
    deadline = budget.Deadline(12, clock=lambda: now[0])
    rates = Rates()
    cfgs = [build_config("default", None, {"seed": s}) for s in range(4)]  # 50 rounds each
    rates.add("dev", cfgs[0].to_dict(), 0.1)  # 5 s a run
    unit = plan_mod.Unit(spec=None, dataset="d", selection=None, configs=cfgs, todo=cfgs,
                         own=cfgs)  # fmt: skip
    rp = plan_mod.ReproPlan([unit], Path("r"), "paper", False, rates=rates, device="dev")
    ran: list = []

    def run_unit(rp, unit, runs, executor, level, out):
        ran.append(len(runs))
        now[0] += 1.0

    monkeypatch.setattr(units_mod, "_run_unit", run_unit)
    monkeypatch.setattr(budget.Deadline, "arm", lambda self, s=0.0: None)
    out = units_mod.run_units(rp, None, deadline, jobs=1, level="quiet")
    assert ran == [2, 2] and not out.budget_ended


def test_a_table_whose_cells_fix_their_rounds_is_not_run_at_the_quick_scale(tmp_path):
    """sfl-fmnist-lr's cells fix 250 rounds (a cell's own values win over --set): at the quick
    scale its 60 runs would take the paper's time, so it is skipped with why."""
    specs = plan_mod.choose_tables(["sfl"], False, "sfl-fmnist-lr,quadratic", None)
    rp = plan_mod.build_plan(specs, None, "quick", tmp_path / "r")
    lr = next(u for u in rp.units if u.spec.name == "sfl-fmnist-lr")
    assert lr.missing.startswith("its cells fix their rounds (250 a run)") and not lr.own
    assert all(c.rounds == plan_mod.QUICK_ROUNDS for c in rp.todo) and rp.todo
    from fedbench.reproduce.screen import closing_lines, plan_lines

    assert any(line.endswith("not quick") for line in plan_lines(rp, "cheapest", 1))
    assert "skipped (not quick): sfl-fmnist-lr (fmnist)" in closing_lines(rp, None, "x")


def test_the_quick_scale_is_lighter_where_every_run_stays_valid(tmp_path):
    """FedProx's Synthetic tables: one local epoch instead of 20 on 5 devices a round instead of
    10 (FLOPs cut, every run valid);
    the quadratic tables, whose FLOPs are not known lighter, keep theirs."""
    from fedbench.tables import get_table

    sel = plan_mod.quick_selection(get_table("dissimilarity"), "synthetic-iid", tmp_path)
    assert sel.sets == {"rounds": str(plan_mod.QUICK_ROUNDS), "local_epochs": "1",
                        "clients_per_round": "5"}  # fmt: skip
    sel = plan_mod.quick_selection(get_table("quadratic"), "quadratic", tmp_path)
    assert sel.sets == {"rounds": str(plan_mod.QUICK_ROUNDS)}
