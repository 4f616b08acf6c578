"""Every bad input stops before any work: exit 2, one line on stderr that says what is wrong
and what to do, and nothing written. Each kind of input goes through the command
line; the number fields and method parameters are walked from their types, not listed by hand."""

import dataclasses
import gzip
import os
import time
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from fedbench.assembly import build_config
from fedbench.cli import cli
from fedbench.config import BOUNDS, FIELD_TYPES, field_kind
from fedbench.config_input import canonical_key
from fedbench.identity import run_id
from fedbench.methods import METHODS

SMALL = {"rounds": 1, "num_clients": 4, "clients_per_round": 2, "local_epochs": 1}


def tiny_for(args: list[str]) -> list[str]:
    """A tiny training's options but the fields args set themselves (a field goes once on a
    command line); if a case were accepted, it would train in a second, not for minutes."""
    named = {canonical_key(a.split("=")[0]) for a in args if "=" in a}
    named |= {a[2:] for a in args if a.startswith("--")}
    keep = [(k, v) for k, v in SMALL.items() if k not in named]
    return ["--threads", "1", "--quiet", *(x for k, v in keep for x in ("--set", f"{k}={v}"))]


TINY = tiny_for([])


def run_cli(args: list[str], cwd: Path):
    """Invoke fedbench in cwd; return (result, files under cwd before, after)."""
    before = sorted(cwd.rglob("*"))
    old = Path.cwd()
    os.chdir(cwd)
    try:
        r = CliRunner().invoke(cli, [str(a) for a in args], obj={})
    finally:
        os.chdir(old)
    return r, before, sorted(cwd.rglob("*"))


def assert_one_line_exit_2(args: list[str], cwd: Path, needle: str, may_write=()) -> str:
    r, before, after = run_cli(args, cwd)
    after = [p for p in after if p.name not in may_write]
    lines = r.stderr.strip().splitlines()
    assert r.exit_code == 2, (r.exit_code, r.output)
    assert len(lines) == 1 and lines[0].startswith("Error: "), r.stderr
    assert needle in lines[0], lines[0]
    assert r.stdout == "", r.stdout
    assert after == before, "written: " + ", ".join(str(p) for p in set(after) - set(before))
    return lines[0]


# ---------------------------------------------------------------- every number, from its type


def _number_cases():
    for name in FIELD_TYPES:
        kind, _ = field_kind(name)
        if kind == "float":
            for bad in ("nan", "inf", "-inf"):
                yield [name, bad, f"{name} must be a finite number"]
        if kind in ("int", "float"):
            low = BOUNDS[name].low
            yield [name, str(low - 1), f"{name} must be"]  # below its range
        if kind == "int":
            yield [name, "1.5", f"{name} expects int"]


def test_every_number_field_has_a_range():
    numbers = [f for f in FIELD_TYPES if field_kind(f)[0] in ("int", "float")]
    assert numbers and not [f for f in numbers if f not in BOUNDS]


@pytest.mark.parametrize("name,value,needle", list(_number_cases()))
def test_bad_number_field(name, value, needle, tmp_path):
    args = ["train", *tiny_for([f"{name}=1"]), "--set", f"{name}={value}"]
    assert_one_line_exit_2(args, tmp_path, needle)


def _param_cases():
    for method, cls in METHODS.items():
        for f in dataclasses.fields(cls.Params):
            if isinstance(f.default, float):
                for bad in ("nan", "inf"):
                    yield [method, f.name, bad]


@pytest.mark.parametrize("method,param,value", list(_param_cases()))
def test_non_finite_method_parameter(method, param, value, tmp_path):
    args = ["train", *TINY, "--method", method, "--set", f"{param}={value}"]
    assert_one_line_exit_2(args, tmp_path, f"parameter {param} must be a finite number")


# ---------------------------------------------------------------- command-line inputs

