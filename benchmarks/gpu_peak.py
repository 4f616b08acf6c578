"""benchmarks/gpu_check.py, step 2: engine_speed per family on the device: the batched engine's
round against the per-client loop's (benchmarks/engine_speed.py, alternated round by round), and
both against the round's FLOP bound at the card's peak.

The bound: the round's convolutions and matrix products (benchmarks/flop_bound.py's count: every
real sample's forward, weight and input gradients) over the card's dense float32 rate (TF32's
where FEDBENCH_TF32=1), from the vendor's datasheet (PEAKS) and as measured here by one large
float32 matrix product. Elementwise work is left out, so no implementation reaches it.
"""

from __future__ import annotations

import statistics
import time

import engine_speed  # benchmarks/engine_speed.py
import flop_bound  # benchmarks/flop_bound.py
import torch

from fedbench.assembly import build_config
from fedbench.devices import synchronize
from fedbench.models.net import NetModel
from fedbench.training.engine import Engine

# datasheet dense TFLOP/s (float32 without tensor cores, TF32 tensor cores), by the words in
# torch.cuda.get_device_name; the first match wins (NVL and PCIe parts before the SXM names)
PEAKS = (
    ("H200 NVL", 60.0, 418.0),
    ("H200", 67.0, 494.7),
    ("H100 NVL", 60.0, 418.0),
    ("H100 PCIe", 51.0, 378.0),
    ("H100", 67.0, 494.7),  # H100 SXM ("NVIDIA H100 80GB HBM3")
)

# family -> (preset, overrides, random data?): the paper's setting where one is here (logreg:
# FedProx's Synthetic, MLP: FedLGA-FMNIST, CNN: FedSoftMax-MNIST at all 50 devices), else the
# model on random data at 20 devices of B 32
RANDOM = dict(num_clients=20, clients_per_round=20, batch_size=32, local_steps=5)
SPEED: dict[str, tuple[str, dict, bool]] = {
    "logreg": ("default", {}, False),
    "mlp": ("fedlga-fmnist", {}, False),
    "cnn": ("fedsoftmax-mnist", {}, False),
    "resnet20": ("fedlga-fmnist", dict(RANDOM, model="resnet20"), True),
    "vgg9": ("fedlga-fmnist", dict(RANDOM, model="vgg9"), True),
    "charlstm": ("fedlga-fmnist", dict(RANDOM, model="charlstm"), True),
}


def datasheet_peak(name: str, tf32: bool) -> float | None:
    """FLOP/s of the card `name` at float32 (or TF32), or None for a card not in PEAKS."""
    for words, fp32, tf in PEAKS:
        if words in name:
            return (tf if tf32 else fp32) * 1e12
    return None


def measured_peak(device: torch.device, size: int = 8192, reps: int = 5) -> float:
    """FLOP/s of the best of reps float32 [size, size] matrix products on device."""
    a = torch.randn(size, size, device=device)
    b = torch.randn(size, size, device=device)
    a @ b  # warm-up: handles, kernels
    best = float("inf")
    for _ in range(reps):
        synchronize(device)
        t0 = time.perf_counter()
        a @ b
        synchronize(device)
        best = min(best, time.perf_counter() - t0)
    return 2.0 * size**3 / best


def speed_engine(family: str, device: str, sets: dict | None = None) -> Engine:
    """The family's SPEED setting on device (sets: fields changed, for a dry run)."""
    preset, over, random = SPEED[family]
    base = dict(hetero="none", dtype="float32") if random else {}
    over = {**base, **over, **(sets or {}), "device": device, "method": "fedavg"}
    cfg = build_config(preset, None, over)
    data = None
    if random:
        data = engine_speed.random_data(cfg.model, cfg.num_clients, 500, device)
    return Engine(cfg, data)


def round_flops(eng: Engine, r: int) -> float:
    """FLOPs of round r's convolutions and matrix products (flop_bound.step_flops per sample)."""
    b = eng.cfg.batch_size
    x = eng.data.train_transform(eng.data.train_x[:b].unsqueeze(0))[0]
    if not isinstance(eng.model, NetModel):
        x = x.reshape(b, -1)
    module = eng.model.to_module(eng.w)
    per_sample = flop_bound.step_flops(module, x, 1) / b
    return per_sample * engine_speed.real_samples(eng, r)


def family_speed(family: str, device: str, rounds: int, peaks: dict, sets=None) -> dict:
    """The engine and the loop alternated over `rounds` rounds, and the bound at each peak."""
    eng = speed_engine(family, device, sets)
    state = engine_speed.warm_state(eng)
    fns = {
        "engine": lambda r: engine_speed.engine_round(eng, 100 + r, state),
        "loop": lambda r: engine_speed.loop_round(eng, 100 + r, state),
    }
    t = engine_speed.alternate(fns, rounds)
    flops = statistics.median(round_flops(eng, 100 + r) for r in range(rounds))
    cfg = eng.cfg
    work = f"steps={cfg.local_steps}" if cfg.local_steps else f"E={cfg.local_epochs}"
    row = {
        "family": family,
        "setting": f"{'random data' if SPEED[family][2] else SPEED[family][0]} {cfg.model} "
        f"K={cfg.clients_per_round} {work} B={cfg.batch_size}",
        "layout": eng.model.layout_name,
        "engine_s": statistics.median(t["engine"]),
        "loop_s": statistics.median(t["loop"]),
        "speedup": statistics.median(b / a for a, b in zip(t["engine"], t["loop"])),
        "gflop": flops / 1e9,
        "rounds": rounds,
    }
    for name, rate in peaks.items():
        if rate:
            row[f"bound_s_{name}"] = flops / rate
            row[f"engine_over_bound_{name}"] = row["engine_s"] / (flops / rate)
    return row


def line(row: dict) -> str:
    if "error" in row:
        return f"{row['family']:<9} FAIL {row['error']}"
    bounds = " ".join(
        f"engine/bound({k[18:]}) {v:7.1f}x"
        for k, v in row.items()
        if k.startswith("engine_over_bound_")
    )
    return (
        f"{row['family']:<9} engine {row['engine_s']:8.4f} s  loop {row['loop_s']:8.4f} s  "
        f"loop/engine {row['speedup']:6.1f}x  {row['gflop']:8.1f} GFLOP  {bounds}  "
        f"[{row['setting']}, {row['layout']}]"
    )
