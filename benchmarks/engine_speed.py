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
    python benchmarks/engine_speed.py --model cnn --set batch_size=64 --threads 1 --rounds 10
    python benchmarks/engine_speed.py --model resnet20 --threads 1 --rounds 8
    python benchmarks/engine_speed.py --model vgg9 --threads 1 --rounds 8
    python benchmarks/engine_speed.py --layouts --model cnn --threads 1   # one step per layout

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

--cpu-time times everything in the process's CPU seconds (time.process_time) instead of wall
seconds: on a machine shared with other jobs a round's wall time is mostly waiting for a core,
which CPU time leaves out (it keeps what a busy cache costs). Use it for ratios on such a machine.

For an MLP (the FedLGA-FMNIST model) the comparison ends with its FLOP bound: the round's matrix
work (forward, weight gradients, hidden-layer input gradients of every sample it trains) run as
plain large sgemm products at the same thread count, alternated with the engine and the loop like
the rounds; its ratio to the loop is the most any implementation of the same arithmetic could
print here (--no-bound to skip). A conv net or LSTM (--model) ends the same way with its round's
convolutions and matrix products at their real shapes (benchmarks/flop_bound.py): the engine, the
loop and the bound alternate, and engine/bound and loop/bound are printed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import flop_bound  # benchmarks/flop_bound.py (this script's folder is on sys.path)
import torch

import fedbench.papers  # noqa: F401 -- a script is an entry point: it loads the catalogs
from fedbench.assembly import build_config
from fedbench.data import FederatedData
from fedbench.devices import generator, resolve_device, synchronize
from fedbench.errors import FedbenchError
from fedbench.methods import METHODS
from fedbench.models import build_model
from fedbench.models.layouts import LAYOUTS, choose_layout
from fedbench.models.net import NetModel
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
    t0 = flop_bound.CLOCK()
    eng.run_round(r)
    synchronize(eng.device)
    return flop_bound.CLOCK() - t0


def loop_round(eng: Engine, r: int, state: State) -> float:
    """Time the same round with the per-client DataLoader loop (plan made outside the timer,
    as a loop would get its DataLoaders for free)."""
    set_state(eng, state)
    plan = eng.plan_round(r)
    batches = [client_batches(plan, row) for row in range(plan.k)]
    ctx = eng.context(r, plan, eng.lr_at(r))
    synchronize(eng.device)
    t0 = flop_bound.CLOCK()
    finals, buffers = reference_local(eng, plan, ctx.lr, batches=batches)
    p = ctx.weights.to(finals.dtype)
    eng.w, eng.buffers = p @ finals, p @ buffers
    synchronize(eng.device)
    return flop_bound.CLOCK() - t0


def warm_state(eng: Engine, rounds: int = 2) -> State:
    """The state after `rounds` rounds, with every device's window Gram computed (a run's
    steady state: training/window_gram.py fills each device's the first time it trains)."""
    grams = eng.device_grams()
    if grams is not None:
        grams.fill_all()
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


def bound_round(flops: float, d0: int, d1: int, device: torch.device | str = "cpu"):
    """A 'round' of [1600, d0] x [d0, d1] float32 products adding up to flops: the arithmetic
    alone, at this machine's sgemm rate, timed like the rounds it bounds."""
    a, b = torch.randn(1600, d0, device=device), torch.randn(d0, d1, device=device)
    n = max(1, round(flops / (2 * 1600 * d0 * d1)))

    def run(r):
        synchronize(device)
        t0 = flop_bound.CLOCK()
        for _ in range(n):
            a @ b
        synchronize(device)
        return flop_bound.CLOCK() - t0

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


def alternate(fns: dict, rounds: int) -> dict[str, list[float]]:
    """Seconds of each fn(r) for r in range(rounds); the order rotates round by round, so the
    machine's drift hits all alike."""
    names = list(fns)
    times: dict[str, list[float]] = {n: [] for n in names}
    for r in range(rounds):
        shift = r % len(names)
        for n in names[shift:] + names[:shift]:
            times[n].append(fns[n](r))
    return times