CLI_CASES = {
    # numbers and options
    "lr=inf": (["--set", "lr=inf"], "lr must be a finite number, got inf"),
    "weight_decay=nan": (["--set", "weight_decay=nan"], "weight_decay must be a finite number"),
    "mu=nan": (["--method", "fedprox", "--set", "mu=nan"], "mu must be a finite number"),
    "syn_alpha=nan": (["--set", "syn_alpha=nan"], "syn_alpha must be a finite number"),
    "quad_b_scale=-1": (["--set", "quad_b_scale=-1"], "quad_b_scale must be > 0"),
    "momentum=1": (["--set", "momentum=1"], "momentum must be in [0, 1)"),
    "threads 0": (["--threads", "0"], "Invalid value for '--threads'"),
    "threads -2": (["--threads", "-2"], "Invalid value for '--threads'"),
    "rounds abc": (["--rounds", "abc"], "Invalid value for '--rounds'"),
    "no such option": (["--nosuch"], "No such option '--nosuch'"),
    "seed 2**32": (["--seed", str(2**32)], "seed must be in [0, 4294967295]"),
    "seed huge": (["--seed", "9" * 30], "seed must be in [0, 4294967295]"),
    "seed -1": (["--seed", "-1"], "seed must be in [0, 4294967295]"),
    "bool for an int parameter": (["--method", "fedmax", "--set", "k=true"], "k expects int"),
    "text for a float parameter": (["--method", "fedprox", "--set", "mu=abc"], "mu expects float"),
    "bool field": (["--set", "augment=maybe"], "augment expects bool"),
    "empty number": (["--set", "lr="], "lr expects float"),
    "none for a number": (["--set", "lr=none"], "lr expects float"),
    "data_seed huge": (["--set", f"data_seed={2**64}"], "data_seed must be in [0, 4294967295]"),
    "unknown choice": (["--set", "partition=nosuch"], "unknown partition 'nosuch'; choose one"),
    "unknown method": (["--method", "nosuch"], "unknown method 'nosuch'"),
    # unknown keys
    "unknown key": (["--set", "foo=1"], "unknown key 'foo': not a config field"),
    "unknown method.key": (["--set", "method.foo=1"], "unknown key 'foo'"),
    "param of another method": (["--set", "mu=1"], "unknown parameter 'mu' for method fedavg"),
    "no =": (["--set", "lr"], "--set expects key=value"),
    "empty key": (["--set", "=1"], "--set expects key=value"),
    # a field given twice on one command line
    "alias and name": (
        ["--set", "K=1", "--set", "clients_per_round=2"],
        "clients_per_round is given twice (--set K=1 and --set clients_per_round=2)",
    ),
    "same value twice": (["--set", "lr=0.1", "--set", "lr=0.1"], "lr is given twice"),
    "flag and --set": (["--rounds", "2", "--set", "rounds=abc"], "rounds is given twice"),
    "--seed and --set seed": (["--seed", "1", "--set", "seed=1"], "seed is given twice"),
    "param and method.param": (
        ["--method", "fedprox", "--set", "mu=0.1", "--set", "method.mu=0.2"],
        "mu is given twice",
    ),
    # paths
    "--data-dir missing": (["--data-dir", "{tmp}/nowhere"], "nowhere does not exist; give the"),
    "--data-dir a file": (["--data-dir", "{tmp}/afile"], "afile is a file; give the folder"),
    "data_dir in --set": (["--set", "data_dir={tmp}/nowhere"], "does not exist"),
    "glove missing": (
        ["--set", "dataset=sent140", "--set", "glove={tmp}/no.txt"],
        "glove file {tmp}/no.txt not found",
    ),
    "--results a file": (["--results", "{tmp}/afile"], "afile is a file; give a folder"),
    "--results in a file": (["--results", "{tmp}/afile/r"], "(it is inside {tmp}/afile)"),
    "--config missing": (["--config", "{tmp}/no.toml"], "config file {tmp}/no.toml not found"),
    "--config a folder": (["--config", "{tmp}"], "config file {tmp} is not a file"),
}


