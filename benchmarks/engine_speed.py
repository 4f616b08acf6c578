"""Engine speed: fedbench's batched round against a plain per-client DataLoader loop.

Both implementations train the same round (same devices, same partial work, same mini-batches)
from the same global model, alternating round by round so that this machine's speed drift hits
both alike; we report the median of the per-round ratios. With --methods, each method's engine
round is timed the same way against FedAvg's.

    python benchmarks/engine_speed.py                       # FedLGA-FMNIST round
    python benchmarks/engine_speed.py --preset default      # the default run (Synthetic logreg)
    python benchmarks/engine_speed.py --preset default --no-loop --fast-vs-torch
    python benchmarks/engine_speed.py --threads-compare --no-loop   # 1 vs 2 threads, engine
    python benchmarks/engine_speed.py --rounds 8 --methods fedlga,scaffold,fedsam
    python benchmarks/engine_speed.py --device cuda --threads 0
    python benchmarks/engine_speed.py --model resnet20 --rounds 5
    python benchmarks/engine_speed.py --model vgg9 --rounds 5
    python benchmarks/engine_speed.py --layout        # grouped conv vs vmap, K=10, B=10/20

--model (cnn, resnet20, vgg9, resnet18, charlstm, sentlstm) replaces the preset's data with random
but fixed tensors of the model's input shape (CIFAR 3x32x32, MNIST 1x28x28, 80 or 25 token ids),
since the real datasets may be absent: K=10 devices of 500 samples each, B=10, 5 local steps
(--set local_steps=... to change), plain SGD, float32. The loop side trains one nn.Module per
device (train mode, BatchNorm's running statistics averaged like the parameters).

Threads: the run's thread policy (fedbench.training.threads: 1 thread for small models) unless
--threads N (0: torch's default); the loop side runs at the same count. The engine takes its
compiled fast path where it applies (fedbench.training.fastpath; logreg, quadratic); --torch-path
turns it off, and --fast-vs-torch times the two against each other. The load average is printed
before and after.

For an MLP (the FedLGA-FMNIST model) the comparison ends with its FLOP bound: the round's matrix
work (forward, weight gradients, hidden-layer input gradients of every sample it trains) run as
plain large sgemm products at the same thread count, alternated with the engine and the loop like
the rounds; its ratio to the loop is the most any implementation of the same arithmetic could
print here (--no-bound to skip).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import torch

from fedbench.assembly import build_config
from fedbench.data import FederatedData
from fedbench.devices import generator, synchronize
from fedbench.methods import METHODS
from fedbench.training.engine import Engine
from fedbench.training.reference import client_batches, reference_local
from fedbench.training.threads import configure as configure_threads

State = tuple[torch.Tensor, torch.Tensor]  # global model [D] and buffers [Db] (BatchNorm)


def set_state(eng: Engine, state: State) -> None:
    eng.w, eng.buffers = (t.clone() for t in state)


def engine_round(eng: Engine, r: int, state: State) -> float:
    """Time one full engine round (plan, batched local training, aggregation) from state."""
    set_state(eng, state)
    synchronize(eng.device)
    t0 = time.perf_counter()
    eng.run_round(r)
    synchronize(eng.device)
    return time.perf_counter() - t0


def loop_round(eng: Engine, r: int, state: State) -> float:
    """Time the same round with the per-client DataLoader loop (plan made outside the timer,
    as a loop would get its DataLoaders for free)."""
    set_state(eng, state)
    plan = eng.plan_round(r)
    batches = [client_batches(plan, row) for row in range(plan.k)]
    ctx = eng.context(r, plan, eng.lr_at(r))
    synchronize(eng.device)
    t0 = time.perf_counter()
    finals, buffers = reference_local(eng, plan, ctx.lr, batches=batches)
    p = ctx.weights.to(finals.dtype)
    eng.w, eng.buffers = p @ finals, p @ buffers
    synchronize(eng.device)
    return time.perf_counter() - t0


def warm_state(eng: Engine, rounds: int = 2) -> State:
    for r in range(1, rounds + 1):
        eng.run_round(r)
    return eng.w.clone(), eng.buffers.clone()


def mlp_round_flops(eng: Engine, r: int) -> float:
    """FLOPs of the matrix work of round r's local training (an MLP, sizes d0 -> ... -> dL):
    per sample 2 d_i d_(i+1) each for the forward and the weight gradient of every layer, and
    for the input gradient of every layer but the first."""
    sizes = eng.model.sizes
    per_layer = [2 * a * b for a, b in zip(sizes, sizes[1:])]
    per_sample = 2 * sum(per_layer) + sum(per_layer[1:])
    samples = float((eng.plan_round(r).batch_weight > 0).sum())
    return samples * per_sample


def bound_round(flops: float, d0: int, d1: int):
    """A 'round' of [1600, d0] x [d0, d1] float32 products adding up to flops: the arithmetic
    alone, at this machine's sgemm rate, timed like the rounds it bounds."""
    a, b = torch.randn(1600, d0), torch.randn(d0, d1)
    n = max(1, round(flops / (2 * 1600 * d0 * d1)))

    def run(r):
        t0 = time.perf_counter()
        for _ in range(n):
            a @ b
        return time.perf_counter() - t0

    return run


