"""A quadratic "model": per-sample loss sum_d a_d w_d^2 + b_d w_d with features x = (a, b).

With one sample per device and batch size 1 the gradient 2 a w + b is exact, so every method's
round can be computed by hand (tests), and it is the SFL paper's quadratic experiment (F_m(x) =
a_m x^2 + b_m x, scalar x) run through the same engine.
"""

from __future__ import annotations

import torch
from torch import nn

from fedbench.models.batched import BatchedModel
from fedbench.models.registry import register_model


class QuadraticModule(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.w = nn.Parameter(torch.zeros(dim))

    def forward(self, x):  # x [n, 2, dim] -> per-sample loss [n]
        return (x[:, 0] * self.w**2 + x[:, 1] * self.w).sum(-1)


class BatchedQuadratic(BatchedModel):
    def __init__(self, dim: int = 1, x0: float = 10.0):
        super().__init__([("w", (dim,))])
        self.x0 = x0

    def forward(self, params, x):  # x [k, B, 2, dim] -> per-sample loss [k, B, 1]
        w = params[0].unsqueeze(1)  # [k, 1, dim]
        return (x[:, :, 0] * w**2 + x[:, :, 1] * w).sum(-1, keepdim=True)

    def loss(self, params, x, y, weight):
        return (self.forward(params, x).squeeze(-1) * weight).sum(1)

    def loss_and_grad(self, w, x, y, weight):
        a, b = x[:, :, 0], x[:, :, 1]  # [k, B, dim]
        wk = w.unsqueeze(1)
        losses = ((a * wk**2 + b * wk).sum(-1) * weight).sum(1)
        g = ((2 * a * wk + b) * weight.unsqueeze(-1)).sum(1)
        return losses, g

    def init(self, gen, dtype=torch.float32):
        return torch.full((self.dim,), self.x0, dtype=dtype)

    def module(self):
        return QuadraticModule(self.dim)


@register_model("quadratic")
def _quadratic(cfg, input_shape, num_classes, info, embeddings) -> BatchedQuadratic:
    return BatchedQuadratic(dim=input_shape[-1])
