"""Batched models. Each model module registers its names with @register_model
(fedbench.models.registry); importing this package imports every module in it, so MODELS is
complete once `fedbench.models` is imported, and build_model reads it."""

from __future__ import annotations

import importlib
import pkgutil

import torch

from fedbench.config import RunConfig
from fedbench.models.batched import BatchedModel
from fedbench.models.convnets import BatchedCNN, BatchedResNet18, BatchedResNet20, BatchedVGG9
from fedbench.models.lstm import TOKEN_DATASETS, BatchedLSTM
from fedbench.models.mlp import BatchedMLP
from fedbench.models.quadratic_model import BatchedQuadratic
from fedbench.models.registry import MODELS, register_model

for _mod in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_mod.name}")


def build_model(
    cfg: RunConfig,
    input_shape: tuple[int, ...],
    num_classes: int,
    info: dict | None = None,
    embeddings: torch.Tensor | None = None,
) -> BatchedModel:
    """The registered builder of cfg.model. `info` is the dataset's info dict (the LSTMs read
    the vocabulary size from it), `embeddings` its frozen word vectors (sent140 with GloVe)."""
    build = MODELS.lookup(cfg.model)
    return build(cfg, input_shape, num_classes, info or {}, embeddings)


__all__ = [
    "MODELS",
    "TOKEN_DATASETS",
    "BatchedModel",
    "BatchedMLP",
    "BatchedQuadratic",
    "BatchedCNN",
    "BatchedResNet20",
    "BatchedVGG9",
    "BatchedResNet18",
    "BatchedLSTM",
    "build_model",
    "register_model",
]