def _ratio_line(label: str, num: list[float], den: list[float]) -> None:
    ratios = [a / b for a, b in zip(num, den)]
    print(
        f"{label:<44} {statistics.median(ratios):6.2f}x  (per-round "
        f"{min(ratios):.2f}-{max(ratios):.2f}, {len(ratios)} rounds)"
    )


def report_bound(t: dict[str, list[float]]) -> None:
    """The engine, the loop (unless --no-loop) and the FLOP bound, alternated: medians and
    per-round ratios."""
    med = {n: statistics.median(ts) for n, ts in t.items()}
    names = ", ".join(n.replace("bound", "FLOP bound") for n in t)
    secs = "  ".join(f"{m:8.3f} s" for m in med.values())
    print(f"{'s/round (medians): ' + names:<44} {secs}")
    if "loop" in t:
        _ratio_line("speed, engine vs loop (loop s / engine s)", t["loop"], t["engine"])
    _ratio_line("engine / FLOP bound (s / s)", t["engine"], t["bound"])
    if "loop" in t:
        _ratio_line("loop / FLOP bound (s / s)", t["loop"], t["bound"])


def round_bound(eng: Engine, rounds: int):
    """run(r) -> seconds of the round's FLOP bound (an MLP's sgemm products, a conv net's or
    LSTM's layer calls: flop_bound.py), or None for models without one."""
    if eng.cfg.model == "mlp":  # "mlp" always has a hidden layer
        flops = statistics.median(mlp_round_flops(eng, 100 + r) for r in range(rounds))
        print(f"# FLOP bound: the round's {flops / 1e9:.1f} GFLOP as [1600, d0] x [d0, d1]")
        return bound_round(flops, *eng.model.sizes[:2], device=eng.device)
    if not isinstance(eng.model, NetModel):
        return None
    plan = eng.plan_round(100)
    samples = statistics.median(real_samples(eng, 100 + r) for r in range(rounds))
    b = eng.cfg.batch_size
    x = eng.data.train_transform(eng.data.train_x[:b].unsqueeze(0))[0]
    module = eng.model.to_module(eng.w)
    run, steps, flops = flop_bound.bound_round(module, x, plan.k, samples)
    seconds = min(run(0) for _ in range(2))
    print(
        f"# FLOP bound: the round's {flops / 1e9:.1f} GFLOP of convolutions and matrix products, "
        f"{steps} steps of K={plan.k} x B={b}, each layer one call at its real shape "
        f"(benchmarks/flop_bound.py); {flops / seconds / 1e9:.0f} GFLOP/s here"
    )
    return run


def real_samples(eng: Engine, r: int) -> float:
    return float((eng.plan_round(r).batch_weight > 0).sum())


# input shape, classes, integer vocabulary (None: float images) of --model's random data
RANDOM_DATA = {
    "cnn": ((1, 28, 28), 10, None),
    "resnet20": ((3, 32, 32), 10, None),
    "vgg9": ((3, 32, 32), 10, None),
    "resnet18": ((3, 32, 32), 10, None),
    "charlstm": ((80,), 80, 80),
    "sentlstm": ((25,), 2, 10000),
}


def random_data(
    model: str, num_clients: int, per_client: int = 500, device: torch.device | str = "cpu"
) -> FederatedData:
    """Random data shaped like the model's dataset, split into equal devices, on `device` like a
    loaded dataset (the plan's batch indices live there too); the device index lists stay CPU."""
    shape, classes, vocab = RANDOM_DATA[model]
    g = generator(0, "bench-data")
    n = num_clients * per_client
    if vocab is None:
        x = torch.randn(n, *shape, generator=g)
    else:
        x = torch.randint(0, vocab, (n, *shape), generator=g)
    y = torch.randint(0, classes, (n,), generator=g)
    x, y = x.to(device), y.to(device)
    idx = list(torch.arange(n).view(num_clients, per_client))
    info = {"description": f"random {model} data"} | ({"vocab_size": vocab} if vocab else {})
    return FederatedData(x, y, x[:1000], y[:1000], idx, classes, info)


