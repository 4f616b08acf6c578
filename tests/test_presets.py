"""The papers' presets: registered, each one valid with its source, independent of each other,
listed by `fedbench presets`, and loading the split it describes where its data are here."""

import pytest
from click.testing import CliRunner

from fedbench.assembly import validate_config
from fedbench.cli import cli
from fedbench.config import MODELS
from fedbench.presets import PRESETS, get_preset

NEEDED = [
    "default",
    "fedprox-synthetic",
    "fedlga-fmnist",
    "fedlga-cifar10",
    "fedlga-cifar100",
    "fedprox-synthetic-iid",
    "fedprox-synthetic-0-0",
    "fedprox-synthetic-0.5-0.5",
    "fedprox-synthetic-1-1",
    "fedprox-mnist",
    "fedprox-femnist",
    "fedprox-shakespeare",
    "fedprox-sent140",
    "sfl-quadratic",
    "sfl-cifar10",
    "sfl-cinic10",
    "fedsoftmax-mnist",
    "fedsoftmax-fmnist",
]


def test_the_papers_presets_are_registered():
    assert set(NEEDED) <= set(PRESETS), set(NEEDED) - set(PRESETS)


@pytest.mark.parametrize("name", list(PRESETS))  # the registry: a new preset is checked too
def test_every_preset_validates(name):
    source, _ = PRESETS[name]
    assert source and ("§" in source or "Table" in source or name == "default")
    cfg = get_preset(name)
    if cfg.model not in MODELS:
        pytest.skip(f"model {cfg.model!r} is not registered on this branch (models helper)")
    validate_config(cfg)


def test_fedlga_fmnist_unchanged():
    cfg = get_preset("fedlga-fmnist")
    assert (cfg.dataset, cfg.partition, cfg.classes_per_client, cfg.model, cfg.hidden) == (
        "fmnist",
        "pclass",
        2,
        "mlp",
        400,
    )
    assert (cfg.num_clients, cfg.clients_per_round, cfg.local_epochs, cfg.batch_size) == (
        50,
        10,
        5,
        10,
    )
    assert (cfg.rho, cfg.tau_max, cfg.target_acc, cfg.aggregation) == (0.5, 4, 0.65, "uniform")


def test_presets_do_not_share_state():
    a = get_preset("fedprox-mnist")
    a.method_params["mu"] = 123.0
    assert get_preset("fedprox-mnist").method_params["mu"] == 1.0


def test_presets_command_lists_all():
    out = CliRunner().invoke(cli, ["presets"], obj={}, terminal_width=250)
    assert out.exit_code == 0
    for name in NEEDED:
        assert name in out.output


def test_data_stats_command():
    r = CliRunner().invoke(
        cli, ["data", "stats", "--preset", "fedprox-synthetic-1-1", "--format", "md"], obj={}
    )
    assert r.exit_code == 0, r.output
    assert "| synthetic |" in r.output and "devices" in r.output and "30" in r.output
    r = CliRunner().invoke(cli, ["data", "stats", "mnist"], obj={})
    assert r.exit_code == 2 and "no natural split" in r.output


@pytest.mark.parametrize(
    "name", ["sfl-quadratic", "fedprox-synthetic-0.5-0.5", "fedsoftmax-mnist", "fedlga-fmnist"]
)
def test_presets_with_local_data_load(name):
    """Presets whose data are here load and give the split they describe."""
    from fedbench.data import load_arrays
    from fedbench.errors import FedbenchError

    cfg = get_preset(name).validate_data()
    try:
        train_x, train_y, _, _, parts, _, info, _ = load_arrays(cfg)
    except FedbenchError as e:
        if "not found" in str(e):
            pytest.skip(f"{cfg.dataset} data absent: {e}")
        raise
    assert len(parts) == cfg.num_clients and info["description"]
    if name == "fedsoftmax-mnist":
        assert float(train_x.max()) == 255.0  # raw pixels, as the authors' code
        assert min(len(p) for p in parts) >= 1000  # 60 shards of 1000 over 50 devices
