"""Device heterogeneity: how much local work each sampled device finishes this round.

fedlga (FedLGA §III, spec §2.1, §7.2-7.3): exactly round(rho*K) of the K sampled devices are slow;
  each slow one draws d ~ U{1..tau_max}, read by slow_work:
  tau (default; "tau_i uniformly distributed within [1, tau_max]"): tau_i = d, E_i = E - d + 1
    (tau_i = 1: full work, so tau_max = 1 is no partial work at all);
  at-most (TCYB §VI-A: slow devices "can only perform at most tau_max local epochs"): E_i = d,
    tau_i = E - d + 1 (every slow device is partial; tau_max = 1 is the most partial work).
  E counts epochs, or steps under local_steps (the "epoch = one SGD step" reading, spec §7.16).
stragglers (FedProx §5.2, spec §3.2): K - round(K(1-s)) devices are stragglers running
  x ~ U{1..E-1} epochs (the code; `paper`: U{1..E}); the policy decides whether they are dropped.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from fedbench.config import RunConfig


@dataclass
class Work:
    units: torch.Tensor  # [K] epochs (or steps) each device runs, E_i
    slow: torch.Tensor  # [K] bool: drawn slow / straggler this round
    tau: torch.Tensor  # [K] tau_i = E - E_i + 1


def round_half_up(x: float) -> int:
    return math.floor(x + 0.5)


def sample_work(cfg: RunConfig, k: int, gen: torch.Generator) -> Work:
    e = cfg.work_units
    units = torch.full((k,), e, dtype=torch.long)
    slow = torch.zeros(k, dtype=torch.bool)
    if cfg.hetero == "fedlga":
        n_slow = round_half_up(cfg.rho * k)
        chosen = torch.randperm(k, generator=gen)[:n_slow]
        draw = torch.randint(1, cfg.tau_max + 1, (n_slow,), generator=gen)
        units[chosen] = draw if cfg.slow_work == "at-most" else e - draw + 1
        slow[chosen] = True
    elif cfg.hetero == "stragglers":
        n_slow = k - round_half_up(k * (1 - cfg.stragglers))
        chosen = torch.randperm(k, generator=gen)[:n_slow]
        high = e - 1 if cfg.straggler_epochs == "code" else e
        units[chosen] = torch.randint(1, high + 1, (n_slow,), generator=gen)
        slow[chosen] = True
    return Work(units=units, slow=slow, tau=e - units + 1)
