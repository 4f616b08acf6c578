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

    def _forward_backward(self, w, x, y, weight, visit):
        """Forward, then backward layer by layer from the top; visit(i, dz, act) receives each
        layer's output gradient dz [k, B, out] and input act [k, B, in] after the gradient
        flowing further down has been computed (so visit may update layer i in place)."""
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
        logp = torch.log_softmax(pre[-1], dim=2)
        nll = -logp.gather(2, y.unsqueeze(2)).squeeze(2)  # [k, B]
        losses = (nll * weight).sum(1)
        # d loss_i / d logits = weight * (softmax - onehot)
        dz = logp.exp_()
        dz.scatter_add_(2, y.unsqueeze(2), -torch.ones_like(nll).unsqueeze(2))
        dz.mul_(weight.unsqueeze(2))
        for i in reversed(range(n_layers)):
            below = torch.bmm(dz, params[2 * i]).mul_(pre[i - 1] > 0) if i else None
            visit(i, dz, acts[i])
            dz = below
        return losses

    def loss_and_grad(self, w: torch.Tensor, x, y, weight):
        """Explicit batched backward: each weight gradient is one bmm written straight into its
        view of the flat gradient (autograd would add a copy of all D numbers per step).
        Equal to BatchedModel.loss_and_grad (autograd) to float precision, tested."""
        g = torch.empty_like(w)
        gviews = self.unflatten(g)

        def write(i, dz, act):
            torch.bmm(dz.transpose(1, 2), act, out=gviews[2 * i])
            torch.sum(dz, dim=1, out=gviews[2 * i + 1])

        losses = self._forward_backward(w, x, y, weight, write)
        return losses, g

    def sgd_step(self, w, x, y, weight, lr: float, weight_decay: float = 0.0):
        """w <- w - lr (grad + wd w), in place, without materialising the gradient: each layer's
        update is one baddbmm into w. Per step this touches w once instead of w and a [k, D]
        gradient; for the FedLGA MLP (K=10: 12.5 MB of weights) that keeps a step inside a 16 MB
        L3 cache. Same result as loss_and_grad + update (tested)."""
        params = self.unflatten(w)
        decay = 1.0 - lr * weight_decay

        def update(i, dz, act):
            weight_i, bias_i = params[2 * i], params[2 * i + 1]
            weight_i.baddbmm_(dz.transpose(1, 2), act, beta=decay, alpha=-lr)
            if weight_decay:
                bias_i.mul_(decay)
            bias_i.sub_(dz.sum(1), alpha=lr)

        return self._forward_backward(w, x, y, weight, update)

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
