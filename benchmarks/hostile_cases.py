"""The cases benchmarks/hostile.py runs: each a command line (or a runner) over a sandbox `sb`
holding res/ (two finished runs), store/g (them, published), ck/ (a run stopped by SIGTERM with
its checkpoint), cwd/ (where commands run), out/. `names`: what the output must say (the file,
option or plugin at fault); `not_says`: what it must not (a claim the case shows untrue)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from hostile_damage import (
    RUN_DAMAGE,
    STORE_DAMAGE,
    damage_first_run,
    damage_store,
    dangling,
    empty,
    folder,
    garble,
    link_outside,
    text_json,
    truncate,
)
from hostile_env import ALLOWED, CHECKPOINTED, TABLE, TINY, environment, run_args, runs


@dataclass
class Case:
    surface: str
    name: str
    args: list = field(default_factory=list)
    expect: str = "refuse"  # or "ok": exit 0, saying `names`
    names: tuple = ()
    not_says: tuple = ()
    setup: Callable | None = None
    env: dict = field(default_factory=dict)
    run: Callable | None = None  # (sb, fedbench) -> (rc, output), instead of args
    check: Callable | None = None  # (sb, output) -> None or (outcome, why)
    allowed: tuple = ALLOWED


def publish(*extra, group="h", results="{sb}/new", store="{sb}/store") -> list:
    """publish both runs of new/ (not shipped yet; @all: their --run flags) into a group."""
    return ["publish", "@all", "--group", group, "--results", results, "--store", store,
            *extra]  # fmt: skip


def _expand(args, sb):
    out = []
    for a in args:
        a = a.format(sb=sb) if isinstance(a, str) else a
        out += run_args(sb) if a == "@all" else [a]
    return out


def cli(args, env=None) -> Callable:
    """A runner for args holding @all (the new/ runs as --run flags)."""

    def run(sb, fedbench):
        return fedbench(sb, *_expand(args, sb), env=env)

    return run


def store_intact(group="h", count=2) -> Callable:
    """The group holds `count` runs in both files from one publish, and no temp file is left."""

    def check(sb, out):
        import pyarrow.parquet as pq

        left = [p.name for p in (sb / "store").rglob(".*") if p.name != ".gitkeep"]
        if left:
            return "misleading", f"left in the store: {left}"
        if count == 0:
            return None
        files = [sb / "store" / group / f"{n}.parquet" for n in ("runs", "rounds")]
        if not all(f.is_file() for f in files):
            return "misleading", f"group {group} lacks a file: {out.strip()[-160:]}"
        t = [pq.read_table(f) for f in files]
        ids = [set(x.column("run_id").to_pylist()) for x in t]
        gens = {x.schema.metadata.get(b"fedbench.generation") for x in t}
        if len(ids[0]) != count or ids[0] != ids[1] or len(gens) != 1:
            return "misleading", f"group {group}: {len(ids[0])} runs, generations {len(gens)}"
        return None

    return check


def concurrent_publishers(sb, fedbench):
    """Two publishers of disjoint runs into one group at the same moment: both runs kept."""
    names = [p.name for p in runs(sb)]
    procs = [
        subprocess.Popen([sys.executable, "-m", "fedbench", "publish", "--run", n, "--group", "h",
                          "--results", str(sb / "new"), "--store", str(sb / "store")],
                         cwd=sb / "cwd", env=environment(sb), text=True,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        for n in names
    ]  # fmt: skip
    outs = [p.communicate(timeout=300)[0] for p in procs]
    rc = max(p.returncode for p in procs)
    ok = all("1 run(s) added" in o for o in outs)
    return rc, "\n".join(outs) + ("" if ok else "\nnot both said '1 run(s) added'")


def killed_publish(sig: int) -> Callable:
    """A publish stopped by sig as soon as it holds the lock; then a second publish."""

    def run(sb, fedbench):
        cmd = [sys.executable, "-m", "fedbench", *_expand(publish(), sb)]
        p = subprocess.Popen(cmd, cwd=sb / "cwd", env=environment(sb), text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT)  # fmt: skip
        lock = sb / "store" / ".publish.lock"
        deadline = time.monotonic() + 60
        while not lock.exists() and p.poll() is None and time.monotonic() < deadline:
            time.sleep(0.005)
        p.send_signal(sig)
        first = p.communicate(timeout=120)[0]
        if "Traceback" in first:
            return 1, first
        rc, out = fedbench(sb, *_expand(publish(), sb))
        return rc, out

    return run


PLUGIN_SOURCES = {
    "sys.exit(0)": "import sys\nsys.exit(0)\n",
    "sys.exit('text')": "import sys\nsys.exit('bye')\n",
    "KeyboardInterrupt": "raise KeyboardInterrupt\n",
    "SyntaxError": "def (:\n",
    "ImportError": "import no_such_module_xyz\n",
    "binary garbage": b"\x00\xff\xfe garbage \x00",
    "registers fedavg again": (
        "from fedbench.methods.registry import register_method\n"
        "from fedbench.methods.fedavg import FedAvg\n"
        "register_method('fedavg')(FedAvg)\n"
    ),
}


def plugin_file(source) -> Callable:
    def setup(sb):
        p = sb / "cwd" / "mine.py"
        p.write_bytes(source if isinstance(source, bytes) else source.encode())

    return setup


def plugin_cases() -> list[Case]:
    cases = [
        Case("plugin", f"plugin: {name}", ["methods", "--plugin", "mine.py"],
             names=("mine",), setup=plugin_file(src))
        for name, src in PLUGIN_SOURCES.items()
    ]  # fmt: skip
    cases += [
        Case("plugin", "--plugin ''", ["methods", "--plugin", ""], names=("plugin",)),
        Case("plugin", "--plugin missing file", ["methods", "--plugin", "nope.py"],
             names=("nope.py",)),
        Case("plugin", "--plugin a folder", ["methods", "--plugin", "{sb}/out"], names=("out",)),
        Case("plugin", "--plugin /dev/zero", ["methods", "--plugin", "/dev/zero"],
             names=("/dev/zero",)),
        Case("plugin", "FEDBENCH_PLUGINS garbage", ["methods"], env={"FEDBENCH_PLUGINS": "::,;"},
             names=("FEDBENCH_PLUGINS",)),
    ]  # fmt: skip
    return cases


def checkpoint_case(name, how, *, names=("not resumed", "round 0")) -> Case:
    def setup(sb):
        how(next((sb / "ck").glob("*/checkpoint.pt")))

    args = ["train", *CHECKPOINTED, "--results", "{sb}/ck"]
    return Case("checkpoint", name, args, expect="ok", names=names, setup=setup)


def nan_weights(p: Path):
    """A well-formed, correctly hashed file whose model is not finite."""
    import torch

    from fedbench.training.checkpoint import read_state, sealed

    state = read_state(p)
    state["w"][0] = float("nan")
    torch.save(sealed(state), p)


def checkpoint_cases() -> list[Case]:
    return [
        checkpoint_case("checkpoint truncated", truncate),
        checkpoint_case("checkpoint garbage", garble),
        checkpoint_case("checkpoint empty", empty),
        checkpoint_case("checkpoint a folder", folder, names=("a folder", "round 0")),
        checkpoint_case("checkpoint a link outside", link_outside),
        checkpoint_case("checkpoint dangling link", dangling),
        checkpoint_case("checkpoint NaN weights", nan_weights),
        checkpoint_case("checkpoint intact resumes", lambda p: None, names=("resum",)),
        Case(
            "checkpoint",
            "--checkpoint-rounds -1",
            ["train", "--checkpoint-rounds", "-1"],
            names=("--checkpoint-rounds",),
        ),
        Case(
            "checkpoint",
            "--checkpoint-minutes nan",
            ["train", "--checkpoint-minutes", "nan"],
            names=("--checkpoint-minutes",),
        ),
        Case(
            "checkpoint",
            "--checkpoint-minutes 1e400",
            ["train", "--checkpoint-minutes", "1e400"],
            names=("--checkpoint-minutes",),
        ),  # fmt: skip
        Case(
            "checkpoint",
            "FEDBENCH_CHECKPOINT_ROUNDS=x",
            ["train", *TINY, "--results", "{sb}/res"],
            env={"FEDBENCH_CHECKPOINT_ROUNDS": "x"},
            names=("FEDBENCH_CHECKPOINT_ROUNDS",),
        ),  # fmt: skip
    ]


API = """
import sys, fedbench
from fedbench.errors import FedbenchError
try:
    {call}