@pytest.fixture
def scratch(tmp_path):
    """tmp_path with a plain file `afile` in it."""
    (tmp_path / "afile").write_text("not a folder\n")
    return tmp_path


def _fill(args, tmp: Path) -> list[str]:
    return [a.replace("{tmp}", str(tmp)) for a in args]


@pytest.mark.parametrize("args,needle", list(CLI_CASES.values()), ids=list(CLI_CASES))
def test_bad_train_command_line(args, needle, scratch):
    cmd = ["train", *tiny_for(args), *_fill(args, scratch)]
    assert_one_line_exit_2(cmd, scratch, needle.replace("{tmp}", str(scratch)))


def test_claims_folder_is_a_file(scratch):
    (scratch / "results").mkdir()
    (scratch / "results" / ".claims").write_text("")
    assert_one_line_exit_2(["train", *TINY], scratch, "results/.claims is a file")


# ---------------------------------------------------------------- TOML config files

TOML_CASES = {
    "bool for int": ("rounds = true\n", "rounds expects int (a whole number), got True"),
    "float for int": ("seed = 1.5\n", "seed expects int"),
    "list for float": ("lr = [0.1, 0.2]\n", "lr expects float (a number), got [0.1, 0.2]"),
    "table for float": ("[lr]\nvalue = 0.1\n", "lr expects float"),
    "inline table": ("lr = {value = 0.1}\n", "lr expects float"),
    "number for text": ("dataset = 5\n", "dataset expects str"),
    "nan": ("lr = nan\n", "lr must be a finite number"),
    "method_params not a table": ("method_params = 5\n", "method_params expects a table"),
    "list method param": (
        'method = "fedprox"\n[method_params]\nmu = [1, 2]\n',
        "parameter mu expects one value",
    ),
    "alias and name": ("K = 1\nclients_per_round = 2\n", "clients_per_round is given twice"),
    "param twice": (
        'method = "fedprox"\nmu = 1.0\n[method_params]\nmu = 0.1\n',
        "mu is given twice",
    ),
    "param in [method] too": (
        'mu = 1.0\n[method]\nname = "fedprox"\nmu = 0.1\n',
        "mu is given twice",
    ),
    "unknown key": ("nosuch = 1\n", "unknown key 'nosuch'"),
    "unknown preset": ('preset = "nosuch"\n', "unknown preset 'nosuch'"),
    "not TOML": ("rounds = = 2\n", "is not valid TOML"),
    "binary": (b"\x00\xff\xfe\x81\x92garbage", "is not UTF-8 text"),
    "UTF-16": ("rounds = 2\n".encode("utf-16"), "is not UTF-8 text (binary, or UTF-16?)"),
    "NUL bytes": (b"rounds = 2\x00\n", "is not valid TOML"),
}


@pytest.mark.parametrize("content,needle", list(TOML_CASES.values()), ids=list(TOML_CASES))
def test_bad_config_file(content, needle, tmp_path):
    f = tmp_path / "run.toml"
    f.write_bytes(content if isinstance(content, bytes) else content.encode())
    line = assert_one_line_exit_2(["train", *TINY, "--config", f], tmp_path, needle)
    assert str(f) in line  # the message names the file


def test_a_utf8_bom_is_fine(tmp_path):
    f = tmp_path / "run.toml"
    f.write_bytes("\ufefflr = inf\n".encode())
    assert_one_line_exit_2(["train", *TINY, "--config", f], tmp_path, "lr must be a finite")


# ---------------------------------------------------------------- sweeps

