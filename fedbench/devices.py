"""Torch device and dtype resolution, and the seeded random streams of a run."""

from __future__ import annotations

import hashlib
import os

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


# more torch threads than this many per core only oversubscribe (and 10**9 crashes libgomp)
THREADS_PER_CORE = 4


def thread_limit() -> int:
    """The most torch CPU threads a run may ask for on this machine."""
    return THREADS_PER_CORE * (os.cpu_count() or 1)


def thread_count_problem(count: int) -> str | None:
    """What is wrong with a torch thread count (at least 1, at most thread_limit()), or None."""
    if 1 <= count <= thread_limit():
        return None
    cores = os.cpu_count() or 1
    return (
        f"must be between 1 and {thread_limit()} ({THREADS_PER_CORE} x this machine's "
        f"{cores} cores), got {count}"
    )


def check_threads(count: int, option: str = "--threads") -> None:
    problem = thread_count_problem(count)
    if problem:
        raise FedbenchError(f"{option} {problem}")


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    check_device(name)
    return torch.device(name)


TF32_ENV = "FEDBENCH_TF32"


def tf32_requested() -> bool:
    """FEDBENCH_TF32: 1 lets CUDA float32 matrix products and convolutions use TF32 (10-bit
    mantissa inputs: faster on Ampere and later, ~3e-4 relative error per product); unset or 0
    (the default) keeps full float32, so a GPU run stays comparable with a CPU run of its config
    (docs/gpu.md, "TF32")."""
    text = os.environ.get(TF32_ENV, "").strip()
    if text not in ("", "0", "1"):
        raise FedbenchError(f"{TF32_ENV}={text!r}: use 1 (TF32 on CUDA) or 0 (full float32)")
    return text == "1"


def apply_tf32(dev: torch.device) -> bool:
    """Set torch's CUDA float32 precision from FEDBENCH_TF32 (torch's own default lets cuDNN's
    convolutions use TF32 but not cuBLAS's products, which nothing here would say); returns
    whether this run's float32 CUDA work may use TF32, as run.json records it (`tf32`)."""
    on = tf32_requested()
    if dev.type != "cuda":
        return False
    # the flags every torch >= 1.7 has; torch 2.13 keeps them in step with its newer
    # fp32_precision settings, where setting those per operator makes reading these raise
    torch.backends.cuda.matmul.allow_tf32 = on
    torch.backends.cudnn.allow_tf32 = on
    return on


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


def take_rows(t: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    """t[idx] for an integer index tensor over t's first dimension, as index_select: one copy per
    row instead of advanced indexing's element by element (the same numbers; 1.5-4x faster for
    the window's [T, K, B] mini-batches of 784-pixel images)."""
    return t.index_select(0, idx.reshape(-1)).view(*idx.shape, *t.shape[1:])