except FedbenchError as e:
    print('Error:', e); sys.exit(2)
except TypeError as e:
    if 'unexpected keyword argument' not in str(e):
        raise
    print('Error:', e); sys.exit(2)
print('ok')
"""


def api(call: str) -> Callable:
    def run(sb, fedbench):
        code = API.format(call=call.format(sb=sb))
        p = subprocess.run([sys.executable, "-c", code], cwd=sb / "cwd", env=environment(sb),
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=300)  # fmt: skip
        return p.returncode, p.stdout

    return run


TRAIN = "fedbench.train(results='{sb}/res', threads=1, rounds=2, N=6, K=3, "


def api_cases() -> list[Case]:
    calls = {
        "train unknown field": (TRAIN + "nosuch=1)", ("nosuch",)),
        "train overwrite='no'": (TRAIN + "overwrite='no')", ("overwrite",)),
        "train results=''": ("fedbench.train(results='', rounds=2)", ("results",)),
        "train results=5": ("fedbench.train(results=5, rounds=2)", ("results",)),
        "train preset=''": (TRAIN + "preset='')", ("preset",)),
        "train preset=None ok": None,
        "train lr=nan": (TRAIN + "lr=float('nan'))", ("lr",)),
        "train rounds=-3": (TRAIN.replace("rounds=2", "rounds=-3") + ")", ("rounds",)),
        "train rounds=True": (TRAIN.replace("rounds=2", "rounds=True") + ")", ("rounds",)),
        "train rounds=2.5": (TRAIN.replace("rounds=2", "rounds=2.5") + ")", ("rounds",)),
        "train seed=2**70": (TRAIN + "seed=2**70)", ("seed",)),
        "train config missing file": (TRAIN + "config='nope.toml')", ("nope.toml",)),
        "train config={'bogus':1}": (TRAIN + "config={{'bogus': 1}})", ("bogus",)),
        "train config=5": (TRAIN + "config=5)", ("config",)),
        "train plugins='x.py'": (TRAIN + "plugins='x.py')", ("plugins",)),
        "train threads=-1": (TRAIN.replace("threads=1", "threads=-1") + ")", ("threads",)),
        "load_runs unknown keyword": ("fedbench.load_runs('{sb}/res', nosuch=1)", ("nosuch",)),
        "load_runs results=''": ("fedbench.load_runs('')", ("results",)),
        "load_runs results=None": ("fedbench.load_runs(None)", ("results",)),
        "load_runs missing folder": ("fedbench.load_runs('{sb}/nope', shipped=False)", ("nope",)),
        "load_runs a file": (
            "fedbench.load_runs('{sb}/store/g/runs.parquet', shipped=False)",
            ("runs.parquet",),
        ),
        "load_runs where unknown": ("fedbench.load_runs('{sb}/res', where={{'zz': 1}})", ("zz",)),
        "load_runs on_error bad": ("fedbench.load_runs('{sb}/res', on_error='x')", ("on_error",)),
        "load_runs table unknown": ("fedbench.load_runs('{sb}/res', table='nope')", ("nope",)),
        "load_runs dataset=[]": ("fedbench.load_runs('{sb}/res', dataset=[])", ("dataset",)),
    }
    cases = [Case("api", n, run=api(c[0]), names=c[1]) for n, c in calls.items() if c]
    cases.append(Case("api", "load_runs a damaged run.json warns", run=api(
        "import warnings; warnings.simplefilter('always'); r, _ = fedbench.load_runs("
        "'{sb}/new', shipped=False); assert len(r) == 1, len(r)"), expect="ok",
        names=("run.json",), setup=damage_first_run("run.json", text_json("{"))))  # fmt: skip
    return cases


def publish_cases() -> list[Case]:
    P = "publish"
    c = [
        Case(P, "--run ''", ["publish", "--run", "", "--results", "{sb}/res"], names=("--run",)),
        Case(P, "--run missing", ["publish", "--run", "nope", "--results", "{sb}/res",
             "--store", "{sb}/store"], names=("nope",)),  # fmt: skip
        Case(P, "--run ../store", ["publish", "--run", "../store", "--results", "{sb}/res",
             "--store", "{sb}/store"], names=("../store",)),  # fmt: skip
        Case(P, "--group ''", run=cli(publish(group="")), names=("--group",)),
        Case(P, "--group ../escape", run=cli(publish(group="../escape")), names=("group",)),
        Case(P, "--group a/b", run=cli(publish(group="a/b")), names=("group",)),
        Case(P, "--group .hidden", run=cli(publish(group=".hidden")), names=("group",)),
        Case(P, "--store ''", run=cli(publish(store="")), names=("--store",)),
        Case(P, "--store a file", run=cli(publish(store="{sb}/store/g/runs.parquet")),
             names=("runs.parquet",)),
        Case(P, "--results missing", run=cli(publish(results="{sb}/nope")), names=("nope",)),
        Case(P, "--results a file", run=cli(publish(results="{sb}/store/g/runs.parquet")),
             names=("runs.parquet",)),
        Case(P, "publish ok", run=cli(publish()), expect="ok", names=("2 run(s) added",),
             check=store_intact()),
        Case(P, "two concurrent publishers", run=concurrent_publishers, expect="ok",
             check=store_intact()),
        Case(P, "SIGTERM mid-publish", run=killed_publish(signal.SIGTERM), expect="ok",
             check=store_intact()),
        Case(P, "SIGKILL mid-publish", run=killed_publish(signal.SIGKILL), expect="ok",
             check=store_intact()),
        Case(P, "SIGINT mid-publish", run=killed_publish(signal.SIGINT), expect="ok",
             check=store_intact()),
        Case(P, "stale temp file cleaned", run=cli(publish()), expect="ok",
             setup=lambda sb: (sb / "store" / "g" / ".runs.publish").write_bytes(b"x" * 99),
             check=store_intact()),
        Case(P, ".publish.lock a folder", run=cli(publish()), names=(".publish.lock",),
             setup=lambda sb: (sb / "store" / ".publish.lock").mkdir()),
        Case(P, ".publish.lock of a dead pid", run=cli(publish()), expect="ok",
             setup=lambda sb: (sb / "store" / ".publish.lock").write_text('{"pid": 999999}'),
             check=store_intact()),
        Case(P, ".publish.lock garbage", run=cli(publish()), expect="ok",
             setup=lambda sb: (sb / "store" / ".publish.lock").write_bytes(b"\xff\x00"),
             check=store_intact()),
    ]  # fmt: skip
    for file, how, label in RUN_DAMAGE:
        c.append(Case(P, f"run {file} {label}", run=cli(publish()), names=(file,),
                      setup=damage_first_run(file, how)))  # fmt: skip
        c.append(Case(P, f"run {file} {label}, --on-error skip",
                      run=cli(publish("--on-error", "skip")), expect="ok",
                      names=(file, "1 run(s) added"),
                      setup=damage_first_run(file, how)))  # fmt: skip
    for file, how, label in STORE_DAMAGE:
        c.append(Case(P, f"store g/{file} {label}", run=cli(publish(group="g")),
                      names=(f"g/{file}",), setup=damage_store(file, how)))  # fmt: skip
    return c


UNUSED = ("used here are shipped runs",)  # a damaged group's runs are not used
TABLE_RUNS = ["table", *TABLE, "--results", "{sb}/out/r"]  # the table's runs: only shipped


def store_damage_cases(file, how, label) -> list[Case]:
    """A damaged file of group s (the paper table's 9 runs): the table says it (refusing where
    it needs the group's rounds, going on without the group where its runs.parquet is bad;
    --on-error skip goes on), the table's sweep says it and runs all 9 again."""
    setup = damage_store(file, how, group="s")
    rounds = file == "rounds.parquet"
    sweep = ["sweep", "--table", *TABLE, "--threads", "1", "--dry-run", "--results", "{sb}/out/r"]
    c = [
        Case("store", f"table: s/{file} {label}", TABLE_RUNS, expect="refuse" if rounds else "ok",
             names=(f"s/{file}",), not_says=UNUSED, setup=setup),
        Case("store", f"sweep: s/{file} {label}", sweep, expect="ok",
             names=(f"s/{file}", "0 already done, 9 to run"), not_says=UNUSED, setup=setup),
    ]  # fmt: skip
    if rounds:
        c.append(Case("store", f"table --on-error skip: s/{file} {label}",
                      [*TABLE_RUNS, "--on-error", "skip"], expect="ok", names=(f"s/{file}",),
                      not_says=UNUSED, setup=setup))  # fmt: skip
    return c


