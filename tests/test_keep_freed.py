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

# A round's pattern: the same conv pass over 500 images (a [500, 32, 26, 26] activation, 43 MB,
# above glibc's largest mmap threshold) and its backward, 20 times. With glibc's defaults every
# pass maps fresh pages (>= 10,000 minor faults a pass). Kept, the heap settles: a pass now and
# then still grows it by a block (the heap's free pieces do not always fit an aligned request),
# so the test counts faults over the last 10 passes and the resident set's growth there, not
# one allocation (which reuses its pages or not as the heap's layout falls: 13 of 30 did not).
PROBE = """
import json, resource, sys, torch
from fedbench.training import memory
on = memory.keep_freed() if sys.argv[1] == "keep" else False
torch.set_num_threads(1)
torch.manual_seed(0)
conv, x = torch.nn.Conv2d(1, 32, 3), torch.randn(500, 1, 28, 28)
def rss_kib():
    return int(next(l for l in open("/proc/self/status") if l.startswith("VmRSS")).split()[1])
faults, rss = [], []
for _ in range(20):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    torch.nn.functional.max_pool2d(torch.relu(conv(x)), 2).square().mean().backward()
    faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
    rss.append(rss_kib())
print(json.dumps({"on": on, "faults": sum(faults[10:]), "rss": [rss[9], rss[-1]]}))
"""


def _probe(mode: str, env: dict | None = None) -> dict:
    env = {**os.environ, **(env or {})}
    out = subprocess.run(
        [sys.executable, "-c", PROBE, mode], capture_output=True, text=True, env=env, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_freed_blocks_come_back_without_page_faults_and_the_heap_settles():
    plain, kept = _probe("plain"), _probe("keep")
    assert kept["on"] is True
    assert plain["faults"] >= 10 * 10_000  # fresh pages every pass
    assert kept["faults"] * 10 < plain["faults"]
    before, after = kept["rss"]
    assert after <= before * 1.25  # bounded: at most a block or two more over 10 passes


def test_the_opt_out_leaves_glibc_as_it_is():
    out = _probe("keep", {"FEDBENCH_KEEP_FREED": "0"})
    assert out["on"] is False
    assert out["faults"] >= 10 * 10_000


def test_a_cpu_engine_turns_it_on():
    code = (
        "from fedbench.assembly import build_config; from fedbench.training.engine import Engine;"
        "from fedbench.training import memory; import fedbench.papers;"
        "Engine(build_config('default', None, {'rounds': 1})); print(memory._done)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[True]"
