"""The command line: a run end to end, tables, plots, and one-line errors for bad input."""

import pytest
from conftest import invoke

FAST = ["--rounds", "2", "--set", "N=6", "--set", "K=3", "--set", "E=2", "--quiet"]


def test_train_table_plot(tmp_path):
    res = tmp_path / "results"
    r = invoke("train", *FAST, "--results", str(res))
    assert r.exit_code == 0, r.output
    assert "best / final test acc" in r.output
    r = invoke("table", "summary", "--results", str(res))
    assert r.exit_code == 0 and "fedavg" in r.output
    out = tmp_path / "tables"
    r = invoke("table", "summary", "--results", str(res), "--format", "md", "--out", str(out))
    assert r.exit_code == 0, r.output
    text = (out / "summary.md").read_text()
    assert "made by: fedbench table summary" in text and "| fedavg" in text
    for fmt, ext in (("csv", "csv"), ("latex", "tex")):
        r = invoke("table", "summary", "--results", str(res), "--format", fmt, "--out", str(out))
        assert r.exit_code == 0 and (out / f"summary.{ext}").exists()
    r = invoke("plot", "curves", "--results", str(res), "--out", str(tmp_path / "c"))
    assert r.exit_code == 0, r.output
    assert (tmp_path / "c.png").stat().st_size > 1000 and (tmp_path / "c.pdf").exists()


def test_config_file_and_presets(tmp_path):
    f = tmp_path / "run.toml"
    f.write_text('method = "fedprox"\nrounds = 1\nN = 6\nK = 2\nE = 1\n[method_params]\nmu = 0.1\n')
    r = invoke("train", "--config", str(f), "--quiet", "--results", str(tmp_path / "r"))
    assert r.exit_code == 0, r.output
    assert "fedprox" in r.output and "0.1" in r.output
    r = invoke("presets")
    assert r.exit_code == 0 and "fedlga-fmnist" in r.output and "fedprox-synthetic" in r.output


@pytest.mark.parametrize(
    "args,needle",
    [
        (["--method", "nosuch"], "unknown method 'nosuch'; choose one of: fedavg"),
        (["--set", "dataset=cifar"], "unknown dataset 'cifar'"),
        (["--set", "rho=1.5"], "rho must be in [0, 1]"),
        (["--set", "K=40"], "clients_per_round (K) = 40 exceeds num_clients (N) = 30"),
        (["--preset", "fedlga-fmnist", "--set", "tau_max=5"], "tau_max must be in [1, E-1]"),
        (["--method", "fedprox", "--set", "mu=-1"], "mu must be >= 0"),
        (["--set", "lr=abc"], "lr expects float"),
        (["--set", "nokey"], "--set expects key=value"),
        (["--preset", "nosuch"], "unknown preset"),
        (["--config", "/no/such.toml"], "config file /no/such.toml not found"),
        (["--set", "device=cuda:0"], "cuda"),
        (["--set", "stop_at_target=true"], "stop_at_target needs target_acc; set target_acc="),
    ],
)
def test_bad_input_one_line_exit_2(args, needle, tmp_path):
    r = invoke("train", *args, "--results", str(tmp_path))
    assert r.exit_code == 2, r.output
    lines = r.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), r.output
    assert needle in lines[0]
    assert not list(tmp_path.iterdir())  # rejected before any work


def test_missing_dataset_exit_2(tmp_path, monkeypatch):
    monkeypatch.setattr("fedbench.data.idx.SYSTEM_DIRS", {"fmnist": [], "mnist": []})
    monkeypatch.chdir(tmp_path)
    (tmp_path / "x").mkdir()  # an empty data folder (a missing one is refused before this)
    r = invoke("train", "--preset", "fedlga-fmnist", "--data-dir", str(tmp_path / "x"))
    assert r.exit_code == 2
    assert r.output.count("\n") == 1 and "fmnist not found" in r.output


def test_corrupt_results_table_exit_2(tmp_path):
    res = tmp_path / "results"
    assert invoke("train", *FAST, "--results", str(res)).exit_code == 0
    (next(res.iterdir()) / "rounds.parquet").write_bytes(b"PAR1garbage")
    r = invoke("table", "summary", "--results", str(res))
    assert r.exit_code == 2 and "corrupt" in r.output and r.output.count("\n") == 1
    r = invoke("table", "summary", "--results", str(res), "--on-error", "skip")
    assert r.exit_code == 2 and "skipped" in r.output  # nothing readable left
