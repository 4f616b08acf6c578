"""FedLGA (Li et al., IEEE TCYB 2023): server-side local gradient approximation for partial work.

Devices run plain local SGD and send only (Delta_i, tau_i), Delta_i = w_i - w^t (Alg. 1) and
tau_i = E - E_i + 1. The server (Alg. 2, spec §1):

- K2 = devices with tau_i = 1 (full work), K1 = the rest; w_hat = w^t + mean_{K2} Delta_j;
- for i in K1: v_i = w_hat - (w^t + Delta_i), Delta_hat_i = Delta_i + lam * g_i (g_i . v_i)
  (Eq. 5-6 with G_i = g_i g_i^T, applied in O(d): a dot product per device, never a d x d matrix);
- w^{t+1} = w^t + eta_g sum_i p_i Delta_hat_i (Eq. 7; p_i = 1/K under aggregation=uniform, which
  the fedlga-fmnist preset uses; under aggregation=samples p_i = n_i / sum n_j).

Which g (spec §1.4). The paper states two things:
  g=eq6 (Eq. 6 and Alg. 2 line 11, literally): g_i = grad F_i(w_{i,E_i}), the TRUE full-batch
        gradient of device i's loss (plus cfg.weight_decay w, the objective it trains on; not
        clipped) at its final local model. The server cannot compute it under the paper's own
        protocol (devices send only (Delta, tau), no data), so fedbench evaluates it as an oracle:
        one extra pass over each corrected device's data, batched over them, recorded per round
        as extra_grad_samples (sum n_i) and extra_grad_passes (devices), as MimeLite does;
  g=text (default; TCYB §IV-A: "g represents (Delta_{i,E} - Delta_{i,E_i})/(E - E_i), the
        averaged gradient between epoch E_i and E"): g_i = v_i / (tau_i - 1).
  g=path (NOT in the paper; fedbench's former default "A"): the device's mean gradient along its
        own partial path, g_i = -Delta_i / (eta_l S_i), S_i = local SGD steps it ran, eta_l =
        the round's lr (with local momentum: the mean momentum direction).
  The old names A (= path) and B (= text) are accepted as aliases and stored under the new names.
Why text is the default: it is the only reading the paper states that runs within the paper's
own algorithm - server-side only, from (Delta, tau) alone, at linear extra cost (§III-C, §IV-B);
eq6 needs each slow device's data at the server. Behaviour version 2 (``version``): a run
without an explicit g meant path (A) before and means text now.

Scale (README "Methods" has the measured table). Eq. 4 is a Taylor expansion of the gradient,
grad F(w_E) ~ grad F(w_{E_i}) + H (w_E - w_{E_i}), applied to the displacement Delta: the missing
work's displacement would carry a factor eta_l x (missing steps), and G v = g (g . v) carries none.
So |G v| / |Delta| = |g|^2 |v| |cos(g, v)| / |Delta|, and the correction dominates Delta as soon
as |g|^2 |v| / |Delta| > 1:
  eq6:  |g|^2 is the squared loss gradient at w_{i,E_i}, which does not shrink with eta_l. At lr
        1e-5 the slow device hardly moves: |g| ~ 7, as at w^t (7.2), so |g|^2 ~ 49 and G v is
        30-57x Delta (mean 44); at lr 1e-2 the device has fitted its own two classes, |g| is
        0.05-0.8 and G v is ~1 % of Delta;
  path: g = -Delta/(eta_l S) is also a gradient (lr-free) and parallel to Delta: G v only
        rescales Delta by (1 + s), s = -lam (|Delta|^2 - Delta . Delta_bar)/(eta_l S)^2, which
        flips and blows up the update at small lr (48x at 1e-5; 5 % at 1e-2);
  text: |g| = |v|/(tau_i - 1) is a displacement (O(eta_l)), so the ratio |v|^3/((tau-1)^2
        |Delta|) falls as eta_l^2: a real push towards w_hat at lr 1e-2 (0.45 of Delta), nothing
        at 1e-5 (5e-4: FedAvg).
If K2 is empty, w_hat does not exist and the correction is skipped (Delta_hat = Delta).

Records per round: n_corrected (devices corrected), correction_skipped (K2 empty),
norm_ratio = mean over corrected devices of |lam G v| / |Delta| (the correction actually applied;
equals the spec's |G v| / |Delta| at lam = 1; NaN when nothing was corrected); under g=eq6 also
extra_grad_samples and extra_grad_passes (0 when nothing was corrected).
With no heterogeneity (all tau_i = 1) and eta_g = 1 FedLGA is FedAvg, bit for bit, every reading.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from dataclasses import replace as _replace
from typing import ClassVar

from fedbench.errors import FedbenchError
from fedbench.lazy import torch
from fedbench.methods.base import EXTRA_GRAD_FIELDS, Method, RecordField, weighted_mean
from fedbench.methods.params import param
from fedbench.methods.registry import register

READINGS = ("text", "eq6", "path")
ALIASES = {"A": "path", "B": "text"}  # the names before behaviour version 2


@dataclass(frozen=True)
class FedLGAParams:
    g: str = field(
        default="text",
        metadata={
            "help": "gradient in G = g g^T: text = v_i/(tau_i-1), the missing-epochs mean "
            "(TCYB §IV-A, alias B); eq6 = the true full-batch gradient at w_{i,E_i} (Eq. 6, "
            "an oracle: one extra data pass per slow device); path = -Delta_i/(eta_l S_i) "
            "(not in the paper, alias A)"
        },
    )
    lam: float = param(1.0, "scale of the correction G v (1 = the paper)", ">= 0")
    eta_g: float = param(1.0, "server learning rate of Eq. 7 (1 in the experiments)", "> 0")

    def __post_init__(self):
        # aliases become the canonical name, so g=B and g=text are one run (one config hash)
        object.__setattr__(self, "g", ALIASES.get(self.g, self.g))
        if self.g not in READINGS:
            raise FedbenchError(
                f"fedlga: g must be one of {', '.join(READINGS)} (or A = path, B = text), "
                f"got {self.g!r}"
            )


@register(order=20)
class FedLGA(Method):
    name = "fedlga"
    Params = FedLGAParams
    server_lr_param = "eta_g"  # Eq. 7's eta_g is the server step's learning rate
    reduces_to_fedavg = {}  # without heterogeneity (all tau_i = 1)
    version: ClassVar[int] = 2  # 2: default g is text (TCYB §IV-A); 1: path (then called A)
    record_fields = (
        RecordField("n_corrected", "int64", "devices", "slow devices whose update was corrected"),
        RecordField(
            "correction_skipped", "bool", "", "no device ran its full work: nothing corrected"
        ),
        RecordField(
            "norm_ratio",
            "float64",
            "",
            "mean |correction| / |Delta_i| over the corrected devices (NaN: none corrected)",
        ),
        *(_replace(f, when="g=eq6") for f in EXTRA_GRAD_FIELDS),
    )

    def combine(self, ctx, res):
        w = res.w  # [K, D] the devices' final models w^t + Delta_i
        delta = res.delta
        full = ctx.tau == 1  # K2
        rows = (~full).nonzero().squeeze(1)  # K1
        skipped = bool(full.sum() == 0)
        record = {"n_corrected": 0, "correction_skipped": skipped, "norm_ratio": math.nan}
        if self.p.g == "eq6":
            record.update(extra_grad_samples=0, extra_grad_passes=0)
        if len(rows) and not skipped:
            d = delta[rows]
            # v_i = w_hat - (w^t + Delta_i) = mean_{K2} Delta_j - Delta_i
            v = delta[full].mean(0) - d
            g = self._gradient(ctx, res, rows, d, v, record)
            corr = g * (self.p.lam * (g * v).sum(1)).unsqueeze(1)  # lam g_i (g_i . v_i)
            record["n_corrected"] = len(rows)
            record["norm_ratio"] = float((corr.norm(dim=1) / d.norm(dim=1)).mean())
            w = w.index_add(0, rows, corr)  # w^t + Delta_hat_i on K1, untouched on K2
        # Eq. 7 at eta_g = 1: w^t + sum p_i Delta_hat_i = sum p_i w_hat_i (sum p = 1), the plain
        # weighted average, so FedLGA without stragglers is FedAvg; the server step adds eta_g.
        return weighted_mean(w, ctx.weights), record

    def _gradient(self, ctx, res, rows, d, v, record) -> torch.Tensor:
        """g_i [k1, D] for the corrected devices under the chosen reading."""
        if self.p.g == "text":
            return v / (ctx.tau[rows].to(d.dtype) - 1).unsqueeze(1)
        if self.p.g == "path":
            return d / (-ctx.lr * ctx.steps[rows].to(d.dtype)).unsqueeze(1)
        w_last = res.w[rows]  # w_{i,E_i}
        _, g = ctx.services.full_batch_grads(w_last, ctx.clients[rows])
        if ctx.cfg.weight_decay:
            g = g + ctx.cfg.weight_decay * w_last
        record["extra_grad_samples"] = int(ctx.n_samples[rows].sum())
        record["extra_grad_passes"] = len(rows)
        return g.to(d.dtype)
