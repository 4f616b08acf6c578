"""The device check (issue 37, docs/gpu.md "The device check"): one command that proves the engine
on a GPU and then spends what time is left on the campaign's CNN runs there.

    PYTHONUNBUFFERED=1 python3 benchmarks/gpu_check.py --data .gpudata --out "$OUT" --deadline 390

Steps, in order, each while time is left (--deadline: seconds from the start):

1. the environment: Python, torch, CUDA, the card, TF32 (FEDBENCH_TF32), and float32 matrix
   products and convolutions against float64 (TF32 shows as ~1e-3 relative error);
2. every model family's first round against the CPU references in benchmarks/gpu_reference/
   in every layout it can use, 2 more rounds trained and timed (gpu_families.py);
3. engine_speed per family: the engine against the per-client loop and the FLOP bound at the
   card's peak (gpu_peak.py);
4. the campaign's CNN runs until the deadline (gpu_campaign.py), several sharing the GPU.

Written under --out: gpu_check.log (this output and the sweeps'), gpu_check.json (every number,
rewritten after each step) and campaign_runs.tar.gz (the finished run folders, repacked as runs
finish); each replaced whole, so a kill at any moment leaves what had finished. Exit 0 when every
family's check passed, 1 when one failed, 2 on bad input.

--write-references makes the CPU references (here, not on the device): FEDBENCH_DATA must name
MNIST. The script runs under a plain python3 with fedbench's dependencies and no install: the
checkout is put on sys.path.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # fedbench from this checkout, installed or not

import gpu_campaign  # noqa: E402 (benchmarks/, this script's folder)
import gpu_families  # noqa: E402
import gpu_peak  # noqa: E402
import torch  # noqa: E402

from fedbench.devices import apply_tf32, device_name, resolve_device  # noqa: E402
from fedbench.errors import FedbenchError  # noqa: E402

PACK_SECONDS = 5.0  # kept back from the deadline for the last packing


class Report:
    """The log (stdout and gpu_check.log, line by line) and gpu_check.json (whole, atomic)."""

    def __init__(self, out: Path, deadline: float):
        self.out, self.t0, self.deadline = out, time.monotonic(), deadline
        self.logfile = open(out / "gpu_check.log", "a", buffering=1)  # noqa: SIM115
        self.data: dict = {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}

    def left(self) -> float:
        return self.deadline - (time.monotonic() - self.t0) - PACK_SECONDS

    def log(self, text: str) -> None:
        stamped = f"[{time.monotonic() - self.t0:6.1f} s] {text}"
        print(stamped, flush=True)
        self.logfile.write(stamped + "\n")

    def trace(self, row: dict) -> None:
        """A failed row's traceback, into the log file only (the output's tail stays short)."""
        if row.get("traceback"):
            self.logfile.write(row["traceback"])

    def save(self, key: str, value) -> None:
        self.data[key] = value
        self.data["elapsed_s"] = time.monotonic() - self.t0
        part = self.out / "gpu_check.json.part"
        part.write_text(json.dumps(self.data, indent=1, default=str) + "\n")
        os.replace(part, self.out / "gpu_check.json")


def precision_errors(device: torch.device) -> dict:
    """Relative errors of a float32 matrix product and convolution against float64 on device:
    ~1e-6 in full float32, ~1e-3 when TF32 is on."""
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(512, 512, generator=g), torch.randn(512, 512, generator=g)
    x, w = torch.randn(8, 16, 32, 32, generator=g), torch.randn(32, 16, 3, 3, generator=g)
    exact = (a.double() @ b.double(), torch.conv2d(x.double(), w.double()))
    got = (
        (a.to(device) @ b.to(device)).cpu().double(),
        torch.conv2d(x.to(device), w.to(device)).cpu().double(),
    )
    rel = [float((y - e).norm() / e.norm()) for y, e in zip(got, exact)]
    return {"matmul_rel_err": rel[0], "conv_rel_err": rel[1]}


def environment(device: torch.device) -> dict:
    env = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "device": str(device),
        "device_name": device_name(device),
        "tf32": apply_tf32(device),
        "cudnn": torch.backends.cudnn.version() if device.type == "cuda" else None,
        "cpu_threads": torch.get_num_threads(),
    }
    if device.type == "cuda":
        env["capability"] = ".".join(map(str, torch.cuda.get_device_capability(device)))
        env["memory_gib"] = torch.cuda.get_device_properties(device).total_memory / 2**30
    return {**env, **precision_errors(device)}


def check_families(rep: Report, args, device: str) -> list[dict]:
    rows: list[dict] = []
    cache: dict = {}
    refs = Path(args.references)
    for fam in args.families:
        for row in gpu_families.check_family(fam, device, cache, refs, rep.left):
            rows.append(row)
            rep.log(gpu_families.line(row))
            rep.trace(row)
        rep.save("families", rows)
    cache.clear()
    return rows


def measure_speed(rep: Report, args, device: torch.device) -> list[dict]:
    tf32 = rep.data["environment"]["tf32"]
    peaks = {"datasheet": gpu_peak.datasheet_peak(device_name(device), tf32)}
    size = 8192 if device.type == "cuda" else 512
    peaks["measured"] = gpu_peak.measured_peak(device, size)
    rep.log("peak FLOP/s: " + ", ".join(f"{k} {v / 1e12:.1f} T" for k, v in peaks.items() if v))
    rep.save("peaks", peaks)
    rows: list[dict] = []
    for fam in args.families:
        if rep.left() <= 0:
            break
        try:
            row = gpu_peak.family_speed(fam, str(device), args.speed_rounds, peaks, args.speed_set)
        except Exception as e:  # a family's failure is a finding, not the end of the check
            row = gpu_families.failed(fam, e)
        rows.append(row)
        rep.log(gpu_peak.line(row))
        rep.trace(row)
        rep.save("speed", rows)
    return rows


def run_campaign(rep: Report, args, device: torch.device) -> list[dict]:
    if device.type == "cuda":
        torch.cuda.empty_cache()  # the sweeps' processes get the card's memory
    results = Path(args.results or ROOT / "results" / "gpu-check")  # ignored by git
    results.mkdir(parents=True, exist_ok=True)
    opts = {"sets": args.campaign_set, "threads": args.threads}
    if args.phases:
        opts["phases"] = [gpu_campaign.PHASES[int(i)] for i in args.phases.split(",")]

    def left() -> float:  # the last sweep's stop and packing come out of the deadline
        return rep.left() - gpu_campaign.GRACE

    camp = gpu_campaign.Campaign(
        results, rep.out / "campaign_runs.tar.gz", str(device), rep.log, left, opts
    )
    return camp.run(rep.logfile, lambda rows: rep.save("campaign", rows))


def parse(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--data", help="datasets folder (MNIST, FashionMNIST): FEDBENCH_DATA")
    ap.add_argument("--out", help="output folder (gpu_check.log, .json, campaign_runs.tar.gz)")
    ap.add_argument("--deadline", type=float, default=390.0, help="seconds from the start")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--families", default=",".join(gpu_families.FAMILIES))
    ap.add_argument("--references", default=str(gpu_families.REFERENCES))
    ap.add_argument("--write-references", action="store_true", help="make the CPU references")
    ap.add_argument("--speed-rounds", type=int, default=4, help="timed rounds per family")
    ap.add_argument("--speed-set", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--campaign-set", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--phases", help="campaign phases by index (gpu_campaign.PHASES)")
    ap.add_argument("--no-campaign", action="store_true")
    ap.add_argument("--results", help="the campaign's results (default: results/gpu-check)")
    ap.add_argument("--threads", type=int, help="torch CPU threads (default: fedbench's policy)")
    args = ap.parse_args(argv)

    def bad(msg: str):  # one line, exit 2, before any work
        print(f"error: {msg}", file=sys.stderr)
        sys.exit(2)

    args.families = [f for f in args.families.split(",") if f]
    unknown = [f for f in args.families if f not in gpu_families.FAMILIES]
    if unknown:
        bad(f"unknown families {unknown}; choose from {', '.join(gpu_families.FAMILIES)}")
    if not args.write_references and not (args.data and args.out):
        bad("--data and --out are needed (or --write-references)")
    if args.data and not Path(args.data).is_dir():
        bad(f"--data {args.data}: no such folder; run benchmarks/gpu_prepare.sh first")
    if args.phases and not all(
        p.isdigit() and int(p) < len(gpu_campaign.PHASES) for p in args.phases.split(",")
    ):
        bad(f"--phases: indexes below {len(gpu_campaign.PHASES)}, e.g. 0,1")
    args.speed_set = dict(s.split("=", 1) for s in args.speed_set)
    return args


def step(rep: Report, name: str, fn, *args) -> None:
    """fn(rep, *args); its exception logged with its traceback, and the next step runs."""
    try:
        fn(rep, *args)
    except Exception as e:
        rep.log(f"{name}: FAILED {e!r}")
        rep.trace(gpu_families.failed(name, e))
        rep.save(f"{name}_error", repr(e))


def final_table(rep: Report) -> None:
    """The summary the device tool's output tail shows."""
    d = rep.data
    env = d.get("environment", {})
    print(f"\n== {env.get('device_name')} torch {env.get('torch')} tf32={env.get('tf32')}")
    for row in d.get("families", []):
        print(gpu_families.line(row))
    for row in d.get("speed", []):
        print(gpu_peak.line(row))
    for row in d.get("campaign", []):
        print(
            f"{row['table']}/{row['dataset']} seeds {row['seeds']} {row['methods']} "
            f"jobs={row['jobs']}: "
            f"{row['finished']} runs in {row['seconds']:.0f} s, {row['runs_per_hour']:.0f}/h, "
            f"s/round {row['mean_round_seconds'] or float('nan'):.3f}"
        )


def main(argv=None) -> int:
    args = parse(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.data:
        os.environ["FEDBENCH_DATA"] = str(Path(args.data).resolve())
    if args.write_references:
        gpu_families.write_references(args.families, Path(args.references))
        return 0
    try:
        device = resolve_device(args.device)
    except FedbenchError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rep = Report(out, args.deadline)
    rep.log(f"gpu_check: {' '.join(sys.argv[1:])}")
    rep.save("environment", environment(device))
    rep.log(json.dumps(rep.data["environment"]))
    rows = check_families(rep, args, str(device))
    step(rep, "speed", measure_speed, args, device)
    if not args.no_campaign and rep.left() > gpu_campaign.GRACE:
        step(rep, "campaign", run_campaign, args, device)
    ok = bool(rows) and all(r.get("ok") for r in rows if "skipped" not in r)
    rep.save("all_families_ok", ok)
    rep.log(f"done: every family's check {'passed' if ok else 'did NOT pass'}")
    final_table(rep)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
