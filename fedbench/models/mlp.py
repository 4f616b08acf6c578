"""Fully connected networks: multinomial logistic regression (784->10, 60->10) and the FedLGA
MLP 784->400->ReLU->10, each layer one torch.baddbmm over the K stacked models."""

from __future__ import annotations

import math

import torch
from torch import nn

from fedbench.models.base import BatchedModel


class BatchedMLP(BatchedModel):
    def __init__(self, sizes: list[int], init: str = "default"):
        self.sizes = list(sizes)
        self.init_mode = init
        shapes = []
        for i, (fan_in, fan_out) in enumerate(zip(sizes[:-1], sizes[1:])):
            idx = 1 + 2 * i  # nn.Sequential(Flatten, Linear, ReLU, Linear, ...)
            shapes += [(f"{idx}.weight", (fan_out, fan_in)), (f"{idx}.bias", (fan_out,))]
        super().__init__(shapes)

    def forward(self, params: list[torch.Tensor], x: torch.Tensor) -> torch.Tensor:
        h = x.flatten(2)  # [k, B, in]
        n_layers = len(params) // 2
        for i in range(n_layers):
            weight, bias = params[2 * i], params[2 * i + 1]  # [k, out, in], [k, out]
            h = torch.baddbmm(bias.unsqueeze(1), h, weight.transpose(1, 2))
            if i < n_layers - 1:
                h = torch.relu(h)
        return h

    def loss_and_grad(self, w: torch.Tensor, x, y, weight):
        """Explicit batched backward: each weight gradient is one bmm written straight into its
        view of the flat gradient (autograd would add a copy of all D numbers per step).
        Equal to BatchedModel.loss_and_grad (autograd) to float precision, tested."""
        params = self.unflatten(w)
        n_layers = len(params) // 2
        acts = [x.flatten(2)]  # inputs of each layer
        pre = []  # pre-activations
        h = acts[0]
        for i in range(n_layers):
            z = torch.baddbmm(params[2 * i + 1].unsqueeze(1), h, params[2 * i].transpose(1, 2))
            pre.append(z)
            if i < n_layers - 1:
                h = torch.relu(z)
                acts.append(h)
        logits = pre[-1]
        logp = torch.log_softmax(logits, dim=2)
        nll = -logp.gather(2, y.unsqueeze(2)).squeeze(2)  # [k, B]
        losses = (nll * weight).sum(1)
        # d loss_i / d logits = weight * (softmax - onehot)
        dz = logp.exp_()
        dz.scatter_add_(2, y.unsqueeze(2), -torch.ones_like(nll).unsqueeze(2))
        dz.mul_(weight.unsqueeze(2))
        g = torch.empty_like(w)
        gviews = self.unflatten(g)
        for i in reversed(range(n_layers)):
            torch.bmm(dz.transpose(1, 2), acts[i], out=gviews[2 * i])
            torch.sum(dz, dim=1, out=gviews[2 * i + 1])
            if i:
                dz = torch.bmm(dz, params[2 * i]).mul_(pre[i - 1] > 0)
        return losses, g

    def init(self, gen: torch.Generator, dtype=torch.float32) -> torch.Tensor:
        if self.init_mode == "zeros":  # FedProx's TF model starts from zeros
            return torch.zeros(self.dim, dtype=dtype)
        parts = []
        for s in self.slots:
            # nn.Linear's default: U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for weight and bias
            fan_in = self.sizes[int(s.name.split(".")[0]) // 2]
            bound = 1.0 / math.sqrt(fan_in)
            parts.append((torch.rand(s.numel, generator=gen, dtype=torch.float64) * 2 - 1) * bound)
        return torch.cat(parts).to(dtype)

    def module(self) -> nn.Module:
        layers: list[nn.Module] = [nn.Flatten()]
        for i, (a, b) in enumerate(zip(self.sizes[:-1], self.sizes[1:])):
            if i:
                layers.append(nn.ReLU())
            layers.append(nn.Linear(a, b))
        return nn.Sequential(*layers)
