"""MLP window: BatchedMLP.sgd_steps (T steps per call, one first-layer update GEMM) against T
calls of BatchedMLP.sgd_step, on the FedLGA-FMNIST shapes (784-400-10, K=10, B=10, lr 0.01).

Paired: each repetition times every variant once, in a fresh random order, from the same
starting weights and on the same batches; we print the median and range of the per-repetition
ratios (per-step time / window time) and the load. Random inputs of the FMNIST shape (the
timing does not depend on the values); all K rows active, as in most of a FedLGA round, or
(--stagger) rows finishing at different steps, some inside a window.

    python benchmarks/mlp_window.py                      # 1 thread, T in 1 4 8 16 32
    python benchmarks/mlp_window.py --steps 192 --reps 9 --windows 8 16
    python benchmarks/mlp_window.py --steps 600 --reps 3 --stagger   # a whole round
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import time

import torch

from fedbench.models.mlp import BatchedMLP


def per_step(model, w, xs, ys, bws, lr, active):
    for t, ka in enumerate(active):
        model.sgd_step(w[:ka], xs[t, :ka], ys[t, :ka], bws[t, :ka], lr)


def windowed(model, w, xs, ys, bws, lr, active, window):
    for s0 in range(0, len(active), window):
        sl, k = slice(s0, s0 + window), active[s0]
        model.sgd_steps(w[:k], xs[sl, :k], ys[sl, :k], bws[sl, :k], active[sl], lr)


def timed(fn, w0) -> float:
    w = w0.clone()
    t0 = time.perf_counter()
    fn(w)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=96, help="local steps per repetition")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--windows", type=int, nargs="+", default=[1, 4, 8, 16, 32])
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument(
        "--stagger",
        action="store_true",
        help="rows run from --steps down to a third of it (as devices finish in a round)",
    )
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    gen = torch.Generator().manual_seed(0)
    model = BatchedMLP([784, 400, 10])
    b, k, lr = 10, args.k, 0.01
    w0 = model.init(gen).expand(k, -1).clone()
    xs = torch.rand(args.steps, k, b, 784, generator=gen)
    ys = torch.randint(0, 10, (args.steps, k, b), generator=gen)
    bws = torch.full((args.steps, k, b), 1.0 / b)
    n_steps = [args.steps] * k
    if args.stagger:
        n_steps = torch.linspace(args.steps, args.steps // 3, k).round().long().tolist()
    active = [sum(n > s for n in n_steps) for s in range(args.steps)]

    variants = {"step": lambda w: per_step(model, w, xs, ys, bws, lr, active)}
    for T in args.windows:
        variants[T] = lambda w, T=T: windowed(model, w, xs, ys, bws, lr, active, T)
    for fn in variants.values():  # warm-up
        timed(fn, w0)
    load_before = os.getloadavg()[0]
    times = {name: [] for name in variants}
    order = list(variants)
    for _ in range(args.reps):
        random.shuffle(order)
        for name in order:
            times[name].append(timed(variants[name], w0))

    load = f"{load_before:.2f} / {os.getloadavg()[0]:.2f}"
    print(f"1-min load before / after: {load}, {args.threads} thread(s)")
    rows = f"rows ending at steps {n_steps}" if args.stagger else "all rows active"
    print(f"{args.steps} steps ({rows}), K={k}, B={b}, 784-400-10, {args.reps} paired repetitions")
    base = times["step"]
    print(f"per-step: median {statistics.median(base) * 1e3 / args.steps:.2f} ms/step")
    for T in args.windows:
        ratios = [a / t for a, t in zip(base, times[T])]
        ms = statistics.median(times[T]) * 1e3 / args.steps
        print(
            f"T={T:3d}: {ms:6.2f} ms/step, per-step/window ratio median "
            f"{statistics.median(ratios):.2f}x (range {min(ratios):.2f}-{max(ratios):.2f})"
        )


if __name__ == "__main__":
    main()
