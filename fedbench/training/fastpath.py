"""Compiled local rounds for small models (multinomial logistic regression, the quadratic model).

A logreg step (60 -> 10, B = 10) is ~25 kFLOP: through torch it costs 100x that in dispatch. Here
one numba loop runs a whole round: rows one after another (plain SGD keeps devices independent),
each gathering its mini-batches by index from the train arrays and updating its model in place.

The loop takes the round only where it is exactly the engine's per-step path (same batches, same
steps, same arithmetic up to rounding; tests/test_fastpath.py): a CPU engine, no input pipeline,
no momentum or clipping, no BatchNorm buffers, and a local step that is one of
    w <- w - lr (g + wd w + mu (w - w_global)) - lr drift
(a method's LinearStep, methods.base: plain SGD; FedProx's and FedNova's proximal term;
SCAFFOLD's drift c - c_i; FedCM's and MimeLite's scaled gradient plus a fixed pull, as SGD at
lr scale with the pull divided by scale). Anything else
is not `eligible`, and the engine runs its torch loop. FEDBENCH_FASTPATH=0 (or Engine.fastpath =
False) forces the torch loop, for tests and benchmarks.
"""

from __future__ import annotations

import os

import torch

from fedbench.methods.base import step_paths

ENABLED = os.environ.get("FEDBENCH_FASTPATH", "1") != "0"


def _kernel(model):
    """The compiled round for this model, or None (also when numba cannot load: no numba, or
    no writable cache folder)."""
    from fedbench.models.mlp import BatchedMLP
    from fedbench.models.quadratic_model import BatchedQuadratic

    name = None
    if type(model) is BatchedMLP and len(model.sizes) == 2:
        name = "logreg_round"
    elif type(model) is BatchedQuadratic:
        name = "quadratic_round"
    if name is None:
        return None
    try:
        from fedbench.training import _fastloops
    except (ImportError, RuntimeError):
        return None
    return getattr(_fastloops, name)


def eligible(engine, step, w: torch.Tensor) -> bool:
    """Whether the compiled loop reproduces this engine's round exactly: a CPU engine, no
    momentum, clipping, BatchNorm buffers or input pipeline, float data of the model's dtype,
    and a local step declared linear (`step`, the method's LinearStep) with a positive scale."""
    cfg, data = engine.cfg, engine.data
    if not (engine.fastpath and engine.device.type == "cpu"):
        return False
    if cfg.momentum or cfg.grad_clip is not None or engine.model.buffer_dim:
        return False
    if data.pipeline is not None or w.dtype not in (torch.float32, torch.float64):
        return False
    if data.train_x.dtype != w.dtype or data.train_y.dtype != torch.long:
        return False
    if step is None or "compiled" not in step_paths(step) or _kernel(engine.model) is None:
        return False
    return w.is_contiguous()


def run_round(engine, ctx, plan, w: torch.Tensor, local: dict, step) -> torch.Tensor:
    """Train w [K, D] in place over the whole round (where `eligible`); return the per-step
    losses [K, S]."""
    cfg, data, kernel = engine.cfg, engine.data, _kernel(engine.model)
    lr, mu, c = step.as_sgd(float(ctx.lr))
    drift_key = step.const
    k, s_max = plan.k, plan.batch_idx.shape[1]
    drift = local[drift_key] if drift_key else w.new_zeros(0, 0)
    if drift_key and c != 1:
        drift = drift * c
    wg = ctx.global_w.expand(k, -1)
    step_loss = torch.zeros(k, s_max, dtype=w.dtype)
    arrays = (
        w,
        wg.contiguous(),
        drift.contiguous(),
        data.train_x.flatten(1).contiguous(),
        data.train_y,
        plan.batch_idx.contiguous(),
        plan.batch_weight.contiguous(),
        plan.steps.to(torch.long).contiguous(),
    )
    kernel(
        *(a.numpy() for a in arrays),
        lr,
        float(cfg.weight_decay),
        mu,
        bool(drift_key),
        step_loss.numpy(),
    )
    return step_loss


def warm_up(engine) -> None:
    """Compile (or load from numba's cache) the round for this engine's model and dtype now, so
    that a fresh install's one-time compile is setup time, not the first round's seconds."""
    kernel = _kernel(engine.model) if engine.fastpath and engine.device.type == "cpu" else None
    if kernel is None or engine.dtype not in (torch.float32, torch.float64):
        return
    dt = engine.dtype
    w = torch.zeros(1, engine.model.dim, dtype=dt)
    empty = torch.zeros(1, 0, engine.cfg.batch_size, dtype=dt)
    arrays = (
        w,
        w.clone(),
        w.new_zeros(0, 0),
        w.new_zeros(1, 1),
        torch.zeros(1, dtype=torch.long),
        empty.to(torch.long),
        empty,
        torch.zeros(1, dtype=torch.long),  # no steps: nothing runs
    )
    kernel(*(a.numpy() for a in arrays), 0.0, 0.0, 0.0, False, w.new_zeros(1, 0).numpy())