SWEEP_FILE_CASES = {
    "seeds = 5": ("seeds = 5\n", "seeds must be a list of integers, e.g. [0, 1], got 5"),
    "seeds = []": ("seeds = []\n", "seeds must be a list of integers"),
    "float seed": ("seeds = [1.5]\n", "seeds must be a list of integers"),
    "negative seed": ("seeds = [-1]\n", "seed must be in [0, 4294967295]"),
    "methods = []": ("methods = []\n", "methods must be a list of method names"),
    "methods = 5": ("methods = 5\n", "methods must be a list of method names"),
    "preset not text": ("preset = 5\n", "preset must be text"),
    "set not a table": ("set = 5\n", "set must be a table"),
    "empty grid": ("[grid]\nrho = []\n", "grid.rho must be a non-empty list"),
    "empty method grid": (
        'methods = ["fedprox"]\n[grid.fedprox]\nmu = []\n',
        "grid.fedprox.mu must be a non-empty list",
    ),
    "fixed and varied": ("[set]\nrho = 0.1\n[grid]\nrho = [0.2, 0.3]\n", "rho is given twice"),
    "alias in set and grid": ("[set]\nK = 2\n[grid]\nclients_per_round = [3]\n", "given twice"),
    "seeds and set seed": ("seeds = [0]\n[set]\nseed = 1\n", "seed is given twice"),
    "bad value in set": ("[set]\nrounds = true\n", "rounds expects int"),
    "unknown key": ("nosuch = 1\n", "unknown key 'nosuch'"),
    "binary": (b"\xff\xfe\x00\x01", "is not UTF-8 text"),
}


@pytest.mark.parametrize(
    "content,needle", list(SWEEP_FILE_CASES.values()), ids=list(SWEEP_FILE_CASES)
)
def test_bad_sweep_file(content, needle, tmp_path):
    f = tmp_path / "sweep.toml"
    f.write_bytes(content if isinstance(content, bytes) else content.encode())
    assert_one_line_exit_2(["sweep", "--file", f, "--dry-run"], tmp_path, needle)


SWEEP_CASES = {
    "grid without =": (["--grid", "rho"], "--grid expects KEY=V1,V2"),
    "grid without values": (["--grid", "rho="], "--grid expects KEY=V1,V2"),
    "grid: unknown field": (["--grid", "nosuch=1,2"], "unknown field 'nosuch' in --grid"),
    "grid: fedavg has no mu": (["--grid", "mu=1,2"], "unknown field 'mu' in --grid"),
    "unknown method": (["--methods", "fedavg,nosuch"], "unknown method 'nosuch'"),
    "seed not a number": (["--seeds", "0,a"], "--seeds expects a comma-separated list of numbers"),
    "unknown table": (["--table", "nosuch"], "unknown table 'nosuch'; choose one of: runtime, tau"),
    "table and grid": (["--table", "tau", "--grid", "rho=0.1"], "--table chooses the runs itself"),
    "table: no such dataset": (
        ["--table", "tau", "--dataset", "mnist"],
        "table tau has no dataset 'mnist'",
    ),
    "table: no such method": (
        ["--table", "tau", "--methods", "fedavg,pfl"],
        "table tau has no runs of pfl",
    ),
    "no sweep file": (["--file", "/no/such.toml"], "sweep file /no/such.toml not found"),
    "grid and set": (["--grid", "K=1,2", "--set", "K=3"], "clients_per_round is given twice"),
    "seeds and set seed": (["--seeds", "0,1", "--set", "seed=2"], "seed is given twice"),
    "methods and set method": (
        ["--methods", "fedavg", "--set", "method=fedprox"],
        "method is given twice",
    ),
    "dataset and set dataset": (
        ["--dataset", "mnist", "--set", "dataset=fmnist"],
        "dataset is given twice",
    ),
    "negative seed": (["--seeds", "0,-1"], "seed must be in [0, 4294967295]"),
    "unknown key": (["--set", "foo=1"], "unknown key 'foo'"),
    "nan": (["--set", "lr=nan"], "lr must be a finite number"),
    "threads 0": (["--threads", "0"], "Invalid value for '--threads'"),
    "jobs 0": (["--jobs", "0"], "--jobs must be >= 1"),
    "gpus per run nan": (["--gpus-per-run", "nan"], "'nan' is not a finite number"),
    "results a file": (["--results", "{tmp}/afile"], "afile is a file; give a folder"),
    "table: unknown key": (["--table", "tau", "--set", "foo=1"], "unknown key 'foo'"),
    "table: unknown preset": (["--table", "tau", "--preset", "nosuch"], "unknown preset"),
}


