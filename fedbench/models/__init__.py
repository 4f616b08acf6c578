"""Model registry: config -> batched model."""

from __future__ import annotations

from math import prod

from fedbench.config import RunConfig
from fedbench.models.base import BatchedModel
from fedbench.models.mlp import BatchedMLP
from fedbench.models.quadratic import BatchedQuadratic


def build_model(cfg: RunConfig, input_shape: tuple[int, ...], num_classes: int) -> BatchedModel:
    n_in = prod(input_shape)
    if cfg.model == "logreg":
        return BatchedMLP([n_in, num_classes], init=cfg.init)
    if cfg.model == "mlp":
        return BatchedMLP([n_in, cfg.hidden, num_classes], init=cfg.init)
    if cfg.model == "quadratic":
        return BatchedQuadratic(dim=input_shape[-1])
    raise AssertionError(cfg.model)  # validated in RunConfig


__all__ = ["BatchedModel", "BatchedMLP", "BatchedQuadratic", "build_model"]
