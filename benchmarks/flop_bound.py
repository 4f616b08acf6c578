"""The FLOP bound of a conv net's or LSTM's round: its convolutions and matrix products at their
real shapes, each run as one large call over all K*B samples of a step, nothing else.

The shapes come from the model's own nn.Module (forward hooks on its Conv2d, Linear and LSTM
layers, one batch of B samples). A training step of k devices then costs, per layer:

- conv: the forward convolution, and its backward (weight gradient, and input gradient unless
  the layer reads the data), as one torch conv call each over N = k*B samples with one weight, in
  the fastest of three forms timed once here: oneDNN on NCHW, oneDNN on NHWC, and the plain GEMMs
  of its im2col shapes ([N Ho Wo, C kh kw] x [C kh kw, O] forward, and the two transposed products
  backward) without the im2col copies;
- linear: the three GEMMs (forward, weight gradient, input gradient unless it reads the data) of
  [N * rows per sample, in] x [in, out];
- LSTM layer: the input and the recurrent products of all time steps as single GEMMs
  ([N L, I] x [I, 4H] and [N L, H] x [H, 4H], each forward and both gradients), which ignores the
  recurrence's step-by-step dependence: a bound, not a schedule.

Elementwise work (ReLU, pooling, normalization, the loss) and the SGD update are left out: this is
what any implementation of the same arithmetic must spend at least, at this machine's speed for
these shapes. A round is (the round's real samples) / (K*B) such steps.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from fedbench.devices import synchronize

# what a timing reads: wall seconds, or the process's CPU seconds (engine_speed --cpu-time)
CLOCK = time.perf_counter

conv_backward = torch.ops.aten.convolution_backward


def layer_shapes(module: nn.Module, x: torch.Tensor) -> list[tuple]:
    """(kind, ...) of every Conv2d, Linear and LSTM call of module(x), in call order; `data`
    says whether the layer's input is the data (no input gradient needed)."""
    found: list[tuple] = []

    def hook(mod, args, out):
        inp = args[0]
        data = not inp.requires_grad
        if isinstance(mod, nn.Conv2d):
            found.append(("conv", tuple(inp.shape), mod, data))
        elif isinstance(mod, nn.Linear):
            rows = inp.numel() // inp.shape[-1]
            found.append(("linear", rows, mod.in_features, mod.out_features, data))
        elif isinstance(mod, nn.LSTM):
            found.append(("lstm", inp.shape[0], inp.shape[1], mod, data))

    hooks = [
        m.register_forward_hook(hook)
        for m in module.modules()
        if isinstance(m, (nn.Conv2d, nn.Linear, nn.LSTM))
    ]
    try:
        with torch.enable_grad():
            module.train()(x)
    finally:
        for h in hooks:
            h.remove()
    return found


def _fastest(candidates: dict[str, Callable[[], object]], reps: int = 3, device="cpu"):
    """The candidate with the least best-of-reps seconds."""
    best, best_t = None, float("inf")
    for fn in candidates.values():
        fn()
        t = min(_seconds(fn, device) for _ in range(reps))
        if t < best_t:
            best, best_t = fn, t
    return best


def _seconds(fn, device="cpu") -> float:
    synchronize(torch.device(device))
    t0 = CLOCK()
    fn()
    synchronize(torch.device(device))  # a GPU's queued work counts
    return CLOCK() - t0


def _gemm_flops(m: int, k: int, n: int, input_grad: bool) -> float:
    return 2.0 * m * k * n * (3 if input_grad else 2)


def _gemms(m: int, k: int, n: int, input_grad: bool, device="cpu") -> Callable[[], None]:
    """Forward [m, k] x [k, n], weight gradient [k, m] x [m, n], input gradient [m, n] x [n, k]."""
    a, b, g = (torch.randn(*s, device=device) for s in ((m, k), (k, n), (m, n)))

    def run():
        a @ b
        a.t() @ g
        if input_grad:
            g @ b.t()

    return run


def _conv_gemm(shape, conv: nn.Conv2d, n: int, data: bool) -> tuple[int, int, int, bool]:
    """The im2col GEMM (m, k, n, input gradient) of one conv layer over n samples."""
    _, c, h, w = shape
    o, _, kh, kw = conv.weight.shape
    (sh, sw), (ph, pw) = conv.stride, conv.padding
    ho, wo = (h + 2 * ph - kh) // sh + 1, (w + 2 * pw - kw) // sw + 1
    return (n * ho * wo, c * kh * kw, o, not data)


