"""How a NetModel (conv nets, LSTMs) runs its k devices: its Layout, chosen per model family,
device and thread count from measurements on this project's CPU.

Every layout computes the same function of the [k, D] rows (tests/test_conv_layout.py):

- grouped: the k devices as one network k times wider (fedbench/models/layers.py: conv layers
  with groups=k, BatchNorm per channel, bmm for the linear layers). One call per layer for all
  devices, but its activations are k times larger: [B, k*32, 26, 26] for the MNIST CNN's first
  layer is 55 MB at k = 10, B = 64, out of cache for every elementwise pass.
- loop: device by device, each a plain network (groups=1) whose forward and backward run while
  its activations are still in cache; an LSTM by torch's fused kernel (nn.LSTM's).
- ...-nhwc: activations stored channels-last (NHWC), where oneDNN's convolutions are fastest;
  one model's one-input-channel convs (the MNIST CNN's first layer, and any k = 1 pass such
  as evaluation) as unfold + one matrix product (oneDNN runs that conv 15x slower).

Numbers: float64 equal to ~1e-14 (the reduction order inside a convolution is the library's);
float32 within the tolerance tests/test_conv_layout.py states over a whole round.

BatchNorm: torch's channels-last batch_norm kernel loses float32 precision where a channel's
mean is large against its spread (its backward subtracts near-equal sums): on one random
ResNet-20 batch the NHWC layouts' weight gradients were off by 1e-2 (relative, against float64),
and a whole round by 8e-2 of its update, where the NCHW layouts stayed at 4e-6. So BatchNorm
nets (family "resnet-bn") only take NCHW layouts.

The rule (CHOICES) is a table measured with `python benchmarks/engine_speed.py --layouts`
(benchmarks/README.md, "Conv nets: layouts, the loop and the FLOP bound"): per family and
thread count the layout with the fastest training step, and never one slower than the plain
per-client loop. Thread counts above the
largest measured one use its entry; devices other than the CPU get "grouped" (one large kernel
per layer, what a GPU wants; not measured here: no GPU was available).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Layout:
    name: str
    loop: bool  # device by device (else one grouped network)
    channels_last: bool  # activations stored NHWC; one model's one-channel convs unfolded


LAYOUTS = {
    lay.name: lay
    for lay in (
        Layout("grouped", loop=False, channels_last=False),
        Layout("grouped-nhwc", loop=False, channels_last=True),
        Layout("loop", loop=True, channels_last=False),
        Layout("loop-nhwc", loop=True, channels_last=True),
    )
}
GROUPED = LAYOUTS["grouped"]

# family -> {CPU threads: layout name}, measured (module docstring)
CHOICES: dict[str, dict[int, str]] = {
    "cnn": {1: "loop-nhwc", 2: "loop-nhwc"},
    "resnet": {1: "loop-nhwc", 2: "loop-nhwc"},
    "resnet-bn": {1: "loop", 2: "loop"},  # NCHW: see BatchNorm in the module docstring
    "vgg": {1: "loop", 2: "loop"},
    "lstm": {1: "loop", 2: "loop"},
}


def choose_layout(family: str, device: torch.device | str, threads: int) -> Layout:
    """The measured layout of `family` on `device` at `threads` CPU threads."""
    if torch.device(device).type != "cpu" or family not in CHOICES:
        return GROUPED
    table = CHOICES[family]
    fitting = [t for t in table if t <= threads] or [min(table)]
    return LAYOUTS[table[max(fitting)]]