def store_cases() -> list[Case]:
    """Commands that read the store beside the results folder (a paper table over its runs,
    the table's sweep) say a damaged group's file once and do not use its runs."""
    c = [x for damage in STORE_DAMAGE for x in store_damage_cases(*damage)]
    c += [
        Case("store", "store intact: table uses its runs", TABLE_RUNS, expect="ok",
             names=("9 run(s) used here are shipped runs",)),
        Case("store", "FEDBENCH_STORE a file", TABLE_RUNS,
             env={"FEDBENCH_STORE": "{sb}/store/g/runs.parquet"}, names=("FEDBENCH_STORE",)),
        Case("store", "FEDBENCH_STORE missing", ["table", *TABLE, "--results", "{sb}/res"],
             env={"FEDBENCH_STORE": "{sb}/nope"}, expect="ok", not_says=UNUSED),
        Case("store", "store group a file", TABLE_RUNS, expect="ok",
             names=("9 run(s) used here are shipped runs",),
             setup=lambda sb: (sb / "store" / "junk").write_text("x")),
        Case("store", "calibration fit garbled", ["table", "tau", "--dataset", "fmnist",
             "--calibrated", "--results", "{sb}/out/r"], names=("calibration/tau-fmnist.json",),
             setup=lambda sb: (sb / "store" / "calibration").mkdir() or
             (sb / "store" / "calibration" / "tau-fmnist.json").write_text("{")),
    ]  # fmt: skip
    return c


