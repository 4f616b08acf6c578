"""Freed tensor memory stays in the process (glibc's malloc), so a round's big temporaries do
not page-fault anew each time they are allocated.

torch's CPU allocator takes every tensor from malloc. glibc serves a block above its mmap
threshold (128 KiB, rising to at most 32 MiB as big blocks are freed) with a fresh mmap and
unmaps it at free, and trims the heap's free top above 128 KiB: the next tensor of that size
gets new pages, and the kernel faults and zero-fills each 4 KiB page on first touch. A
full-batch pass over 500 MNIST images a device (MimeLite's server gradient, FedProx's
dissimilarity) allocates [500, 32, 26, 26] activations (43 MB) and their gradients per device,
and so on every round; zero-filling one of them (max_pool2d's backward) ran at 0.8 GB/s.

keep_freed() sets M_MMAP_MAX = 0 (every block from the heap) and M_TRIM_THRESHOLD to 2 GiB (the
freed heap is kept): the same sizes come back from pages already mapped. Not always the very
next time: an aligned request may not fit a freed block of its own size, so the heap grows by a
block now and then before it settles (a round's pattern repeated: faults stop within a few
passes). Measured (1 thread, CPU seconds, 2-core machine at load ~7): the MNIST CNN's engine
round (10 devices, 16 steps of B = 64) 3.24 s -> 2.82 s, its full-batch gradient over 10 x 500
samples 1.90 s -> 1.37 s, minor page faults of the run 1.8 M -> 0.11 M. The numbers are the
same (only where a tensor lives changes). Its cost: the process keeps its peak heap mapped
(resident set at its peak instead of falling back after a pass; +6 % peak there). The engine
calls it for CPU runs; FEDBENCH_KEEP_FREED=0 leaves glibc's defaults (an A/B, or a process that
must return memory)."""

from __future__ import annotations

import ctypes
import os
import sys

M_TRIM_THRESHOLD = -1  # glibc's mallopt parameters (malloc.h)
M_MMAP_MAX = -4
TRIM_THRESHOLD = 2**31 - 1  # mallopt takes a C int: the largest, ~2 GiB

_done: list[bool] = []


def keep_freed() -> bool:
    """Once per process: glibc keeps freed memory for reuse (module docstring). False where
    it does not apply (not glibc, FEDBENCH_KEEP_FREED=0) or mallopt refused."""
    if _done:
        return _done[0]
    ok = False
    if os.environ.get("FEDBENCH_KEEP_FREED", "1") != "0" and sys.platform.startswith("linux"):
        mallopt = getattr(ctypes.CDLL(None), "mallopt", None)
        if mallopt is not None and _is_glibc():
            mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
            ok = bool(mallopt(M_MMAP_MAX, 0)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
    _done.append(ok)
    return ok


def _is_glibc() -> bool:
    """glibc's mallopt (musl's is a stub that ignores its arguments)."""
    try:
        return (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith("glibc")
    except (ValueError, OSError, AttributeError):
        return False
