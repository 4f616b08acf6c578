"""Hostile inputs over fedbench's surfaces (issue 31): publish, the shipped store, checkpoints,
plugins, the Python API, export and numeric options. Each case runs the real command line in a
fresh copy of a sandbox made by the CLI itself (two `fedbench sweep` runs, a store they were
published into, a run SIGTERMed with its checkpoint), then classifies the outcome:

  good         one short `Error:` line naming the cause and exit 2 (or, where the command may
               go on, exit 0 with the warning the case expects)
  traceback    a Python traceback, or an exit code other than 0/2
  masked       the error does not name what is wrong (the file, option or plugin)
  silent       exit 0 where the input had to be refused, or a skipped thing not said
  misleading   the output says something the case shows untrue
  outside      a file written or deleted outside the results folder, store or --out

    python benchmarks/hostile.py                 # every case; exit 1 if any is bad
    python benchmarks/hostile.py --only publish  # cases whose surface or name holds the text

Cases: benchmarks/hostile_cases.py. Runs one torch thread per process; ~5 min on 2 busy cores.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from hostile_cases import CASES, Case  # noqa: E402
from hostile_env import CHECKPOINTED, TABLE, TINY, environment, fedbench  # noqa: E402

ERROR_CAP = 400  # an error line longer than this is not "one short line"


def prepare(base: Path) -> None:
    """What the cases start from, all written by the CLI: res/ (fedavg and fedprox, seed 0),
    store/g (both published), new/ (the same at seed 1, not published), tab/ (the 9 runs of
    the paper table TABLE, published as store/s), ck/ (a run SIGTERMed after its first
    checkpoints)."""
    for d in ("cwd", "home", "cache", "out"):
        (base / d).mkdir(parents=True)
    rc, out = fedbench(base, "sweep", "--methods", "fedavg,fedprox", "--seeds", "0", *TINY,
                       "--quiet", "--results", base / "res")  # fmt: skip
    assert rc == 0, out
    runs = [
        x for p in sorted((base / "res").iterdir()) if p.name[0] != "." for x in ("--run", p.name)
    ]
    rc, out = fedbench(base, "publish", *runs, "--group", "g", "--results", base / "res",
                       "--store", base / "store")  # fmt: skip
    assert rc == 0, out
    rc, out = fedbench(base, "sweep", "--methods", "fedavg,fedprox", "--seeds", "1", *TINY,
                       "--quiet", "--results", base / "new")  # fmt: skip
    assert rc == 0, out
    shipped_table(base)
    interrupted_run(base)


def shipped_table(base: Path) -> None:
    """tab/: the runs of `fedbench table TABLE`, swept and published as the store's group s."""
    rc, out = fedbench(base, "sweep", "--table", *TABLE, "--threads", "1", "--quiet",
                       "--results", base / "tab", env={"FEDBENCH_STORE": "none"})  # fmt: skip
    assert rc == 0, out
    rc, out = fedbench(base, "publish", "--table", *TABLE, "--group", "s",
                       "--results", base / "tab", "--store", base / "store")  # fmt: skip
    assert rc == 0 and "9 run(s) added" in out, out


def interrupted_run(base: Path) -> None:
    """ck/<run>/checkpoint.pt: a long tiny run stopped by SIGTERM once it has a checkpoint."""
    args = ["train", *CHECKPOINTED, "--results", base / "ck"]
    cmd = [sys.executable, "-m", "fedbench", *[str(a) for a in args]]
    p = subprocess.Popen(cmd, cwd=base / "cwd", env=environment(base),
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    deadline = time.monotonic() + 240
    while not list((base / "ck").glob("*/checkpoint.pt")) and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(0.5)
    p.send_signal(signal.SIGTERM)
    p.wait(timeout=120)
    assert list((base / "ck").glob("*/checkpoint.pt")), "no checkpoint written"


def snapshot(root: Path) -> dict:
    """Every path under root: (kind, size, mtime) -- what a case changed."""
    seen = {}
    for dirpath, dirs, files in os.walk(root):
        for name in dirs + files:
            p = Path(dirpath) / name
            try:
                st = p.lstat()
            except OSError:
                continue
            kind = "l" if p.is_symlink() else "d" if p.is_dir() else "f"
            seen[p] = (kind, st.st_size if kind == "f" else 0, st.st_mtime_ns if kind == "f" else 0)
    return seen


def outside_changes(before: dict, after: dict, sb: Path, allowed: tuple) -> list[str]:
    roots = [sb / a for a in allowed]
    changed = {p for p in before.keys() | after.keys() if before.get(p) != after.get(p)}
    return sorted(str(p) for p in changed if not any(p == r or r in p.parents for r in roots))


def classify(case: Case, rc: int, out: str, sb: Path, outside: list[str]) -> tuple[str, str]:
    """(outcome, why) of one case."""
    if "Traceback" in out or rc not in (0, 2):
        return "traceback", f"exit {rc}: {last_line(out)}"
    if outside:
        return "outside", ", ".join(outside[:3])
    errors = [ln for ln in out.splitlines() if ln.startswith("Error:")]
    if case.expect == "refuse":
        if rc == 0:
            return "silent", f"exit 0: {last_line(out)}"
        if len(errors) != 1 or len(errors[0]) > ERROR_CAP:
            return "masked", f"{len(errors)} error line(s): {last_line(out)}"
    elif rc != 0:
        return "misleading", f"refused where it should go on: {last_line(out)}"
    text = out.replace(str(sb) + "/", "").replace(str(sb), "")
    for needle in case.names:
        if needle.lower() not in (text + out).lower():
            kind = "masked" if case.expect == "refuse" else "silent"
            return kind, f"does not say {needle!r}: {last_line(out)}"
    for needle in case.not_says:
        if needle.lower() in out.lower():
            return "misleading", f"says {needle!r}: {last_line(out)}"
    if case.check is not None:
        problem = case.check(sb, out)
        if problem:
            return problem
    return "good", last_line(out)


def last_line(out: str) -> str:
    lines = [ln for ln in out.strip().splitlines() if ln.strip()]
    return (lines[-1] if lines else "(no output)")[:160]


def run_case(case: Case, base: Path, work: Path) -> tuple[str, str]:
    sb = work / "sb"
    if sb.exists():
        shutil.rmtree(sb)
    shutil.copytree(base, sb, symlinks=True)
    if case.setup is not None:
        case.setup(sb)
    before = snapshot(work)
    try:
        if case.run is not None:
            rc, out = case.run(sb, fedbench)
        else:
            args = [a.format(sb=sb) if isinstance(a, str) else a for a in case.args]
            rc, out = fedbench(sb, *args, env={k: v.format(sb=sb) for k, v in case.env.items()})
    except subprocess.TimeoutExpired:
        return "traceback", "hung (timeout)"
    outside = outside_changes(before, snapshot(work), sb, case.allowed)
    return classify(case, rc, out, sb, outside)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default="", help="cases whose surface or name holds this text")
    ap.add_argument("--keep", type=Path, help="work in this folder and keep it")
    a = ap.parse_args(argv)
    cases = [c for c in CASES if a.only in f"{c.surface} {c.name}"]
    work = a.keep or Path(tempfile.mkdtemp(prefix="fedbench-hostile-"))
    base = work / "base"
    if not base.exists():
        prepare(base)
    bad = 0
    for case in cases:
        outcome, why = run_case(case, base, work / "case")
        bad += outcome != "good"
        print(f"{outcome:10} {case.surface:10} {case.name:44} {why}", flush=True)
    print(f"{len(cases)} hostile cases: {len(cases) - bad} good, {bad} bad")
    if a.keep is None:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
