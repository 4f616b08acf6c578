"""A run with a server optimizer is named for it (issue 31, item 14): `fedavg+adam` in its run
id, the summary and legends; server_opt=adam at the default server_lr=1 warns in one line. Runs
without one keep their ids."""

import pytest
from conftest import invoke

from fedbench.assembly import build_config
from fedbench.identity import method_label, run_id
from fedbench.run_filter import run_label

pytestmark = pytest.mark.usefixtures("one_thread")

TINY = ("--preset", "default", "--set", "rounds=2", "--set", "N=4", "--set", "K=2")


def train(results, *sets):
    args = [a for s in sets for a in ("--set", s)]
    return invoke("train", *TINY, *args, "--results", results, "--threads", "1")


def test_the_run_id_summary_and_legend_name_the_server_optimizer(tmp_path):
    res = tmp_path / "r"
    r = train(res, "server_opt=adam", "server_lr=0.03")
    assert r.exit_code == 0 and "warning:" not in r.output, r.output
    method_row = [ln for ln in r.output.splitlines() if "│ method " in ln]
    assert len(method_row) == 1 and "fedavg+adam" in method_row[0], r.output  # train's box
    assert train(res).exit_code == 0
    names = sorted(p.name for p in res.iterdir() if p.is_dir() and p.name[0] != ".")
    assert [n.rsplit("-", 1)[0] for n in names] == [
        "fedavg+adam-synthetic-s0",
        "fedavg-synthetic-s0",
    ]
    r = invoke("table", "summary", "--results", res, "--format", "csv", "--out", tmp_path)
    assert r.exit_code == 0, r.output
    text = (tmp_path / "summary.csv").read_text()
    assert ",fedavg+adam," in text and ",fedavg," in text
    assert "server_opt" not in text.splitlines()[0]  # the label says it
    meta = {"config": {"method": "fedavg", "server_opt": "yogi", "seed": 1}}
    assert run_label(meta, []) == "fedavg+yogi s1"


def test_adam_at_the_default_server_lr_warns_in_one_line(tmp_path):
    r = train(tmp_path / "r", "server_opt=adam")
    assert r.exit_code == 0, r.output
    lines = [x for x in r.output.splitlines() if x.startswith("warning:")]
    assert len(lines) == 1 and "Reddi et al. 2021" in lines[0] and "10^-2.5 and 10^0" in lines[0]
    assert "server_lr=0.01" in lines[0]


def test_ids_without_a_server_optimizer_stay_as_they_were():
    cfg = build_config("default", None, {"rounds": "5"})
    assert method_label(cfg) == "fedavg"
    # pinned before this change (main 364c5ef): run_id of the default preset at 5 rounds
    assert run_id(cfg) == "fedavg-synthetic-s0-c299cb3dca8a"
    momentum = build_config("default", None, {"server_momentum": "0.9", "server_lr": "0.5"})
    assert run_id(momentum).startswith("fedavg+momentum-synthetic-s0-")
    assert method_label({"method": "fedprox"}) == "fedprox"  # old run.json: no server fields
