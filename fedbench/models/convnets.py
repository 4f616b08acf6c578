"""The papers' conv nets, batched over k devices in the grouped layout (fedbench/models/layers.py).

- cnn (FedSoftMax, spec §6.3): Conv(1->32,3x3)-ReLU-pool2-Conv(32->64,3x3)-ReLU-pool2-
  Linear(1600,C).
- resnet20 (FedLGA's CIFAR ResNet "following Hsieh et al.", spec §2.3): widths 16/32/64, 3 stages
  of 3 BasicBlocks, BatchNorm (norm="bn") or GroupNorm (norm="gn") after every conv, global
  average pool, Linear(64, C).
- vgg9 (SFL's wvgg9k4, spec §5.2): 3x3 conv+ReLU, channels 32,M,64,M,128,128,M,256,256,M,256,256,M,
  adaptive average pool, Linear(256, C); 2,308,810 parameters for 10 classes (tested).
- resnet18 (SFL's resnetii18, spec §5.2): CIFAR ResNet-18 with no normalization layers.

Grouped convolutions vs torch.func.vmap(functional_call) — CPU, 1 thread on a busy 2-core
machine, one loss_and_grad (forward + backward) of K=10 models on random 32x32 CIFAR batches,
median of 3 (`python benchmarks/engine_speed.py --layout --rounds 3 --threads 1`):

    resnet20 B=10: grouped 0.59 s, vmap 0.68 s;  B=20: grouped 1.14 s, vmap 1.27 s
    vgg9     B=10: grouped 0.59 s, vmap 0.59 s;  B=20: grouped 1.14 s, vmap 1.12 s

so the grouped layout is kept (vmap's conv batching rule also ends in a grouped conv; the
difference is its per-op overhead and extra reshapes). On CPU both are compute-bound and no faster
than K separate modules (0.58/1.06 s and 0.45/0.83 s). NetModel.forward_vmap keeps the vmap
version for that measurement and as a cross-check in tests.

Deviations, all documented at the class:
- resnet20: torch's BatchNorm momentum 0.1 (Caffe's moving_average_fraction 0.999 has no
  equivalent in a per-round averaged model; 0.1 is the usual PyTorch CIFAR setting); GroupNorm
  with 2 groups per layer (the papers give no group count).
"""

from __future__ import annotations

import math
from math import prod

import torch
import torch.nn.functional as F
from torch import nn

from fedbench.errors import FedbenchError
from fedbench.models import layers as L
from fedbench.models.net import NetModel
from fedbench.models.registry import register_model


def _image(x: torch.Tensor, shape: tuple[int, ...], lead: int = 2) -> torch.Tensor:
    """x [*lead, ...] -> [*lead, C, H, W] (flattened images are reshaped, channels added); the
    batched models read [k, B, ...] (lead 2), the nn.Modules [B, ...] (lead 1)."""
    return x.reshape(*x.shape[:lead], *shape)


# ---------------------------------------------------------------- FedSoftMax CNN
class _CNN(nn.Module):
    def __init__(self, num_classes: int, image_shape):
        super().__init__()
        self.image_shape = tuple(image_shape)
        self.conv1 = nn.Conv2d(self.image_shape[0], 32, 3)
        self.conv2 = nn.Conv2d(32, 64, 3)
        self.fc = nn.Linear(1600, num_classes)

    def forward(self, x):
        h = F.max_pool2d(F.relu(self.conv1(_image(x, self.image_shape, 1))), 2)
        h = F.max_pool2d(F.relu(self.conv2(h)), 2)
        return self.fc(h.flatten(1))


class _ImageNet(NetModel):
    """A net of num_classes outputs over images of image_shape (C, H, W; IMAGE_SHAPE when not
    given), whose torch module is MODULE(num_classes, image_shape)."""

    MODULE: type[nn.Module]
    IMAGE_SHAPE: tuple[int, int, int] = (3, 32, 32)

    def __init__(self, num_classes: int = 10, image_shape=None):
        self.num_classes = num_classes
        self.image_shape = tuple(image_shape or self.IMAGE_SHAPE)
        super().__init__()

    def module(self):
        return self.MODULE(self.num_classes, self.image_shape)


