"""What each engine round path costs: one run's FedAvg rounds forced through every path its model
allows (methods.base.ROUND_PATHS), alternating path by path round after round from the same
global model; prints the median s/round of each and its ratio to the fastest. The paths compute
the same numbers (tests/test_fastpath.py, tests/test_mlp_window*.py); "stepwise" is what a
method whose local step is not declared linear (Method.linear_step) gets on every model.

    python benchmarks/round_paths.py                          # the default run (Synthetic logreg)
    python benchmarks/round_paths.py --preset fedlga-fmnist   # the FMNIST MLP (data needed)

One torch thread (fedbench's policy for these models); the load average is printed with it.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import torch

import fedbench.papers  # noqa: F401 -- a script is an entry point: it loads the catalogs
from fedbench.assembly import build_config
from fedbench.methods.base import ROUND_PATHS, LinearStep
from fedbench.training import fastpath
from fedbench.training.engine import Engine


def open_paths(eng: Engine) -> list[str]:
    """The paths this run's model and config can take for plain SGD (FedAvg)."""
    w = eng.w.expand(2, -1).clone()
    out = ["compiled"] if fastpath.eligible(eng, LinearStep(), w) else []
    if eng.model.step_window > 1 and not eng.model.buffer_dim:
        out.append("window")
    return out + ["fused", "stepwise"]


def timed_round(eng: Engine, path: str, r: int, state: torch.Tensor) -> float:
    eng.w = state.clone()
    eng.round_path = lambda step, w, buf: path  # forced: every path gives the same numbers
    t0 = time.perf_counter()
    eng.run_round(r)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="default")
    ap.add_argument("--rounds", type=int, default=5, help="timed rounds per path")
    args = ap.parse_args()
    torch.set_num_threads(1)
    eng = Engine(build_config(args.preset, None, {"device": "cpu"}))
    eng.run_round(1)  # warm: compile caches, first allocations
    state = eng.w.clone()
    paths = open_paths(eng)
    assert set(paths) <= set(ROUND_PATHS)
    times: dict[str, list[float]] = {p: [] for p in paths}
    for r in range(2, 2 + args.rounds):
        for p in paths:
            times[p].append(timed_round(eng, p, r, state))
    print(f"{args.preset}: load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    best = min(statistics.median(t) for t in times.values())
    for p, t in times.items():
        med = statistics.median(t)
        print(f"  {p:9s} {med:.3f} s/round  ({med / best:.1f}x the fastest)")


if __name__ == "__main__":
    main()