def export_cases() -> list[Case]:
    E = "export"
    res = ["--results", "{sb}/new"]
    c = [
        Case(E, "--out ''", ["export", *res, "--out", ""], names=("--out",)),
        Case(E, "--out a file", ["export", *res, "--out", "{sb}/store/g/runs.parquet"],
             names=("runs.parquet",)),
        Case(E, "--out/runs.parquet a folder", ["export", *res, "--out", "{sb}/out"],
             names=("runs.parquet",), setup=lambda sb: (sb / "out" / "runs.parquet").mkdir()),
        Case(E, "--out under a file", ["export", *res, "--out", "{sb}/store/g/runs.parquet/x"],
             names=("runs.parquet",)),
        Case(E, "--results missing", ["export", "--results", "{sb}/nope", "--out", "{sb}/out"],
             names=("nope",)),
        Case(E, "--table unknown", ["export", *res, "--table", "nope", "--out", "{sb}/out"],
             names=("nope",)),
        Case(E, "export ok", ["export", *res, "--out", "{sb}/out"], expect="ok",
             names=("2 runs",)),
    ]  # fmt: skip
    for file, how, label in RUN_DAMAGE:
        c.append(Case(E, f"run {file} {label}", ["export", *res, "--out", "{sb}/out"],
                      names=(file,), setup=damage_first_run(file, how)))  # fmt: skip
    return c


