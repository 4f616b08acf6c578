"""benchmarks/gpu_check.py, step 1: every model family trains 2 rounds on the device, and its first
round matches a CPU run of the same config (references in benchmarks/gpu_reference/, made with
`python benchmarks/gpu_check.py --write-references`); each layout the family can use is checked
the same way and timed.

What is compared: the global model's update after round 1, Δ = w1 - w0, at COORDS fixed
coordinates (‖Δ_dev - Δ_cpu‖ / ‖Δ_cpu‖) and as its norm, the round's local training loss, and
the test loss after it, each relative to the CPU's, in two precisions:

- float64, within F64_TOL (1e-8): the same function computed, whatever the summation order
  (layouts agree to ~1e-14 on the CPU); any indexing, device or layout bug fails it;
- float32, the engine's precision, within max(UPDATE_TOL, 3 x the CPU's own spread): the
  largest difference between the family's layouts on the CPU (float32_spread in the reference).
  A round's update is that sensitive to summation order where a BatchNorm follows a conv (its
  backward subtracts near-equal sums): ResNet-20's layouts differ by ~3e-2 on the CPU in
  float32 and by 1e-14 in float64. Losses within LOSS_TOL (1e-3).
"""

from __future__ import annotations

import dataclasses
import json
import math
import time
import traceback
from pathlib import Path

import engine_speed  # benchmarks/engine_speed.py: random data shaped like a model's dataset
import torch

from fedbench.assembly import build_config
from fedbench.devices import generator, synchronize
from fedbench.models.layouts import LAYOUTS
from fedbench.training.engine import Engine

REFERENCES = Path(__file__).resolve().parent / "gpu_reference"
F64_TOL = 1e-8
UPDATE_TOL = 1e-3
LOSS_TOL = 1e-3
COORDS = 512
DTYPES = ("float64", "float32")

# tiny first rounds: 4 devices, 2 local steps of 8 samples, plain SGD
COMMON = dict(
    num_clients=4,
    clients_per_round=4,
    local_steps=2,
    batch_size=8,
    hetero="none",
    lr=0.05,
    method="fedavg",
    rounds=3,
)
MNIST = dict(dataset="mnist", partition="iid")
FAMILIES: dict[str, dict] = {
    "logreg": dict(MNIST, model="logreg"),
    "mlp": dict(MNIST, model="mlp"),
    "cnn": dict(MNIST, model="cnn"),
    "resnet20": dict(model="resnet20"),  # random CIFAR-shaped data (engine_speed.random_data)
    "vgg9": dict(model="vgg9"),
    "charlstm": dict(model="charlstm"),  # random character ids
}
RANDOM_PER_CLIENT = 64

# layouts a family may run in (models/layouts.py): BatchNorm nets and LSTMs stay NCHW
NCHW = ("grouped", "loop")
FAMILY_LAYOUTS = {"resnet-bn": NCHW, "lstm": NCHW}


def config(family: str, device: str, dtype: str = "float32"):
    over = {**COMMON, **FAMILIES[family], "device": device, "dtype": dtype}
    return build_config(None, None, over)


def _random_data(model: str, n: int, device: str, dtype: str):
    data = engine_speed.random_data(model, n, RANDOM_PER_CLIENT, device)
    if data.train_x.is_floating_point():
        dt = getattr(torch, dtype)
        data = dataclasses.replace(data, train_x=data.train_x.to(dt), test_x=data.test_x.to(dt))
    return data


def engine(family: str, device: str, cache: dict, dtype: str = "float32") -> Engine:
    """A fresh engine of the family's tiny config; data loaded once per device, kind and dtype."""
    cfg = config(family, device, dtype)
    spec = FAMILIES[family]
    key = (device, spec.get("dataset") or spec["model"], dtype)
    data = cache.get(key)
    if data is None and "dataset" not in spec:
        data = _random_data(spec["model"], cfg.num_clients, device, dtype)
    eng = Engine(cfg, data)
    cache[key] = eng.data
    return eng


def set_layout(eng: Engine, layout: str) -> Engine:
    if layout in LAYOUTS and getattr(eng.model, "family", ""):
        eng.model.layout = LAYOUTS[layout]
    return eng


def coordinates(dim: int) -> torch.Tensor:
    """COORDS fixed coordinates of a [dim] update (the same on every machine)."""
    g = generator(0, "gpu-check-coords", dim)
    return torch.randperm(dim, generator=g)[: min(COORDS, dim)].sort().values


def _short(v: float, dtype: torch.dtype) -> float:
    """v with the digits its precision holds (float32: 9), for a small reference file."""
    return v if dtype == torch.float64 else float(f"{v:.9g}")


def first_round(eng: Engine) -> dict:
    """Round 1's numbers that a reference holds: the update at the fixed coordinates, its norm,
    the local loss and the test loss and accuracy after it."""
    w0 = eng.w.clone()
    rec = eng.run_round(1)
    delta = (eng.w - w0).double().cpu()
    loss, acc = eng.evaluate(eng.data.test_x, eng.data.test_y)
    return {
        "local_loss": rec["local_loss"],
        "test_loss": loss,
        "test_acc": acc,
        "update_norm": float(delta.norm()),
        "update": [_short(v, eng.dtype) for v in delta[coordinates(delta.numel())].tolist()],
    }