@pytest.mark.parametrize("args,needle", list(SWEEP_CASES.values()), ids=list(SWEEP_CASES))
def test_bad_sweep_command_line(args, needle, scratch):
    assert_one_line_exit_2(["sweep", "--dry-run", *_fill(args, scratch)], scratch, needle)


# ---------------------------------------------------------------- table, plot, data stats

READ_CASES = {
    "table: unknown key": (["table", "tau", "--set", "foo=1"], "unknown key 'foo'"),
    "table: unknown preset": (["table", "tau", "--preset", "nosuch"], "unknown preset 'nosuch'"),
    "table: nan": (["table", "tau", "--set", "lr=nan"], "lr must be a finite number"),
    "table: bad type": (["table", "tau", "--set", "rounds=abc"], "rounds expects int"),
    "table: unknown method": (["table", "tau", "--set", "method=nosuch"], "unknown method"),
    "table: field twice": (["table", "tau", "--set", "E=1", "--set", "E=2"], "given twice"),
    "table: negative seed": (["table", "tau", "--seeds", "-1"], "seed must be in"),
    "table: --out a file": (
        ["table", "summary", "--format", "md", "--out", "{tmp}/afile"],
        "afile is a file; give a folder",
    ),
    "table: --results a file": (["table", "summary", "--results", "{tmp}/afile"], "is a file"),
    "plot: unknown key": (["plot", "tau", "--set", "foo=1"], "unknown key 'foo'"),
    "plot: unknown preset": (["plot", "tau", "--preset", "nosuch"], "unknown preset 'nosuch'"),
    "plot: --out a file": (["plot", "tau", "--out", "{tmp}/afile"], "afile is a file"),
    "plot curves: --out in a file": (
        ["plot", "curves", "--out", "{tmp}/afile/curves"],
        "afile is a file",
    ),
    "data stats: unknown key": (["data", "stats", "--set", "foo=1"], "unknown key 'foo'"),
    "data stats: unknown preset": (["data", "stats", "--preset", "nosuch"], "unknown preset"),
    "data stats: unknown dataset": (["data", "stats", "nosuch"], "unknown dataset 'nosuch'"),
    "data stats: nan": (["data", "stats", "--set", "dirichlet_alpha=nan"], "must be a finite"),
    "data stats: dataset twice": (
        ["data", "stats", "mnist", "--set", "dataset=fmnist"],
        "dataset is given twice",
    ),
    "data stats: --data-dir missing": (
        ["data", "stats", "mnist", "--set", "partition=iid", "--data-dir", "{tmp}/nowhere"],
        "does not exist",
    ),
    "check: threads 0": (["check", "--threads", "0"], "Invalid value for '--threads'"),
    "check: nan tolerance": (["check", "--acc-tol", "nan"], "'nan' is not a finite number"),
    "check: negative tolerance": (["check", "--rounds-tol", "-1"], "Invalid value for '--rounds"),
    "table: unknown table": (["table", "nosuch"], "unknown table 'nosuch'; choose one of: runtime"),
    "table: a figure": (
        ["table", "participation"],
        "participation is a figure only; use: fedbench",
    ),
    "plot: a table": (["plot", "data-stats"], "data-stats is a table only"),
    "table: no such dataset": (["table", "tau", "--dataset", "mnist"], "table tau has no dataset"),
    "table: seed not a number": (["table", "tau", "--seeds", "x"], "--seeds expects a comma"),
    "table: no results folder": (
        ["table", "tau", "--results", "/no/such/dir"],
        "results directory /no/such/dir does not",
    ),
    "no such command": (["nosuch"], "No such command 'nosuch'"),
    "no such top-level option": (["--bogus", "table"], "No such option '--bogus'"),
}


