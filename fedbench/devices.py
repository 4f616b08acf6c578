"""Torch device and dtype resolution, and the seeded random streams of a run."""

from __future__ import annotations

import hashlib

from fedbench.errors import FedbenchError
from fedbench.lazy import torch  # checking a config's device names needs no torch


def check_device(name: str) -> None:
    if name in ("auto", "cpu"):  # always valid: no torch needed to say so
        return
    try:
        dev = torch.device(name)
    except RuntimeError:
        raise FedbenchError(f"unknown device {name!r}; use auto, cpu, cuda or cuda:N") from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise FedbenchError(f"device {name} asked for but CUDA is not available; use device=cpu")
    if dev.type == "mps" and not torch.backends.mps.is_available():
        raise FedbenchError("device mps asked for but MPS is not available; use device=cpu")


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    check_device(name)
    return torch.device(name)


def device_name(dev: torch.device) -> str:
    """The device as run.json records it. On CPU: the model and the instruction set torch's
    kernels use (float32 sums round differently under AVX2 and AVX-512, so two machines of one
    architecture can differ in the last bits, and over 200 rounds in the second decimal), and
    the thread count."""
    if dev.type == "cuda":
        return torch.cuda.get_device_name(dev)
    import platform

    parts = [_cpu_model() or platform.processor() or platform.machine(), platform.machine()]
    try:
        parts.append(torch.backends.cpu.get_cpu_capability())
    except AttributeError:  # older torch
        pass
    parts = list(dict.fromkeys(p for p in parts if p))  # drop repeats and blanks, keep order
    return f"cpu ({', '.join(parts)}, {torch.get_num_threads()} threads)"


def _cpu_model() -> str | None:
    """The CPU's model name (Linux: /proc/cpuinfo), or None."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip() or None
    except OSError:
        pass
    return None


def stream_seed(seed: int, *keys: object) -> int:
    """A 63-bit seed for one named random stream, e.g. ("select", round).

    Streams are independent of each other, so two methods run with the same seed see the
    same clients, the same slow devices and the same mini-batches.
    """
    text = "/".join(str(k) for k in (seed, *keys)).encode()
    return int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "little") >> 1


def generator(seed: int, *keys: object) -> torch.Generator:
    return torch.Generator().manual_seed(stream_seed(seed, *keys))


def synchronize(dev: torch.device) -> None:
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)