def option_cases() -> list[Case]:
    res = ["--results", "{sb}/out/r"]
    sets = {
        "rounds=-1": "rounds", "rounds=nan": "rounds", "rounds=1e400": "rounds",
        "rounds=99999999999": "rounds", "rounds=": "rounds", "=5": "--set", "lr=nan": "lr",
        "lr=inf": "lr", "lr=-1": "lr", "lr=1e999": "lr", "N=0": "num_clients",
        "K=0": "clients_per_round", "K=100": "clients_per_round", "mu=nan": "mu",
        "seed=-1": "seed", "batch_size=1e12": "batch_size", "local_steps=-5": "local_steps",
        "dtype=float7": "dtype", "server_lr=nan": "server_lr", "nosuch=1": "nosuch",
    }  # fmt: skip
    c = [Case("options", f"train --set {s}", ["train", "--set", s, "--threads", "1", *res],
              names=(n,)) for s, n in sets.items()]  # fmt: skip
    c += [
        Case("options", "--threads 0", ["train", "--threads", "0", *res], names=("--threads",)),
        Case("options", "--threads 10**9", ["train", "--threads", "1000000000", *res],
             names=("--threads",)),
        Case("options", "--rounds nan", ["train", "--rounds", "nan", *res], names=("--rounds",)),
        Case("options", "--preset ''", ["train", "--preset", "", *res], names=("preset",)),
        Case("options", "--method ''", ["train", "--method", "", *res], names=("method",)),
        Case("options", "--results ''", ["train", "--results", ""], names=("--results",)),
        Case("options", "--config empty path", ["train", "--config", "", *res],
             names=("--config",)),
        Case("options", "--config garbled toml", ["train", "--config", "bad.toml", *res],
             names=("bad.toml",), setup=lambda sb: (sb / "cwd" / "bad.toml").write_text("[[[")),
        Case("options", "--config a folder", ["train", "--config", "{sb}/out", *res],
             names=("out",)),
        Case("options", "sweep --seeds ''", ["sweep", "--seeds", "", *res], names=("--seeds",)),
        Case("options", "sweep --seeds -1", ["sweep", "--seeds", "-1", *res],
             names=("--seeds",)),
        Case("options", "sweep --seeds 1e400", ["sweep", "--seeds", "1e400", *res],
             names=("--seeds",)),
        Case("options", "sweep --grid mu=nan", ["sweep", "--methods", "fedprox", "--grid",
             "mu=nan", *res], names=("mu",)),  # fmt: skip
        Case("options", "sweep --jobs -2", ["sweep", "--jobs", "-2", *res], names=("--jobs",)),
    ]  # fmt: skip
    return c


CASES = [
    *publish_cases(),
    *store_cases(),
    *checkpoint_cases(),
    *plugin_cases(),
    *api_cases(),
    *export_cases(),
    *option_cases(),
]