@pytest.mark.parametrize("args,needle", list(READ_CASES.values()), ids=list(READ_CASES))
def test_bad_reading_command(args, needle, scratch):
    assert_one_line_exit_2(_fill(args, scratch), scratch, needle)


# ---------------------------------------------------------------- data files


def _write_idx(path: Path, arr: np.ndarray) -> None:
    header = bytes([0, 0, 8, arr.ndim]) + b"".join(int(d).to_bytes(4, "big") for d in arr.shape)
    path.write_bytes(gzip.compress(header + arr.astype(np.uint8).tobytes()))


def mnist_folder(root: Path, n=20, size=28, labels=None, test_size=None) -> Path:
    """A tiny MNIST in IDX files: n training and n test images of size x size."""
    root.mkdir()
    y = np.arange(n) % 10 if labels is None else np.asarray(labels)
    rng = np.random.default_rng(0)
    for split, prefix in (("train", "train"), ("test", "t10k")):
        s = test_size if (split == "test" and test_size) else size
        _write_idx(root / f"{prefix}-images-idx3-ubyte.gz", rng.integers(0, 256, (n, s, s)))
        _write_idx(root / f"{prefix}-labels-idx1-ubyte.gz", y)
    return root


DATA_CASES = {
    "wrong image size": (
        {"size": 27},
        ["--set", "partition=iid", "--set", "N=2"],
        "expected [n,28,28] images",
    ),
    "labels outside the classes": (
        {"labels": [12] + [1] * 19},
        ["--set", "partition=iid", "--set", "N=2"],
        "labels range over 1..12, outside the 10 classes 0..9",
    ),
    "more devices than samples": (
        {},
        ["--set", "partition=iid", "--set", "N=30"],
        "N = 30 devices but mnist's training data has 20 samples",
    ),
    "P above the classes (pclass)": (
        {},
        ["--set", "partition=pclass", "--set", "N=10", "--set", "P=11"],
        "P (classes_per_client) = 11 but the data has 10 classes",
    ),
    "P above the classes (powerlaw)": (
        {},
        ["--set", "partition=powerlaw", "--set", "N=10", "--set", "P=12"],
        "P (classes_per_client) = 12",
    ),
    "P above the classes (imbalance)": (
        {},
        ["--set", "partition=imbalance", "--set", "N=2", "--set", "P=11"],
        "P (classes_per_client) = 11",
    ),
}


@pytest.mark.parametrize("files,args,needle", list(DATA_CASES.values()), ids=list(DATA_CASES))
@pytest.mark.parametrize("command", ["data stats", "train"])
def test_bad_data_files(command, files, args, needle, tmp_path):
    d = mnist_folder(tmp_path / "mnist", **files)
    cmd = ["data", "stats", "mnist"]
    if command == "train":
        cmd = ["train", "--threads", "1", "--quiet", "--rounds", "1", "--set", "K=2"]
        args = [*args, "--set", "dataset=mnist"]
    assert_one_line_exit_2([*cmd, "--data-dir", d, *args], tmp_path, needle)


def test_the_tiny_mnist_itself_is_fine(tmp_path):
    d = mnist_folder(tmp_path / "mnist")
    r, _, _ = run_cli(
        ["data", "stats", "mnist", "--data-dir", d, "--set", "partition=iid", "--set", "N=2"],
        tmp_path,
    )
    assert r.exit_code == 0, r.output


def test_train_and_test_shapes_must_agree(tmp_path):
    d = mnist_folder(tmp_path / "mnist", test_size=27)
    args = ["data", "stats", "mnist", "--data-dir", d, "--set", "partition=iid", "--set", "N=2"]
    assert_one_line_exit_2(args, tmp_path, "expected [n,28,28] images")


# ---------------------------------------------------------------- unexpected errors name the file


