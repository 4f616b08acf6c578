"""Tables on substitute data (issue 26: N, K, xi and SFL vs PFL where CIFAR/CINIC are not here):
the paper's datasets still reached by the same table, the substitute labelled in its file name,
header, title and the report, and its cells at the table's protocol."""

from fedbench.tables import TABLES, Selection, TableResult, cell_config, render_paper_table
from fedbench.tables.render import substitute_line, table_file_name
from fedbench.tables.report import _file_header


def test_the_paper_datasets_and_the_substitute_are_one_table():
    for name in ("devices", "sampled", "imbalance", "sfl"):
        spec = TABLES[name]
        assert spec.substitute("fmnist"), name
        assert all(spec.substitute(ds) is None for ds in spec.datasets if ds != "fmnist"), name
        assert {"cifar10"} <= set(spec.datasets) and "fmnist" in spec.datasets


def test_a_substitute_is_labelled_in_file_name_header_and_title():
    for name in ("devices", "sfl"):
        sub = TableResult(TABLES[name], Selection(dataset="fmnist"), "minmax", [])
        own = TableResult(TABLES[name], Selection(dataset="cifar10"), "minmax", [])
        assert table_file_name(sub) == f"{name}_fmnist_substitute"
        assert table_file_name(own) == f"{name}_cifar10"
        line = substitute_line(sub)
        assert line.startswith("substitute: fmnist, not the paper's data: ")
        assert substitute_line(own) is None
        text = render_paper_table(sub, "md", ["made by: x", line])
        assert "(SUBSTITUTE: fmnist, not the paper's data)" in text.splitlines()[2]
        assert _file_header(text.splitlines())["substitute"] == line.removeprefix("substitute: ")


def test_the_substitutes_keep_their_tables_protocol():
    # FedLGA Figs. 8-10 on FMNIST: the MLP at Table VI's setting, the paper's grids
    for name, field, grid in (
        ("devices", "num_clients", (30, 50, 100)),
        ("sampled", "clients_per_round", (5, 10, 25)),
        ("imbalance", "xi", (1.0, 2.0, 3.0)),
    ):
        cells = [c for c in TABLES[name].cells("fmnist") if c.kind == "runs"]
        cfgs = [cell_config(c, 0) for c in cells]
        assert {getattr(cfg, field) for cfg in cfgs} == set(grid)
        assert {(cfg.model, cfg.hidden, cfg.rounds, cfg.local_epochs) for cfg in cfgs} == {
            ("mlp", 400, 200, 5)
        }
        assert {cfg.tau_max for cfg in cfgs} == {4} and {cfg.rho for cfg in cfgs} == {0.5}
    imb = [cell_config(c, 0) for c in TABLES["imbalance"].cells("fmnist") if c.kind == "runs"]
    assert {(cfg.partition, cfg.classes_per_client) for cfg in imb} == {("imbalance", 3)}
    # SFL vs PFL on FMNIST: its C, local-step grid and 10 clients a round, a 784-200-10 MLP,
    # 2000 rounds at C = 1 and 1000 at C = 2 (each past its knee), evaluated every 4 (the paper's
    # spacing), lrs its own (table sfl-fmnist-lr); the grid stays at 250 rounds
    from fedbench.papers.sfl_paper import SFL_LR

    cells = [c for c in TABLES["sfl"].cells("fmnist") if c.kind == "runs"]
    cfgs = [(c, cell_config(c, 1234)) for c in cells]
    assert len(cells) == 12 and {(cfg.model, cfg.hidden) for _, cfg in cfgs} == {("mlp", 200)}
    assert {cfg.local_steps for _, cfg in cfgs} == {5, 20, 50}
    assert {cfg.classes_per_client for _, cfg in cfgs} == {1, 2}
    assert {
        (cfg.partition, cfg.clients_per_round, cfg.classes_per_client, cfg.rounds)
        for _, cfg in cfgs
    } == {("exdir", 10, 1, 2000), ("exdir", 10, 2, 1000)}
    assert {(cfg.eval_every, cfg.batch_size) for _, cfg in cfgs} == {(4, 20)}
    grid = [c for c in TABLES["sfl-fmnist-lr"].cells("fmnist") if c.kind == "runs"]
    grid = [cell_config(c, 100) for c in grid]
    assert {cfg.rounds for cfg in grid} == {250}
    lrs = {(cfg.method, cfg.classes_per_client, cfg.local_steps): cfg.lr for _, cfg in cfgs}
    for (m, c, k), lr in lrs.items():
        assert lr == SFL_LR[("fmnist", "mlp", m, c)][(5, 20, 50).index(k)]
    # the cells show CIFAR-10 VGG-9's Table 3 numbers beside ours
    assert {(c.paper.dataset, c.paper.setting.split(",")[0]) for c, _ in cfgs} == {
        ("cifar10", "model=vgg9")
    }


def test_the_sfl_substitutes_lrs_come_from_its_own_grid_on_a_held_out_seed():
    from fedbench.papers.sfl_paper import SFL_SEEDS

    spec = TABLES["sfl-fmnist-lr"]
    cells = [c for c in spec.cells("fmnist") if c.kind == "runs"]
    cfgs = [cell_config(c, s) for c in cells for s in spec.seeds]
    assert len(cells) == 60 and not set(spec.seeds) & set(SFL_SEEDS)
    assert {cfg.lr for cfg in cfgs} == {0.003, 0.01, 0.03, 0.1, 0.3}  # the authors' grid
    assert {(cfg.rounds, cfg.model, cfg.hidden, cfg.eval_every) for cfg in cfgs} == {
        (250, "mlp", 200, 4)
    }
    assert {(cfg.method, cfg.grad_clip) for cfg in cfgs} == {("pfl", 10.0), ("sfl", 50.0)}
    best = [c for c in spec.cells("fmnist") if c.kind == "derived"]
    assert len(best) == 12 and best[0].derived.fn(0.5, 0.7, 0.7, 0.6, None) == 0.01


def test_the_sfl_knee_check_tells_a_climbing_curve_from_a_flat_one():
    import importlib.util
    from pathlib import Path

    import pandas as pd

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "sfl_knee.py"
    spec = importlib.util.spec_from_file_location("sfl_knee", path)
    knee = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(knee)
    climbing = pd.Series([i / 100 for i in range(60)])  # 1 point an evaluation
    last, before, best = knee.window_means(climbing)
    assert (last, before, best) == (47.0, 22.0, 47.0) and last - before > knee.CLIMB
    flat = pd.Series([0.5] * 25 + [0.8] * 50 + [float("nan")] * 3)  # evaluations only
    assert knee.window_means(flat) == (80.0, 80.0, 80.0)