class BatchedCNN(_ImageNet):
    """FedSoftMax's CNN for 28x28 grey images (spec §6.3); torch's default initialization."""

    family = "cnn"
    MODULE = _CNN
    IMAGE_SHAPE = (1, 28, 28)
    # a full-batch pass over 10 devices of 500 images: 1.48-1.52 s of CPU in chunks of 512 (its
    # activations 430 MB), 1.26-1.28 s of 128, 1.16 s of 32 (benchmarks/engine_speed.py's
    # random data, 1 thread); no BatchNorm, so the chunk changes only the sums' order
    grad_chunk = 32

    def run(self, p, x, b, train, mask=None):
        k = x.shape[0]
        h = self.pack(_image(x, self.image_shape))
        h = self.relu_pool(self.conv(h, p["conv1.weight"], p["conv1.bias"]))
        h = self.relu_pool(self.conv(h, p["conv2.weight"], p["conv2.bias"]))
        return L.linear(L.unpack(h, k), p["fc.weight"], p["fc.bias"])


# ---------------------------------------------------------------- ResNets
GN_GROUPS = 2  # GroupNorm groups per layer for resnet20 norm="gn" (not given by the papers)


def _norm(kind: str, c: int) -> nn.Module:
    if kind == "bn":
        return nn.BatchNorm2d(c)
    if kind == "gn":
        return nn.GroupNorm(GN_GROUPS, c)
    return nn.Identity()