def test_unexpected_error_reading_data_names_it(tmp_path, monkeypatch):
    d = mnist_folder(tmp_path / "mnist")

    def broken(path):
        raise ValueError("unexpected layout")

    monkeypatch.setattr("fedbench.data.idx.read_idx", broken)
    args = ["data", "stats", "mnist", "--data-dir", d, "--set", "partition=iid", "--set", "N=2"]
    line = assert_one_line_exit_2(args, tmp_path, "cannot read it (ValueError: unexpected layout)")
    assert f"mnist data in {d}" in line


def test_os_error_on_a_users_file_names_it(tmp_path, monkeypatch):
    def refused(*a, **k):
        raise PermissionError(13, "Permission denied", "/somewhere/run.toml")

    monkeypatch.setattr("fedbench.assembly.read_toml", refused)
    f = tmp_path / "run.toml"
    f.write_text("rounds = 2\n")
    assert_one_line_exit_2(
        ["train", *TINY, "--config", f], tmp_path, "/somewhere/run.toml: Permission denied"
    )


# ---------------------------------------------------------------- claim locks

GARBAGE_LOCKS = ["garbage", "", "5", "[]", "null", '{"pid": "x", "host": 1}', '{"pid": 1e300}']


@pytest.mark.parametrize("content", GARBAGE_LOCKS)
def test_fresh_garbage_claim_is_one_line(content, tmp_path, monkeypatch):
    """A lock file without a claimant in it (being written, or garbage): busy while fresh.
    Fresh for the whole test: under load the command's start took over the 5 s (CI flake)."""
    monkeypatch.setattr("fedbench.results.locks.UNREADABLE_STALE_SECONDS", 3600.0)
    cfg = build_config(None, None, {k: str(v) for k, v in SMALL.items()})
    lock = tmp_path / "results" / ".claims" / f"{run_id(cfg)}.lock"
    lock.parent.mkdir(parents=True)
    lock.write_text(content)
    # trying the claim leaves its flock file (.mutex), nothing else
    assert_one_line_exit_2(["train", *TINY], tmp_path, "holds no claimant", may_write={".mutex"})


@pytest.mark.parametrize("content", GARBAGE_LOCKS[:4] + ['{"pid": 99999999999999, "host": "h"}'])
def test_old_garbage_claim_is_taken_over(content, tmp_path):
    cfg = build_config(None, None, {k: str(v) for k, v in SMALL.items()})
    lock = tmp_path / "results" / ".claims" / f"{run_id(cfg)}.lock"
    lock.parent.mkdir(parents=True)
    lock.write_text(content)
    old = time.time() - 3600
    os.utime(lock, (old, old))
    r, _, _ = run_cli(["train", *TINY], tmp_path)
    assert r.exit_code == 0, r.output
    assert (tmp_path / "results" / run_id(cfg) / "run.json").exists()


# ---------------------------------------------------------------- what is not an error


def test_a_later_layer_overrides_an_earlier_one(tmp_path):
    """Preset, then file, then command line: a field in two layers is no conflict."""
    f = tmp_path / "run.toml"
    f.write_text("K = 3\nlr = 0.5\n")
    cfg = build_config("default", str(f), {"clients_per_round": "4"})
    assert (cfg.clients_per_round, cfg.lr) == (4, 0.5)
    sweep = tmp_path / "sweep.toml"
    sweep.write_text("[set]\nK = 3\nrounds = 1\n")
    r, _, _ = run_cli(
        ["sweep", "--file", sweep, "--set", "clients_per_round=2", "--dry-run"], tmp_path
    )
    assert r.exit_code == 0 and "1 runs" in r.output, r.output


def test_parameters_given_with_a_new_method_are_kept(tmp_path):
    """Switching method drops the old method's parameters, not the ones given with the switch."""
    f = tmp_path / "run.toml"
    f.write_text('method = "fednova"\n[method_params]\nmu = 0.5\n')
    cfg = build_config("fedprox-synthetic-1-1", str(f))
    assert (cfg.method, cfg.method_params) == ("fednova", {"mu": 0.5})
    assert build_config("fedprox-synthetic-1-1", None, {"method": "fedavg"}).method_params == {}