def load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def at_threads(n: int, fn):
    """fn run at n torch threads (the thread count restored after)."""

    def run(r):
        before = torch.get_num_threads()
        torch.set_num_threads(n)
        try:
            return fn(r)
        finally:
            torch.set_num_threads(before)

    return run


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


# input shape, classes, integer vocabulary (None: float images) of --model's random data
RANDOM_DATA = {
    "cnn": ((1, 28, 28), 10, None),
    "resnet20": ((3, 32, 32), 10, None),
    "vgg9": ((3, 32, 32), 10, None),
    "resnet18": ((3, 32, 32), 10, None),
    "charlstm": ((80,), 80, 80),
    "sentlstm": ((25,), 2, 10000),
}


def random_data(model: str, num_clients: int, per_client: int = 500) -> FederatedData:
    """Random data shaped like the model's dataset, split into equal devices."""
    shape, classes, vocab = RANDOM_DATA[model]
    g = generator(0, "bench-data")
    n = num_clients * per_client
    if vocab is None:
        x = torch.randn(n, *shape, generator=g)
    else:
        x = torch.randint(0, vocab, (n, *shape), generator=g)
    y = torch.randint(0, classes, (n,), generator=g)
    idx = list(torch.arange(n).view(num_clients, per_client))
    info = {"description": f"random {model} data"} | ({"vocab_size": vocab} if vocab else {})
    return FederatedData(x, y, x[:1000], y[:1000], idx, classes, info)


def layout_speed(reps: int) -> None:
    """One loss_and_grad (forward + backward) of K=10 conv nets: grouped convolutions vs
    vmap(functional_call), and K separate nn.Modules for scale; the three alternate rep by rep
    (--rounds reps; this machine is shared) and we print the medians."""
    from fedbench.models import BatchedResNet20, BatchedVGG9

    print(f"{'model':<16} {'B':>3} {'grouped':>9} {'vmap':>9} {'K modules':>10}  vmap/grouped")
    for model in (BatchedResNet20(), BatchedVGG9()):
        for bsz in (10, 20):
            med = _layout_times(model, 10, bsz, reps)
            print(
                f"{type(model).__name__:<16} {bsz:>3} {med['grouped']:8.3f}s {med['vmap']:8.3f}s "
                f"{med['modules']:9.3f}s  {med['vmap'] / med['grouped']:.2f}x"
            )