class _Block(nn.Module):
    """BasicBlock; the projection shortcut (when the shape changes) is a conv of kernel
    `short_kernel` with the block's stride, followed by the norm."""

    def __init__(self, cin, cout, stride, norm, short_kernel):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.n1 = _norm(norm, cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.n2 = _norm(norm, cout)
        self.shortcut = nn.Sequential()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(
                nn.Conv2d(cin, cout, short_kernel, stride, 0, bias=False), _norm(norm, cout)
            )

    def forward(self, x):
        h = F.relu(self.n1(self.conv1(x)))
        return F.relu(self.n2(self.conv2(h)) + self.shortcut(x))


class _ResNet(nn.Module):
    def __init__(self, widths, blocks, norm, short_kernel, num_classes, image_shape):
        super().__init__()
        self.image_shape = tuple(image_shape)
        self.conv1 = nn.Conv2d(self.image_shape[0], widths[0], 3, 1, 1, bias=False)
        self.n1 = _norm(norm, widths[0])
        stages, cin = [], widths[0]
        for i, (w, n) in enumerate(zip(widths, blocks)):
            stride = 1 if i == 0 else 2
            blks = []
            for j in range(n):
                blks.append(_Block(cin, w, stride if j == 0 else 1, norm, short_kernel))
                cin = w
            stages.append(nn.Sequential(*blks))
        self.layers = nn.Sequential(*stages)
        self.fc = nn.Linear(cin, num_classes)

    def forward(self, x):
        h = self.layers(F.relu(self.n1(self.conv1(_image(x, self.image_shape, 1)))))
        return self.fc(h.mean((2, 3)))


class _BatchedResNet(NetModel):
    widths: tuple[int, ...] = ()
    blocks: tuple[int, ...] = ()
    short_kernel = 1

    def __init__(self, num_classes: int = 10, image_shape=(3, 32, 32), norm: str = "none"):
        self.num_classes, self.image_shape, self.norm = num_classes, tuple(image_shape), norm
        super().__init__()

    def module(self):
        return _ResNet(
            self.widths,
            self.blocks,
            self.norm,
            self.short_kernel,
            self.num_classes,
            self.image_shape,
        )

    @property
    def batch_stats(self) -> bool:
        return self.norm == "bn"

    @property
    def family(self) -> str:  # BatchNorm nets stay NCHW (models/layouts.py)
        return "resnet-bn" if self.norm == "bn" else "resnet"

    def _norm(self, p, b, name, h, train, mask):
        if self.norm == "bn":
            rm = rv = None
            if b is not None:
                rm, rv = b[f"{name}.running_mean"], b[f"{name}.running_var"]
            w, bias = p[f"{name}.weight"], p[f"{name}.bias"]
            return L.batch_norm(h, w, bias, rm, rv, train, mask=mask)
        if self.norm == "gn":
            return L.group_norm(h, GN_GROUPS, p[f"{name}.weight"], p[f"{name}.bias"])
        return h

    def run(self, p, x, b, train, mask=None):
        k = x.shape[0]
        h = self.pack(_image(x, self.image_shape))
        h = F.relu(self._norm(p, b, "n1", self.conv(h, p["conv1.weight"], None, 1, 1), train, mask))
        cin = self.widths[0]
        for i, (w, n) in enumerate(zip(self.widths, self.blocks)):
            for j in range(n):
                stride = 2 if i > 0 and j == 0 else 1
                pre = f"layers.{i}.{j}."
                out = self.conv(h, p[pre + "conv1.weight"], None, stride, 1)
                out = F.relu(self._norm(p, b, pre + "n1", out, train, mask))
                out = self.conv(out, p[pre + "conv2.weight"], None, 1, 1)
                out = self._norm(p, b, pre + "n2", out, train, mask)
                if stride != 1 or cin != w:
                    sc = self.conv(h, p[pre + "shortcut.0.weight"], None, stride, 0)
                    sc = self._norm(p, b, pre + "shortcut.1", sc, train, mask)
                else:
                    sc = h
                h = F.relu(out + sc)
                cin = w
        z = h.mean((2, 3)).view(h.shape[0], k, cin).transpose(0, 1)
        return L.linear(z, p["fc.weight"], p["fc.bias"])


class BatchedResNet20(_BatchedResNet):
    """CIFAR ResNet-20 after Hsieh et al.'s Caffe model (spec §2.3): 3x3 stem conv 16 + norm +
    ReLU, BasicBlocks [3,3,3] of 16/32/64 (stride 2 at stages 2 and 3), convs without bias,
    norm after every conv, global average pool (any input size >= 32x32 works), Linear(64, C).
    Projection shortcut as in Hsieh's prototxt: 2x2 conv with stride 2 + norm (identity
    otherwise). Init: Caffe's "xavier" filler, U(+-sqrt(3/fan_in)), for conv and linear weights,
    linear bias 0, norm weight 1 / bias 0.

    BatchNorm: in train mode each device normalizes with its own batch statistics and updates
    its own running statistics (buffers, momentum 0.1 as in torch); the engine averages the
    devices' buffers with the round's aggregation weights, and evaluation (eval mode) uses the
    averaged buffers. norm="gn": GroupNorm with GN_GROUPS=2 groups per layer, no buffers."""

    widths, blocks, short_kernel = (16, 32, 64), (3, 3, 3), 2

    def __init__(self, num_classes: int = 10, image_shape=(3, 32, 32), norm: str = "bn"):
        super().__init__(num_classes, image_shape, norm)

    def reset_parameters(self, m):
        for mod in m.modules():
            if isinstance(mod, (nn.Conv2d, nn.Linear)):
                fan_in = mod.weight[0].numel()
                bound = math.sqrt(3.0 / fan_in)
                nn.init.uniform_(mod.weight, -bound, bound)
                if mod.bias is not None:
                    nn.init.zeros_(mod.bias)


class BatchedResNet18(_BatchedResNet):
    """SFL's CIFAR ResNet-18 ("resnetii18", spec §5.2): 3x3 stem 64 stride 1, no maxpool,
    BasicBlocks [2,2,2,2] of 64/128/256/512, 1x1 conv shortcuts, convs without bias, no
    normalization layers at all, global average pool, Linear(512, C); torch's default init."""

    widths, blocks, short_kernel = (64, 128, 256, 512), (2, 2, 2, 2), 1

    def __init__(self, num_classes: int = 10, image_shape=(3, 32, 32)):
        super().__init__(num_classes, image_shape, "none")


# ---------------------------------------------------------------- VGG-9
VGG9_CFG = (32, "M", 64, "M", 128, 128, "M", 256, 256, "M", 256, 256, "M")


class _VGG(nn.Module):
    def __init__(self, num_classes, image_shape):
        super().__init__()
        self.image_shape = tuple(image_shape)
        feats, c = [], self.image_shape[0]
        for v in VGG9_CFG:
            if v == "M":
                feats.append(nn.MaxPool2d(2))
            else:
                feats += [nn.Conv2d(c, v, 3, padding=1), nn.ReLU()]
                c = v
        self.features = nn.Sequential(*feats)
        self.fc = nn.Linear(c, num_classes)

    def forward(self, x):
        h = self.features(_image(x, self.image_shape, 1))
        return self.fc(F.adaptive_avg_pool2d(h, 1).flatten(1))


class BatchedVGG9(_ImageNet):
    """SFL's VGG-9 ("wvgg9k4", spec §5.2): 8 conv3x3(+bias)+ReLU layers with max pools, no BN,
    no dropout, adaptive average pool to 1x1, Linear(256, C). Init: Kaiming-normal (fan_out,
    ReLU) conv weights, N(0, 0.01) linear weights, zero biases. 2,308,810 parameters at C=10,
    the spec's count (the conv biases are included in it)."""

    family = "vgg"
    MODULE = _VGG

    def reset_parameters(self, m):
        for mod in m.modules():
            if isinstance(mod, nn.Conv2d):
                nn.init.kaiming_normal_(mod.weight, mode="fan_out", nonlinearity="relu")
                nn.init.zeros_(mod.bias)
            elif isinstance(mod, nn.Linear):
                nn.init.normal_(mod.weight, 0.0, 0.01)
                nn.init.zeros_(mod.bias)

    def run(self, p, x, b, train, mask=None):
        k = x.shape[0]
        h = self.pack(_image(x, self.image_shape))
        i = 0
        for v, nxt in zip(VGG9_CFG, VGG9_CFG[1:] + (None,)):
            if v == "M":
                i += 1
                continue
            h = self.conv(h, p[f"features.{i}.weight"], p[f"features.{i}.bias"], 1, 1)
            h = self.relu_pool(h) if nxt == "M" else F.relu(h)
            i += 2
        z = F.adaptive_avg_pool2d(h, 1)
        return L.linear(L.unpack(z, k), p["fc.weight"], p["fc.bias"])


def image_shape(input_shape: tuple[int, ...], channels: int, name: str) -> tuple[int, ...]:
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


@register_model("cnn")
def _cnn(cfg, input_shape, num_classes, info, embeddings) -> BatchedCNN:
    return BatchedCNN(num_classes, image_shape(input_shape, 1, cfg.model))


@register_model("resnet20")
def _resnet20(cfg, input_shape, num_classes, info, embeddings) -> BatchedResNet20:
    return BatchedResNet20(num_classes, image_shape(input_shape, 3, cfg.model), cfg.norm)


@register_model("vgg9")
def _vgg9(cfg, input_shape, num_classes, info, embeddings) -> BatchedVGG9:
    return BatchedVGG9(num_classes, image_shape(input_shape, 3, cfg.model))


@register_model("resnet18")
def _resnet18(cfg, input_shape, num_classes, info, embeddings) -> BatchedResNet18:
    return BatchedResNet18(num_classes, image_shape(input_shape, 3, cfg.model))
