"""The model registry: each model module registers its name(s) with ``@register_model(name)``
on a builder (cfg, input_shape, num_classes, info, embeddings) -> BatchedModel; `info` is the
dataset's info dict, `embeddings` its frozen word vectors (or None). fedbench.models.build_model
looks the name up."""

from __future__ import annotations

from fedbench.config import allow_name
from fedbench.names import Registry

MODELS: Registry = Registry("model", on_add=lambda name, _: allow_name("model", name))
register_model = MODELS.register
