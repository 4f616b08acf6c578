"""Engine speed: fedbench's batched round against a plain per-client DataLoader loop.

Both implementations train the same round (same devices, same partial work, same mini-batches)
from the same global model, alternating round by round so that this machine's speed drift hits
both alike; we report the median of the per-round ratios. With --methods, each method's engine
round is timed the same way against FedAvg's.

    python benchmarks/engine_speed.py                       # FedLGA-FMNIST round, 2 threads
    python benchmarks/engine_speed.py --rounds 8 --methods fedlga,scaffold,fedsam
    python benchmarks/engine_speed.py --device cuda --threads 0
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from fedbench.config import build_config
from fedbench.devices import synchronize
from fedbench.engine import Engine
from fedbench.methods import METHODS
from fedbench.reference import client_batches, reference_local


def engine_round(eng: Engine, r: int, w0: torch.Tensor) -> float:
    """Time one full engine round (plan, batched local training, aggregation) from w0."""
    eng.w = w0.clone()
    synchronize(eng.device)
    t0 = time.perf_counter()
    eng.run_round(r)
    synchronize(eng.device)
    return time.perf_counter() - t0


def loop_round(eng: Engine, r: int, w0: torch.Tensor) -> float:
    """Time the same round with the per-client DataLoader loop (plan made outside the timer,
    as a loop would get its DataLoaders for free)."""
    eng.w = w0.clone()
    plan = eng.plan_round(r)
    batches = [client_batches(plan, row) for row in range(plan.k)]
    ctx = eng.context(r, plan, eng.lr_at(r))
    synchronize(eng.device)
    t0 = time.perf_counter()
    finals = reference_local(eng, plan, ctx.lr, batches=batches)
    eng.w = ctx.weights.to(finals.dtype) @ finals
    synchronize(eng.device)
    return time.perf_counter() - t0


def warm_state(eng: Engine, rounds: int = 2) -> torch.Tensor:
    for r in range(1, rounds + 1):
        eng.run_round(r)
    return eng.w.clone()


def compare(label: str, fa, fb, rounds: int) -> None:
    """Alternate a and b round by round; print medians and the median per-round ratio b/a."""
    ta, tb, ratios = [], [], []
    for r in range(rounds):
        first_a = r % 2 == 0  # alternate which goes first, too
        if first_a:
            a = fa(r)
            b = fb(r)
        else:
            b = fb(r)
            a = fa(r)
        ta.append(a)
        tb.append(b)
        ratios.append(b / a)
    print(
        f"{label:<44} {statistics.median(ta):8.3f} s  {statistics.median(tb):8.3f} s  "
        f"ratio {statistics.median(ratios):6.2f}x  (per-round ratios "
        f"{min(ratios):.2f}-{max(ratios):.2f}, {rounds} rounds)"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--preset", default="fedlga-fmnist")
    ap.add_argument("--rounds", type=int, default=6, help="timed rounds per comparison")
    ap.add_argument("--threads", type=int, default=2, help="torch threads (0: torch's default)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--methods", default="", help="also time these methods against fedavg")
    ap.add_argument("--no-loop", action="store_true", help="skip the per-client loop comparison")
    ap.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    overrides = dict(s.split("=", 1) for s in args.sets)
    overrides.update(device=args.device, method="fedavg")
    cfg = build_config(args.preset, None, overrides)
    eng = Engine(cfg)
    print(
        f"# {args.preset}: N={cfg.num_clients} K={cfg.clients_per_round} E={cfg.local_epochs} "
        f"B={cfg.batch_size} model={cfg.model} D={eng.model.dim} hetero={cfg.hetero} "
        f"device={eng.device} threads={torch.get_num_threads()}"
    )
    w0 = warm_state(eng)
    print(f"{'comparison':<44} {'engine':>10}  {'other':>10}")
    if not args.no_loop:
        compare(
            "fedavg: batched engine vs per-client loop",
            lambda r: engine_round(eng, 100 + r, w0),
            lambda r: loop_round(eng, 100 + r, w0),
            args.rounds,
        )
    for name in filter(None, args.methods.split(",")):
        if name not in METHODS:
            print(f"{name}: not available in this build, skipped")
            continue
        other = Engine(build_config(args.preset, None, {**overrides, "method": name}), eng.data)
        compare(
            f"{name} vs fedavg (engine round)",
            lambda r: engine_round(eng, 100 + r, w0),
            lambda r, o=other: engine_round(o, 100 + r, w0),
            args.rounds,
        )


if __name__ == "__main__":
    main()
