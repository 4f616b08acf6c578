"""Torch device and dtype resolution, and the seeded random streams of a run."""

from __future__ import annotations

import hashlib

import torch

from fedbench.errors import FedbenchError


def check_device(name: str) -> None:
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
    if dev.type == "cuda":
        return torch.cuda.get_device_name(dev)
    import platform

    return f"cpu ({platform.processor() or platform.machine()}, {torch.get_num_threads()} threads)"


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
