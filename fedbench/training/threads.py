"""How many torch CPU threads a run gets.

Intra-op threads only pay when a step's operations are big enough to split and the cores are
free. For small models they cost: every OpenMP region waits for its slowest thread, and on a
shared machine (a sweep, CI, a laptop doing anything else) that thread is often descheduled.
Measured on this project's 2-core CPU under load (README, "The engine"), 2 threads instead of 1
made an engine round 15x slower for logistic regression, 7.7x for the FedLGA MLP, 3.4x for the
MNIST CNN. So:

- an explicit --threads wins;
- models whose local step is below SMALL_STEP_FLOPS (logreg, the quadratic model, MLPs at
  B = 10) get 1 thread;
- other models (conv nets, LSTMs) get the budget: the machine's cores, or cores / jobs in a
  sweep of several processes. Not less when other processes are busy: the thread count can
  change a reduction's order and so the last bits of a run, and the same config on the same
  machine must give the same numbers; on a shared machine pass --threads.

The CLI (train, sweep workers, check) calls configure(); the engine then applies the choice
for its model (apply) and the runner records it in run.json. Library use that never calls
configure() keeps torch's own setting.
"""

from __future__ import annotations

import os

import torch

from fedbench.devices import check_threads

# FLOPs of one batched local step (all K devices, forward + backward) below which a model runs
# on one thread: the FedLGA MLP (K 10, B 10, 318 k parameters: ~0.2 GFLOP) is below it and
# loses at 2 threads on 2 cores; the conv nets' steps are above it
SMALL_STEP_FLOPS = 1e9

_settings: dict[str, int | None] = {}


def configure(requested: int | None = None, budget: int | None = None) -> None:
    """Turn the policy on for this process: `requested` (--threads) wins when given; else the
    policy picks within `budget` (default: all cores)."""
    if requested is not None:
        check_threads(requested)
    _settings.update(requested=requested, budget=budget)


def step_flops(model, k: int, batch_size: int) -> float | None:
    """Approximate FLOPs of one local step of k devices, for models whose cost is ~6 x
    parameters per sample (fully connected and quadratic models); None for others."""
    from fedbench.models.mlp import BatchedMLP
    from fedbench.models.quadratic_model import BatchedQuadratic

    if isinstance(model, (BatchedMLP, BatchedQuadratic)):
        return 6.0 * model.dim * k * batch_size
    return None


def cpu_cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover
        return os.cpu_count() or 1


def choose(model, cfg) -> int:
    """The thread count for a run of cfg with this model under the configured policy."""
    if _settings.get("requested"):
        return int(_settings["requested"])
    cores = cpu_cores()
    budget = _settings.get("budget") or cores
    flops = step_flops(model, cfg.clients_per_round, cfg.batch_size)
    if flops is not None and flops < SMALL_STEP_FLOPS:
        return 1
    return max(1, min(int(budget), cores))


def apply(model, cfg) -> int:
    """Set torch's thread count for this run when configure() was called; return the count
    torch now uses."""
    if _settings:
        torch.set_num_threads(choose(model, cfg))
    return torch.get_num_threads()