def write_references(families: list[str], folder: Path = REFERENCES) -> None:
    """The CPU references, one JSON per family: round 1 in float64 and float32 in the rule's
    layout, and the float32 spread over the family's other layouts."""
    folder.mkdir(parents=True, exist_ok=True)
    cache: dict = {}
    for fam in families:
        eng = engine(fam, "cpu", cache)
        ref = {"family": fam, "config": {**COMMON, **FAMILIES[fam]}, "dim": eng.model.dim}
        ref["layout"] = eng.model.layout_name
        for dtype in DTYPES:
            ref[dtype] = first_round(engine(fam, "cpu", cache, dtype))
        others = layouts_of(eng)[1:]
        errs = [
            compare(first_round(set_layout(engine(fam, "cpu", cache), lay)), ref["float32"])
            for lay in others
        ]
        ref["float32_spread"] = max([e["errors"]["update"] for e in errs], default=0.0)
        ref["torch"] = torch.__version__
        (folder / f"{fam}.json").write_text(json.dumps(ref, separators=(",", ":")) + "\n")
        print(f"{fam}: D={eng.model.dim} float32 spread {ref['float32_spread']:.1e}")


def tolerances(ref: dict) -> dict[str, tuple[float, float]]:
    """dtype -> (update, loss) relative tolerances (module docstring)."""
    f32 = max(UPDATE_TOL, 3 * ref.get("float32_spread", 0.0))
    return {"float64": (F64_TOL, F64_TOL), "float32": (f32, LOSS_TOL)}


def compare(got: dict, ref: dict, update_tol: float = 0.0, loss_tol: float = 0.0) -> dict:
    """Relative errors of got against ref and whether each is within its tolerance."""
    a, b = torch.tensor(got["update"]), torch.tensor(ref["update"])
    errs = {"update": float((a - b).norm() / b.norm().clamp_min(1e-30))}
    errs["update_norm"] = abs(got["update_norm"] - ref["update_norm"]) / ref["update_norm"]
    for k in ("local_loss", "test_loss"):
        errs[k] = abs(got[k] - ref[k]) / max(abs(ref[k]), 1e-30)
    ok = all(math.isfinite(v) for v in errs.values())
    ok = ok and errs["update"] <= update_tol and errs["update_norm"] <= update_tol
    ok = ok and errs["local_loss"] <= loss_tol and errs["test_loss"] <= loss_tol
    return {"ok": bool(ok), "errors": errs, "tolerance": [update_tol, loss_tol]}


def layouts_of(eng: Engine) -> list[str]:
    """The rule's layout on this device first, then every other layout the family may use
    (none but the rule's for models without layouts: logreg, MLP)."""
    chosen = eng.model.layout_name
    family = getattr(eng.model, "family", "")
    if not family:
        return [chosen]
    allowed = FAMILY_LAYOUTS.get(family, tuple(LAYOUTS))
    return [chosen] + [n for n in allowed if n != chosen]


def check_layout(family: str, layout: str, device: str, cache: dict, ref: dict) -> dict:
    """Round 1 in `layout` against the reference in both precisions; then rounds 2 and 3 in
    float32, timed (the faster's seconds)."""
    out: dict = {"family": family, "layout": layout}
    tol = tolerances(ref)
    for dtype in DTYPES:
        eng = set_layout(engine(family, device, cache, dtype), layout)
        out[dtype] = compare(first_round(eng), ref[dtype], *tol[dtype])
    seconds = []
    for r in (2, 3):  # eng: the float32 engine, after round 1
        rec = eng.run_round(r)
        synchronize(eng.device)
        seconds.append(rec["round_seconds"])
    out["finite"] = math.isfinite(rec["local_loss"]) and bool(torch.isfinite(eng.w).all())
    out["ok"] = all(out[d]["ok"] for d in DTYPES) and out["finite"]
    out["round_seconds"] = min(seconds)
    return out


def failed(family: str, e: Exception, **where) -> dict:
    """A row for an exception: its repr, and its traceback's last lines for the log."""
    tb = traceback.format_exc(limit=-6)
    return {"family": family, **where, "ok": False, "error": repr(e), "traceback": tb}


def check_family(family: str, device: str, cache: dict, refs: Path, left) -> list[dict]:
    """Every layout of one family, while time is left (left() -> seconds)."""
    path = refs / f"{family}.json"
    if not path.is_file():
        return [{"family": family, "ok": False, "error": f"no reference {path.name}"}]
    ref = json.loads(path.read_text())
    t0 = time.perf_counter()
    try:
        first = engine(family, device, cache)
    except Exception as e:  # e.g. its data: the other families still run
        return [failed(family, e)]
    rows = []
    for layout in layouts_of(first):
        if left() <= 0:
            rows.append({"family": family, "layout": layout, "skipped": "deadline"})
            continue
        try:
            rows.append(check_layout(family, layout, device, cache, ref))
        except Exception as e:  # one layout's failure is a finding, not the end of the check
            rows.append(failed(family, e, layout=layout))
    rows[0]["seconds"] = time.perf_counter() - t0
    return rows


def line(row: dict) -> str:
    """One row as the log prints it."""
    head = f"{row['family']:<9} {row.get('layout', '-'):<13}"
    if "skipped" in row:
        return f"{head} skipped ({row['skipped']})"
    if "float32" not in row:
        return f"{head} FAIL {row.get('error', '')}"
    e64, e32 = row["float64"]["errors"], row["float32"]["errors"]
    verdict = "ok  " if row["ok"] else "FAIL"
    return (
        f"{head} {verdict} update f64 {e64['update']:.1e} f32 {e32['update']:.1e} "
        f"(tol {row['float32']['tolerance'][0]:.0e}), test loss f32 {e32['test_loss']:.1e}  "
        f"round {row['round_seconds'] * 1e3:8.1f} ms"
    )
