"""What benchmarks/hostile.py and its cases share: the sandbox's environment, the runner of the
real command line in it, the tiny configs the sandbox is made of, and the sandbox's runs. The
imports go one way: hostile.py -> hostile_cases.py -> hostile_damage.py -> hostile_env.py
(tests/test_imports.py checks benchmarks/ has no import circle)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TINY = ["--set", "rounds=2", "--set", "N=6", "--set", "K=3", "--set", "local_steps=2",
        "--set", "eval_train=false", "--threads", "1"]  # fmt: skip
CHECKPOINTED = ["--set", "rounds=150", "--set", "N=6", "--set", "K=3",
                "--set", "local_steps=2", "--set", "eval_train=false", "--threads", "1",
                "--checkpoint-rounds", "1"]  # fmt: skip
ALLOWED = ("res", "new", "store", "out", "cache", "ck", "tab")  # where a case may write
# a paper table on the sandbox's tiny setting: its 9 runs are in tab/ and the store's group s
TABLE = ["stragglers", "--dataset", "synthetic-1-1", "--preset", "default", "--seeds", "0",
         *TINY[:-2]]  # fmt: skip


def fedbench(sb: Path, *args, env=None, timeout=300) -> tuple[int, str]:
    """`python -m fedbench ARGS` in sb/cwd; (exit code, stdout and stderr together)."""
    cmd = [sys.executable, "-m", "fedbench", *[str(a) for a in args]]
    p = subprocess.run(cmd, cwd=sb / "cwd", env=environment(sb, env), timeout=timeout,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)  # fmt: skip
    return p.returncode, p.stdout


def environment(sb: Path, extra=None) -> dict:
    """The sandbox's environment: one thread, no downloads, its own store, home and cache."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
           "FEDBENCH_NO_DOWNLOAD": "1", "FEDBENCH_STORE": str(sb / "store"),
           "XDG_CACHE_HOME": str(sb / "cache"), "HOME": str(sb / "home"),
           "PYTHONPATH": os.pathsep.join([str(ROOT),
                                         os.environ.get("PYTHONPATH", "")])}  # fmt: skip
    env.pop("FEDBENCH_PLUGINS", None)
    env.pop("FEDBENCH_DATA", None)
    env.update(extra or {})
    return env


def runs(sb: Path, folder="new") -> list[Path]:
    """The run folders of sb/folder."""
    return sorted(p for p in (sb / folder).iterdir() if p.is_dir() and p.name[0] != ".")


def run_args(sb: Path) -> list[str]:
    """--run flags naming every run of sb/new."""
    return [x for p in runs(sb) for x in ("--run", p.name)]
