"""FedAvg (McMahan et al. 2017): local SGD, then the p_i-weighted average of the local models.

p_i is n_i / sum n_j (aggregation=samples, default) or 1/K (aggregation=uniform, FedLGA Eq. 7
with eta_g = 1). Under straggler_policy=drop-fedavg it drops the stragglers, as the FedProx paper's
FedAvg baseline does (litian96/FedProx trainers/fedavg.py); under the default `partial` policy it
aggregates whatever work each device did (FedLGA's reading, spec §7.4).
"""

from __future__ import annotations

from fedbench.methods.base import Method
from fedbench.methods.registry import register


@register(order=0)
class FedAvg(Method):
    name = "fedavg"  # no parameters (Params: NoParams)
    drops_stragglers = True
    reduces_to_fedavg = {}