def layout_speed(
    models: list[str], k: int, bsz: int | None, reps: int, device: torch.device | str = "cpu"
) -> None:
    """One SGD step (sgd_step: forward, backward, update) of k devices in every layout of
    fedbench/models/layouts.py, by vmap(functional_call), and by k separate nn.Modules (the
    per-client loop's arithmetic); all alternate rep by rep (this machine is shared) and we print
    the medians of wall and CPU seconds (CPU seconds follow the work, not the load, at 1 thread),
    each over the modules' and the layout the rule picks at this thread count."""
    threads = torch.get_num_threads()
    print(f"# one step of k={k} devices on {device}, threads={threads}, {reps} reps, {load()}")
    head = f"{'model':<10} {'B':>3} {'how':<14} {'wall ms':>9} {'cpu ms':>9}"
    print(f"{head}  modules/this (wall, cpu)")
    for name in models:
        b = bsz or (64 if name == "cnn" else 10)
        med, family = _layout_times(name, k, b, reps, device)
        chosen = choose_layout(family, device, threads).name
        ref = med["modules"]
        for how, (wall, cpu) in sorted(med.items(), key=lambda kv: kv[1][1]):
            mark = "  <- rule" if how == chosen else ""
            print(
                f"{name:<10} {b:>3} {how:<14} {wall * 1e3:9.1f} {cpu * 1e3:9.1f}  "
                f"{ref[0] / wall:5.2f}x {ref[1] / cpu:5.2f}x{mark}"
            )


LAYOUT_MODELS = ("charlstm", "cnn", "resnet18", "resnet20", "vgg9", "sentlstm")


def _step_inputs(name: str, k: int, bsz: int, device: torch.device | str = "cpu"):
    """A model of --model's kind and k devices' (w, x, y, weight) of one random step, on
    `device`."""
    data = random_data(name, k, per_client=bsz, device=device)
    cfg = build_config(None, None, dict(model=name), validate=False)
    model = build_model(cfg, data.input_shape, data.num_classes, data.info)
    w = torch.stack([model.init(generator(0, "init", i)) for i in range(k)]).to(device)
    x = data.train_x.view(k, bsz, *data.train_x.shape[1:])
    y = data.train_y.view(k, bsz)
    return model, w, x, y, torch.full((k, bsz), 1.0 / bsz, device=device)


