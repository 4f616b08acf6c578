"""training/memory.py: freed tensor memory is reused without new page faults (counted, not
timed), and a CPU engine turns it on. Each case runs in a fresh interpreter: mallopt is
process-wide."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from fedbench.training import memory

pytestmark = pytest.mark.skipif(
    not (sys.platform.startswith("linux") and memory._is_glibc()), reason="glibc only"
)

# a 64 MiB tensor allocated, written, freed, then allocated and written again: the minor page
# faults of the second one (16,384 pages of 4 KiB when each allocation gets fresh pages)
PROBE = """
import json, resource, sys, torch
from fedbench.training import memory
on = memory.keep_freed() if sys.argv[1] == "keep" else False
t = torch.empty(16 * 2**20).fill_(1.0)
del t
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
t = torch.empty(16 * 2**20).fill_(2.0)
print(json.dumps({"on": on, "faults": resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before}))
"""


def _probe(mode: str, env: dict | None = None) -> dict:
    env = {**os.environ, **(env or {})}
    out = subprocess.run(
        [sys.executable, "-c", PROBE, mode], capture_output=True, text=True, env=env, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_freed_block_comes_back_without_page_faults():
    plain, kept = _probe("plain"), _probe("keep")
    assert kept["on"] is True
    assert plain["faults"] >= 16384 // 2  # glibc's default: fresh pages (2**24 floats, 4 KiB)
    assert kept["faults"] < 16384 // 8


def test_the_opt_out_leaves_glibc_as_it_is():
    out = _probe("keep", {"FEDBENCH_KEEP_FREED": "0"})
    assert out["on"] is False
    assert out["faults"] >= 16384 // 2


def test_a_cpu_engine_turns_it_on():
    code = (
        "from fedbench.assembly import build_config; from fedbench.training.engine import Engine;"
        "from fedbench.training import memory; import fedbench.papers;"
        "Engine(build_config('default', None, {'rounds': 1})); print(memory._done)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[True]"
