"""SFL and PFL (Li & Lyu, sequential vs parallel FL): devices train in a chain, or side by side.

Source: liyipeng00/convergence (the authors' code).

sfl (main_cwt.py, "cyclic weight transfer"): the devices train one after another in a random
  order, drawn afresh every round from the run's seed; each starts from the previous device's final
  model, and the new global model is the last device's model. Records `order`: the device ids in
  training order. In the LocalResult, w_i is device i's final model and Delta_i = w_i - w^t is the
  progress of the whole chain up to and including device i (not device i's own contribution,
  which is w_i minus its predecessor's model); p_i plays no role.
pfl (main_fedavg.py): all devices start from w^t; w^{t+1} = w^t + eta_g sum_i p_i Delta_i, which
  is FedAvg at eta_g = 1 (the paper's setting), bit for bit.

The paper's K is a number of local iterations (mini-batches), not epochs: set local_steps=K
(5, 20 or 50). It clips gradient norms at 10 for PFL and 50 for SFL (grad_clip), uses batch 20,
weight decay 1e-4, no momentum, and n_i-weighted p_i (aggregation=samples).
"""

from __future__ import annotations

from dataclasses import dataclass

from fedbench.methods.base import Method, RecordField
from fedbench.methods.params import param
from fedbench.methods.registry import register


@register(order=110)
class SFL(Method):
    """SFL (Li & Lyu): devices train one after another in a random order; the last model is kept."""

    name = "sfl"
    record_fields = (RecordField("order", "list<int64>", "", "the device ids in training order"),)
    sequential = True

    def combine(self, ctx, res):
        order = res.order
        return res.w[order[-1]].clone(), {"order": ctx.clients[order].tolist()}


@dataclass(frozen=True)
class PFLParams:
    eta_g: float = param(1.0, "global learning rate (= server_lr; 1 in the paper)", "> 0")


@register(order=120)
class PFL(Method):
    """PFL (Li & Lyu): parallel local training, w += eta_g sum p_i Delta_i (FedAvg at eta_g=1)."""

    name = "pfl"
    Params = PFLParams
    # w^t + eta_g sum p_i Delta_i = w^t + eta_g (sum p_i w_i - w^t), since sum p_i = 1: FedAvg's
    # combine, then the server step with learning rate eta_g
    server_lr_param = "eta_g"
    reduces_to_fedavg = {}