def _layout_times(name: str, k: int, bsz: int, reps: int, device: torch.device | str = "cpu"):
    """Median (wall, CPU) seconds of one SGD step of k models on batches of bsz, each way, and
    the model's layout family (resnet20 at its default norm=bn: "resnet-bn")."""
    device = torch.device(device)
    model, w, x, y, wt = _step_inputs(name, k, bsz, device)
    buf = model.init_buffers().to(device).expand(k, -1).clone() if model.buffer_dim else None
    kw = {"buffers": buf} if model.buffer_dim else {}
    nets = [model.to_module(w[i]).train() for i in range(k)]

    lr = 1e-6  # the models barely move over the reps

    def in_layout(lay):
        def step():
            model.layout = lay
            model.sgd_step(w, x, y, wt, lr, **kw)

        return step

    def vmapped():
        model.layout = LAYOUTS["grouped"]
        leaves = [p.detach().requires_grad_(True) for p in model.unflatten(w)]
        logits = model.forward_vmap(leaves, x, buf)
        loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), y.flatten())
        grads = torch.autograd.grad(loss * k, leaves)
        with torch.no_grad():
            for p, g in zip(leaves, grads):
                p.sub_(g, alpha=lr)

    def modules():
        for i, net in enumerate(nets):
            loss = torch.nn.functional.cross_entropy(net(x[i]), y[i])
            params = list(net.parameters())
            grads = torch.autograd.grad(loss, params)
            with torch.no_grad():
                for p, g in zip(params, grads):
                    p.sub_(g, alpha=lr)

    fns = {lay.name: in_layout(lay) for lay in LAYOUTS.values()}
    if not name.endswith("lstm"):  # vmap over nn.LSTM's fused kernel is not supported
        fns["vmap"] = vmapped
    fns["modules"] = modules
    times: dict[str, list[tuple[float, float]]] = {how: [] for how in fns}
    for fn in fns.values():
        fn()  # warm-up
    synchronize(device)
    for _ in range(reps):
        for how, fn in fns.items():
            t0, c0 = time.perf_counter(), time.process_time()
            fn()
            synchronize(device)  # a GPU's queued work counts
            times[how].append((time.perf_counter() - t0, time.process_time() - c0))
    med = {
        how: (statistics.median(t[0] for t in ts), statistics.median(t[1] for t in ts))
        for how, ts in times.items()
    }
    return med, model.family


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
    ap.add_argument("--layouts", action="store_true", help="time one step per layout, then exit")
    ap.add_argument("--k", type=int, default=10, help="--layouts: devices")
    ap.add_argument("--batch", type=int, help="--layouts: batch size (default 64 cnn, 10 others)")
    ap.add_argument("--torch-path", action="store_true", help="engine without its fast path")
    ap.add_argument("--fast-vs-torch", action="store_true", help="fast path vs torch path")
    ap.add_argument("--threads-compare", action="store_true", help="engine at 1 vs 2 threads")
    ap.add_argument("--no-bound", action="store_true", help="skip the round's FLOP bound")
    ap.add_argument("--cpu-time", action="store_true", help="time in CPU seconds (busy machine)")
    args = ap.parse_args()
    if args.cpu_time:  # a CPU-only figure: what the round computed, not how long it waited
        flop_bound.CLOCK = time.process_time
    try:
        device = resolve_device(args.device)  # a missing device: one line, before any work
    except FedbenchError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
    if args.threads:
        torch.set_num_threads(args.threads)
    elif args.threads is None:
        configure_threads()  # the engine applies the policy for its model
    if args.layouts:
        models = [args.model] if args.model else list(LAYOUT_MODELS)
        layout_speed(models, args.k, args.batch, args.rounds, device)
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
        data = random_data(args.model, cfg.num_clients, device=resolve_device(cfg.device))
    eng = Engine(cfg, data)
    eng.fastpath = eng.fastpath and not args.torch_path
    label = f"random {args.model} data" if args.model else args.preset
    work = f"steps={cfg.local_steps}" if cfg.local_steps else f"E={cfg.local_epochs}"
    print(
        f"# {label}: N={cfg.num_clients} K={cfg.clients_per_round} {work} "
        f"B={cfg.batch_size} model={cfg.model} D={eng.model.dim} hetero={cfg.hetero} "
        f"device={eng.device} threads={torch.get_num_threads()} fastpath={eng.fastpath}"
    )
    clock = "CPU seconds of this process" if args.cpu_time else "wall seconds"
    print(f"# {load()}; timed in {clock}")
    state = warm_state(eng)
    print(f"{'comparison':<44} {'engine':>10}  {'other':>10}")
    engine = lambda r: engine_round(eng, 100 + r, state)  # noqa: E731
    loop = lambda r: loop_round(eng, 100 + r, state)  # noqa: E731
    bound = None if args.no_bound else round_bound(eng, args.rounds)
    if bound is not None:  # --no-loop: the engine against its bound alone
        fns = {"engine": engine} if args.no_loop else {"engine": engine, "loop": loop}
        report_bound(alternate({**fns, "bound": bound}, args.rounds))
    elif not args.no_loop:
        compare("fedavg: batched engine vs per-client loop", engine, loop, args.rounds)
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