def step_flops(module: nn.Module, x: torch.Tensor, k: int) -> float:
    """The FLOPs of step_calls (one training step of k devices on batches like x), without
    building or timing anything."""
    n = k * x.shape[0]
    flops = 0.0
    for entry in layer_shapes(module, x):
        if entry[0] == "conv":
            flops += _gemm_flops(*_conv_gemm(entry[1], entry[2], n, entry[3]))
        elif entry[0] == "linear":
            _, rows, fan_in, fan_out, data = entry
            flops += _gemm_flops(rows // x.shape[0] * n, fan_in, fan_out, not data)
        else:
            _, _, steps, lstm, data = entry
            flops += sum(_gemm_flops(*g) for g in _lstm_gemms(steps, lstm, n, data))
    return flops


def _conv_step(shape, conv: nn.Conv2d, n: int, data: bool, device="cpu"):
    """(the fastest single-call form of one conv layer's forward and backward over n samples,
    its FLOPs)."""
    _, c, h, w = shape
    o, _, kh, kw = conv.weight.shape
    (sh, sw), (ph, pw) = conv.stride, conv.padding
    ho, wo = (h + 2 * ph - kh) // sh + 1, (w + 2 * pw - kw) // sw + 1
    bias = None if conv.bias is None else [o]
    mask = [not data, True, conv.bias is not None]

    def onednn(fmt):
        x = torch.randn(n, c, h, w, device=device).contiguous(memory_format=fmt)
        wt = torch.randn(o, c, kh, kw, device=device).contiguous(memory_format=fmt)
        go = torch.randn(n, o, ho, wo, device=device).contiguous(memory_format=fmt)

        def run():
            F.conv2d(x, wt, None, conv.stride, conv.padding)
            st, pad = conv.stride, conv.padding
            conv_backward(go, x, wt, bias, st, pad, [1, 1], False, [0, 0], 1, mask)

        return run

    gemm = _conv_gemm(shape, conv, n, data)
    forms = {
        "nchw": onednn(torch.contiguous_format),
        "nhwc": onednn(torch.channels_last),
        "gemm": _gemms(*gemm, device=device),
    }
    return _fastest(forms, device=device), _gemm_flops(*gemm)


def _lstm_gemms(steps: int, lstm: nn.LSTM, n: int, data: bool) -> list[tuple]:
    """The GEMM shapes (m, k, n, input gradient) of an LSTM's layers over n sequences."""
    shapes, size, gates = [], lstm.input_size, 4 * lstm.hidden_size
    for layer in range(lstm.num_layers):
        shapes.append((n * steps, size, gates, not (data and layer == 0)))
        shapes.append((n * steps, lstm.hidden_size, gates, True))
        size = lstm.hidden_size
    return shapes


def step_calls(module: nn.Module, x: torch.Tensor, k: int):
    """(one training step's single large calls for k devices, their FLOPs); x is one device's
    batch [B, ...], on the device the calls run on."""
    b = x.shape[0]
    n = k * b
    calls: list[Callable[[], None]] = []
    flops = 0.0
    for entry in layer_shapes(module, x):
        kind = entry[0]
        if kind == "conv":
            _, shape, conv, data = entry
            call, f = _conv_step(shape, conv, n, data, x.device)
            calls.append(call)
            flops += f
            continue
        if kind == "linear":
            _, rows, fan_in, fan_out, data = entry
            gemms = [(rows // b * n, fan_in, fan_out, not data)]
        else:
            _, _, steps, lstm, data = entry
            gemms = _lstm_gemms(steps, lstm, n, data)
        calls += [_gemms(*g, device=x.device) for g in gemms]
        flops += sum(_gemm_flops(*g) for g in gemms)
    return calls, flops


def bound_round(module: nn.Module, x: torch.Tensor, k: int, samples: float):
    """A timed 'round' of the model's FLOP bound: round(samples / (k B)) steps of step_calls.
    Returns (run(r) -> seconds, for alternating with the engine and the loop; steps; the
    round's FLOPs)."""
    calls, flops = step_calls(module, x, k)
    steps = max(1, round(samples / (k * x.shape[0])))

    def run(r):
        synchronize(x.device)
        t0 = CLOCK()
        for _ in range(steps):
            for call in calls:
                call()
        synchronize(x.device)
        return CLOCK() - t0

    return run, steps, steps * flops
