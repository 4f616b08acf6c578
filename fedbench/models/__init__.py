"""Model registry: config -> batched model."""

from __future__ import annotations

from math import prod

import torch

from fedbench.config import RunConfig
from fedbench.errors import FedbenchError
from fedbench.models.base import BatchedModel
from fedbench.models.convnets import BatchedCNN, BatchedResNet18, BatchedResNet20, BatchedVGG9
from fedbench.models.lstm import BatchedLSTM, char_lstm, sent_lstm
from fedbench.models.mlp import BatchedMLP
from fedbench.models.quadratic import BatchedQuadratic


def _image_shape(input_shape: tuple[int, ...], channels: int, name: str) -> tuple[int, ...]:
    """[C, H, W] of the images; flat inputs (e.g. [784]) are read as square images."""
    if len(input_shape) == 3:
        return tuple(input_shape)
    side = round((prod(input_shape) / channels) ** 0.5)
    if channels * side * side != prod(input_shape):
        raise FedbenchError(
            f"model={name} needs image inputs [C, H, W], got input shape {input_shape}; "
            "choose an image dataset"
        )
    return (channels, side, side)


TOKEN_DATASETS = {"charlstm": "shakespeare", "sentlstm": "sent140"}


def build_model(
    cfg: RunConfig,
    input_shape: tuple[int, ...],
    num_classes: int,
    info: dict | None = None,
    embeddings: torch.Tensor | None = None,
) -> BatchedModel:
    """`info` is the dataset's info dict (the LSTMs read the vocabulary size from it),
    `embeddings` its frozen word vectors (sent140 with GloVe)."""
    info = info or {}
    if cfg.model in TOKEN_DATASETS and "vocab_size" not in info:
        raise FedbenchError(
            f"model={cfg.model} reads token ids, and dataset {cfg.dataset} has none; "
            f"use dataset={TOKEN_DATASETS[cfg.model]}"
        )
    n_in = prod(input_shape)
    if cfg.model == "logreg":
        return BatchedMLP([n_in, num_classes], init=cfg.init)
    if cfg.model == "mlp":
        return BatchedMLP([n_in, cfg.hidden, num_classes], init=cfg.init)
    if cfg.model == "quadratic":
        return BatchedQuadratic(dim=input_shape[-1])
    if cfg.model == "cnn":
        return BatchedCNN(num_classes, _image_shape(input_shape, 1, cfg.model))
    if cfg.model == "resnet20":
        return BatchedResNet20(num_classes, _image_shape(input_shape, 3, cfg.model), cfg.norm)
    if cfg.model == "vgg9":
        return BatchedVGG9(num_classes, _image_shape(input_shape, 3, cfg.model))
    if cfg.model == "resnet18":
        return BatchedResNet18(num_classes, _image_shape(input_shape, 3, cfg.model))
    if cfg.model == "charlstm":
        return char_lstm(info["vocab_size"])
    if cfg.model == "sentlstm":
        return sent_lstm(info["vocab_size"], num_classes, embeddings)
    raise AssertionError(cfg.model)  # validated in RunConfig


__all__ = [
    "BatchedModel",
    "BatchedMLP",
    "BatchedQuadratic",
    "BatchedCNN",
    "BatchedResNet20",
    "BatchedVGG9",
    "BatchedResNet18",
    "BatchedLSTM",
    "build_model",
]
