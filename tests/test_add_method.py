"""A method added to a paper table (fedbench.tables.additions): its rows copy the FedAvg row's
cells with the method replaced, `sweep --add-method` plans only them, `table --add-method`
shows them marked (added) beside the paper's rows, and the claims' verdicts do not change."""

from pathlib import Path

import pytest
from conftest import invoke

from fedbench import plugins
from fedbench.errors import FedbenchError
from fedbench.tables import cell_config, get_table
from fedbench.tables.additions import Addition, add_rows, baseline_row, parse_addition
from fedbench.tables.result import Selection
from fedbench.testing import registries_restored, write_fake_run

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "fedavg_l1" / "fedavg_l1.py"
SMALL = ["--seeds", "0", "--set", "rounds=3"]


@pytest.fixture(autouse=True)
def example_loaded():
    with registries_restored():
        plugins.load([EXAMPLE])
        yield


def test_parse_addition():
    assert parse_addition("fedavg_l1") == Addition("fedavg_l1")
    a = parse_addition("fedavg_l1:lam=0.1")
    assert a.params == (("lam", 0.1),) and a.label == "fedavg_l1 lam=0.1 (added)"
    assert a.text == "fedavg_l1:lam=0.1"
    with pytest.raises(FedbenchError, match="unknown method 'nosuch'"):
        parse_addition("nosuch")
    with pytest.raises(FedbenchError, match="unknown parameter 'mu' for method fedavg_l1"):
        parse_addition("fedavg_l1:mu=1")
    with pytest.raises(FedbenchError, match="lam must be >= 0"):
        parse_addition("fedavg_l1:lam=-1")


@pytest.mark.parametrize(
    "table,dataset,base", [("stragglers", "synthetic-1-1", "FedAvg"), ("tau", "fmnist", "FedAvg")]
)
def test_added_rows_copy_the_fedavg_row(table, dataset, base):
    spec = get_table(table)
    plain = spec.cells(dataset)
    assert baseline_row(plain) == base
    added = add_rows(spec, [Addition("fedavg_l1", (("lam", 0.1),))]).cells(dataset)

    def shape(c):  # a cell without the closures a builder makes anew each time
        over = tuple((k, getattr(v, "__name__", v)) for k, v in c.overrides)
        return (c.row, c.col, c.kind, c.metric, c.preset, over, c.paper, c.x)

    assert [shape(c) for c in added[: len(plain)]] == [shape(c) for c in plain]  # unchanged
    new = added[len(plain) :]
    fedavg = [c for c in plain if c.row == base]
    assert [(c.col, c.kind, c.metric, c.x) for c in new] == [
        (c.col, c.kind, c.metric, c.x) for c in fedavg
    ]
    assert all(c.row == "fedavg_l1 lam=0.1 (added)" and c.paper is None for c in new)
    for a, b in zip(new, fedavg):
        if a.kind != "runs":
            continue
        ca, cb = cell_config(a, 0), cell_config(b, 0)
        assert (ca.method, ca.method_params) == ("fedavg_l1", {"lam": 0.1})
        ca.method, ca.method_params = cb.method, cb.method_params
        assert ca == cb  # every other field as the FedAvg cell's (tau_max = E - 1, ...)


def test_sweep_add_method_plans_only_the_added_rows(tmp_path):
    r = invoke("sweep", "--table", "stragglers", "--dataset", "synthetic-1-1", *SMALL,
               "--add-method", "fedavg_l1", "--results", tmp_path, "--dry-run")  # fmt: skip
    assert r.exit_code == 0, r.output
    lines = [x for x in r.output.splitlines() if x.startswith("  fedavg")]
    assert len(lines) == 3 and all(x.split()[1] == "fedavg_l1" for x in lines), r.output
    assert "stragglers (synthetic-1-1) + fedavg_l1: 3 runs" in r.output
    assert [x.split()[2] for x in lines] == ["0", "0.5", "0.9"]  # the column that varies
    r = invoke("sweep", "--table", "stragglers", "--add-method", "fedavg_l1", "--methods",
               "fedavg", "--results", tmp_path, "--dry-run")  # fmt: skip
    assert r.exit_code == 2 and "leave out --methods" in r.output


def _fill(tmp_path, spec, sel, rows=None):
    from fedbench.sweep import table_configs

    configs, _ = table_configs(spec, sel, rows)
    for cfg in configs:
        write_fake_run(tmp_path, cfg)
    return configs


def test_table_shows_added_rows_and_keeps_the_verdicts(tmp_path):
    spec = get_table("stragglers")
    sel = Selection(
        dataset="synthetic-1-1", seeds=(0,), sets={"rounds": "3"}, results=str(tmp_path)
    )
    _fill(tmp_path, spec, sel)
    args = ["table", "stragglers", "--dataset", "synthetic-1-1", *SMALL, "--results", tmp_path]
    plain = invoke(*args)
    assert plain.exit_code == 0, plain.output
    with_row = invoke(*args, "--add-method", "fedavg_l1")
    assert "fedavg_l1 (added)" in with_row.output and "missing" in with_row.output
    assert f"--plugin {EXAMPLE}" in with_row.output  # the fill command loads the plugin
    assert "--add-method fedavg_l1" in with_row.output
    added = add_rows(spec, [Addition("fedavg_l1")])
    _fill(tmp_path, added, sel, {"fedavg_l1 (added)"})
    with_row = invoke(*args, "--add-method", "fedavg_l1")
    assert with_row.exit_code == 0 and "missing" not in with_row.output, with_row.output

    def claims(text):
        return [x for x in text.splitlines() if x.startswith(("claims:", "  reproduced", "  not"))]

    assert claims(plain.output) and claims(with_row.output) == claims(plain.output)
    out = tmp_path / "tables"
    r = invoke(*args, "--add-method", "fedavg_l1", "--format", "md", "--out", out)
    assert r.exit_code == 0, r.output
    text = (out / "stragglers_synthetic-1-1_plus_fedavg_l1.md").read_text()
    assert "| fedavg_l1 (added)" in text and "--add-method fedavg_l1" in text.splitlines()[0]
    assert not (out / "stragglers_synthetic-1-1.md").exists()  # the paper table's file stays


def test_missing_paper_rows_are_filled_without_add_method(tmp_path):
    r = invoke("table", "stragglers", "--dataset", "synthetic-1-1", *SMALL, "--results",
               tmp_path, "--add-method", "fedavg_l1")  # fmt: skip
    fills = [x.strip() for x in r.output.splitlines() if x.startswith("  fedbench sweep")]
    assert len(fills) == 2 and "--add-method" not in fills[0] and "--add-method" in fills[1]
