"""Input pipelines on the tensor device: batched, no per-sample PIL work.

Images are stored as uint8 [n, C, H, W] on the run's device. A mini-batch [k, B, C, H, W] is
augmented (random crop with zero padding, then horizontal flip, the order of torchvision's
RandomCrop(32, padding=4) + RandomHorizontalFlip()), scaled to [0, 1], normalized per channel
and optionally resized (bilinear). Evaluation applies the same steps without augmentation.

The random crop offsets and flips come from a per-(round, device) stream drawn for all of a
device's steps at once (draw_augment), so a device's augmentations do not depend on who else
trains with it, and the same seed gives the same numbers.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from fedbench.devices import generator

# per-channel mean and std on [0, 1] pixels (spec §2.4, §5.2)
STATS = {
    "cifar10": ((0.4914, 0.4822, 0.4465), (0.2470, 0.2435, 0.2616)),
    "cifar100": ((0.5071, 0.4865, 0.4409), (0.2673, 0.2564, 0.2762)),
    "cinic10": ((0.4789, 0.4723, 0.4305), (0.2421, 0.2383, 0.2587)),
    # LG-FedAvg, which FedLGA follows, normalizes CIFAR with ImageNet's statistics
    "imagenet": ((0.485, 0.456, 0.406), (0.229, 0.224, 0.225)),
}


@dataclass
class ImagePipeline:
    mean: tuple[float, ...] | None  # None: raw 0-255 values as floats
    std: tuple[float, ...] | None
    augment: bool = False  # random crop (padding) + horizontal flip, training only
    padding: int = 4
    resize: int | None = None
    dtype: torch.dtype = torch.float32
    _consts: dict = field(default_factory=dict, repr=False)  # (device) -> (mean, std) on it

    def describe(self) -> str:
        norm = "raw 0-255" if self.mean is None else f"normalize mean={self.mean} std={self.std}"
        aug = f", random crop (padding {self.padding}) + flip" if self.augment else ""
        size = f", resize to {self.resize}" if self.resize else ""
        return norm + aug + size

    # ---- the two hooks the engine calls
    def train(self, xb: torch.Tensor, aug: torch.Tensor | None) -> torch.Tensor:
        """xb uint8 [..., C, H, W]; aug int [..., 3] (dy, dx, flip) per sample, or None."""
        if self.augment and aug is not None:
            xb = crop_flip(xb, aug, self.padding)
        return self._finish(xb)

    def eval(self, xb: torch.Tensor) -> torch.Tensor:
        return self._finish(xb)

    def _finish(self, xb: torch.Tensor) -> torch.Tensor:
        x = xb.to(self.dtype)
        if self.mean is not None:
            mean, std = self._on(x.device)
            x = (x - mean) / std
        if self.resize and x.shape[-1] != self.resize:
            lead = x.shape[:-3]
            x = F.interpolate(
                x.reshape(-1, *x.shape[-3:]),
                size=(self.resize, self.resize),
                mode="bilinear",
                align_corners=False,
            ).view(*lead, x.shape[-3], self.resize, self.resize)
        return x

    def _on(self, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        """mean and std (scaled to 0-255) on the device, made once: no copy per batch."""
        if device not in self._consts:
            shape = (-1, 1, 1)
            mean = torch.tensor(self.mean, dtype=self.dtype).view(shape) * 255
            std = torch.tensor(self.std, dtype=self.dtype).view(shape) * 255
            self._consts[device] = (mean.to(device), std.to(device))
        return self._consts[device]

    def draw_augment(self, seed: int, r: int, clients, steps: int, batch: int, device):
        """Crop offsets and flips [K, steps, batch, 3] for one round, from each device's own
        stream; None when this pipeline does not augment."""
        if not self.augment:
            return None
        out = torch.empty(len(clients), steps, batch, 3, dtype=torch.long)
        for row, c in enumerate(clients.tolist()):
            g = generator(seed, "augment", r, c)
            out[row, ..., :2] = torch.randint(
                0, 2 * self.padding + 1, (steps, batch, 2), generator=g
            )
            out[row, ..., 2] = (torch.rand(steps, batch, generator=g) < 0.5).long()
        return out.to(device)


def crop_flip(xb: torch.Tensor, aug: torch.Tensor, padding: int) -> torch.Tensor:
    """Per-sample crop of the zero-padded image at offset (dy, dx), mirrored when flip = 1,
    as one gather. xb [..., C, H, W], aug [..., 3] -> same shape as xb."""
    lead, (c, h, w) = xb.shape[:-3], xb.shape[-3:]
    x = F.pad(xb.reshape(-1, c, h, w), (padding, padding, padding, padding))
    a = aug.reshape(-1, 3)
    n = x.shape[0]
    ar_h = torch.arange(h, device=x.device)
    ar_w = torch.arange(w, device=x.device)
    rows = a[:, 0:1] + ar_h  # [n, H]
    cols = torch.where(a[:, 2:3].bool(), a[:, 1:2] + (w - 1 - ar_w), a[:, 1:2] + ar_w)  # [n, W]
    nidx = torch.arange(n, device=x.device).view(n, 1, 1)
    out = x[nidx, :, rows[:, :, None], cols[:, None, :]]  # [n, H, W, C]
    return out.permute(0, 3, 1, 2).reshape(*lead, c, h, w)