def _layout_times(model, k: int, bsz: int, reps: int) -> dict[str, float]:
    """Median seconds of one forward + backward of k models on batches of bsz, three ways."""
    w = torch.stack([model.init(generator(0, "init", i)) for i in range(k)])
    buf = model.init_buffers().expand(k, -1).clone() if model.buffer_dim else None
    kw = {"buffers": buf} if model.buffer_dim else {}
    nets = [model.to_module(w[i]).train() for i in range(k)]
    x = torch.randn(k, bsz, 3, 32, 32, generator=generator(0, "layout-data"))
    y = torch.randint(0, 10, (k, bsz), generator=generator(0, "layout-labels"))
    wt = torch.full((k, bsz), 1.0 / bsz)

    def grouped():
        model.loss_and_grad(w, x, y, wt, **kw)

    def vmapped():
        leaves = [p.detach().requires_grad_(True) for p in model.unflatten(w)]
        logits = model.forward_vmap(leaves, x, buf)
        loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), y.flatten())
        torch.autograd.grad(loss * k, leaves)

    def modules():
        for i, net in enumerate(nets):
            loss = torch.nn.functional.cross_entropy(net(x[i]), y[i])
            torch.autograd.grad(loss, list(net.parameters()))

    fns = {"grouped": grouped, "vmap": vmapped, "modules": modules}
    times: dict[str, list[float]] = {name: [] for name in fns}
    for fn in fns.values():
        fn()  # warm-up
    for _ in range(reps):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    return {name: statistics.median(ts) for name, ts in times.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--preset", default="fedlga-fmnist")
    ap.add_argument("--rounds", type=int, default=6, help="timed rounds (--layout: reps)")
    ap.add_argument("--threads", type=int, help="torch threads (0: torch's; default: policy)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--methods", default="", help="also time these methods against fedavg")
    ap.add_argument("--no-loop", action="store_true", help="skip the per-client loop comparison")
    ap.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--model", choices=sorted(RANDOM_DATA), help="this model on random data")
    ap.add_argument("--layout", action="store_true", help="grouped conv vs vmap, then exit")
    ap.add_argument("--torch-path", action="store_true", help="engine without its fast path")
    ap.add_argument("--fast-vs-torch", action="store_true", help="fast path vs torch path")
    ap.add_argument("--threads-compare", action="store_true", help="engine at 1 vs 2 threads")
    ap.add_argument("--no-bound", action="store_true", help="skip an MLP round's FLOP bound")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    elif args.threads is None:
        configure_threads()  # the engine applies the policy for its model
    if args.layout:
        layout_speed(args.rounds)
        return
    overrides = dict(s.split("=", 1) for s in args.sets)
    data = None
    if args.model:
        base = dict(model=args.model, num_clients=10, clients_per_round=10, batch_size=10)
        base["local_steps"] = 5
        base.update({"hetero": "none", "lr": 0.01, "dtype": "float32"})
        overrides = {**base, **overrides}
    overrides.update(device=args.device, method="fedavg")
    cfg = build_config(args.preset, None, overrides)
    if args.model:
        data = random_data(args.model, cfg.num_clients)
    eng = Engine(cfg, data)
    eng.fastpath = eng.fastpath and not args.torch_path
    label = f"random {args.model} data" if args.model else args.preset
    work = f"steps={cfg.local_steps}" if cfg.local_steps else f"E={cfg.local_epochs}"
    print(
        f"# {label}: N={cfg.num_clients} K={cfg.clients_per_round} {work} "
        f"B={cfg.batch_size} model={cfg.model} D={eng.model.dim} hetero={cfg.hetero} "
        f"device={eng.device} threads={torch.get_num_threads()} fastpath={eng.fastpath}"
    )
    print(f"# {load()}")
    state = warm_state(eng)
    print(f"{'comparison':<44} {'engine':>10}  {'other':>10}")
    if not args.no_loop:
        compare(
            "fedavg: batched engine vs per-client loop",
            lambda r: engine_round(eng, 100 + r, state),
            lambda r: loop_round(eng, 100 + r, state),
            args.rounds,
        )
        if cfg.model == "mlp" and not args.no_bound:  # "mlp" always has a hidden layer
            flops = statistics.median(mlp_round_flops(eng, 100 + r) for r in range(args.rounds))
            bound = bound_round(flops, *eng.model.sizes[:2])
            print(f"# FLOP bound: the round's {flops / 1e9:.1f} GFLOP as [1600, d0] x [d0, d1]")
            compare(
                "FLOP bound vs engine",
                bound,
                lambda r: engine_round(eng, 100 + r, state),
                args.rounds,
            )
            compare(
                "FLOP bound vs per-client loop",
                bound,
                lambda r: loop_round(eng, 100 + r, state),
                args.rounds,
            )
            print(
                "# (the ratio just above: the most any implementation of this arithmetic can print)"
            )
    if args.fast_vs_torch:
        slow = Engine(cfg, eng.data)
        slow.fastpath = False
        compare(
            "fedavg: fast path vs torch path (engine)",
            lambda r: engine_round(eng, 100 + r, state),
            lambda r: engine_round(slow, 100 + r, state),
            args.rounds,
        )
    if args.threads_compare:
        compare(
            "engine round: 1 thread vs 2 threads",
            at_threads(1, lambda r: engine_round(eng, 100 + r, state)),
            at_threads(2, lambda r: engine_round(eng, 100 + r, state)),
            args.rounds,
        )
    for name in filter(None, args.methods.split(",")):
        if name not in METHODS:
            print(f"{name}: not available in this build, skipped")
            continue
        other = Engine(build_config(args.preset, None, {**overrides, "method": name}), eng.data)
        compare(
            f"{name} vs fedavg (engine round)",
            lambda r: engine_round(eng, 100 + r, state),
            lambda r, o=other: engine_round(o, 100 + r, state),
            args.rounds,
        )


if __name__ == "__main__":
    main()
    print(f"# {load()}")
