"""FedLGA (Li et al., IEEE TCYB 2023): server-side local gradient approximation for partial work.

Devices run plain local SGD and send only (Delta_i, tau_i), Delta_i = w_i - w^t (Alg. 1) and
tau_i = E - E_i + 1. The server (Alg. 2, spec §1):

- K2 = devices with tau_i = 1 (full work), K1 = the rest; w_hat = w^t + mean_{K2} Delta_j;
- for i in K1: v_i = w_hat - (w^t + Delta_i), Delta_hat_i = Delta_i + lam * g_i (g_i . v_i)
  (Eq. 5-6 with G_i = g_i g_i^T, applied in O(d): a dot product per device, never a d x d matrix);
- w^{t+1} = w^t + eta_g sum_i p_i Delta_hat_i (Eq. 7; p_i = 1/K under aggregation=uniform, which
  the fedlga-fmnist preset uses; under aggregation=samples p_i = n_i / sum n_j).

Which g (spec §1.4, §7.1; the paper's gradient at w_{i,E_i} is not available to the server):
  g=A (default): the device's mean gradient along its own partial path,
                 g_i = -Delta_i / (eta_l S_i), S_i = local SGD steps it ran, eta_l = round's lr;
  g=B (TCYB §IV-A text): the mean gradient over the missing work, g_i = v_i / (tau_i - 1).
lam (default 1: the paper) scales the correction (DC-ASGD's lambda, spec §1.4). With local
momentum, reading A is the mean momentum direction; with lr decay it uses the round's lr.
If K2 is empty, w_hat does not exist and the correction is skipped (Delta_hat = Delta).

Records per round: n_corrected (devices corrected), correction_skipped (K2 empty),
norm_ratio = mean over corrected devices of |lam G v| / |Delta| (the correction actually applied;
equals the spec's |G v| / |Delta| at lam = 1; NaN when nothing was corrected).
With no heterogeneity (all tau_i = 1) and eta_g = 1 FedLGA is FedAvg, bit for bit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from fedbench.errors import FedbenchError
from fedbench.methods.base import Method, weighted_mean
from fedbench.methods.registry import register


@dataclass(frozen=True)
class FedLGAParams:
    g: str = field(
        default="A",
        metadata={
            "help": "gradient in G = g g^T: A = -Delta_i/(eta_l S_i), the device's own mean "
            "gradient; B = v_i/(tau_i-1), the missing-epochs mean (TCYB §IV-A)"
        },
    )
    lam: float = field(
        default=1.0, metadata={"help": "scale of the correction G v (1 = the paper)"}
    )
    eta_g: float = field(
        default=1.0, metadata={"help": "server learning rate of Eq. 7 (1 in the experiments)"}
    )

    def __post_init__(self):
        if self.g not in ("A", "B"):
            raise FedbenchError(f"fedlga: g must be A or B, got {self.g!r}")
        if self.lam < 0:
            raise FedbenchError(f"fedlga: lam must be >= 0, got {self.lam}")
        if not self.eta_g > 0:
            raise FedbenchError(f"fedlga: eta_g must be > 0, got {self.eta_g}")


@register(order=20)
class FedLGA(Method):
    name = "fedlga"
    Params = FedLGAParams
    server_lr_param = "eta_g"  # Eq. 7's eta_g is the server step's learning rate
    reduces_to_fedavg = {}  # without heterogeneity (all tau_i = 1)

    def combine(self, ctx, res):
        w = res.w  # [K, D] the devices' final models w^t + Delta_i
        delta = res.delta
        full = ctx.tau == 1  # K2
        partial = ~full  # K1
        n_full, n_partial = int(full.sum()), int(partial.sum())
        skipped = n_full == 0
        norm_ratio = math.nan
        if n_partial and not skipped:
            # v_i = w_hat - (w^t + Delta_i) = mean_{K2} Delta_j - Delta_i
            v = delta[full].mean(0) - delta
            if self.p.g == "A":
                g = delta / (-ctx.lr * ctx.steps.to(delta.dtype)).unsqueeze(1)
            else:
                g = v / (ctx.tau.to(delta.dtype) - 1).clamp(min=1).unsqueeze(1)
            s = (g * v).sum(1)  # g_i . v_i, one dot product per device
            corr = g * (self.p.lam * s * partial.to(s.dtype)).unsqueeze(1)  # 0 on K2 rows
            ratio = corr.norm(dim=1) / delta.norm(dim=1)
            norm_ratio = float(ratio[partial].mean())
            w = w + corr  # w^t + Delta_hat_i
        # Eq. 7 at eta_g = 1: w^t + sum p_i Delta_hat_i = sum p_i w_hat_i (sum p = 1), the plain
        # weighted average, so FedLGA without stragglers is FedAvg; the server step adds eta_g.
        return weighted_mean(w, ctx.weights), {
            "n_corrected": 0 if skipped else n_partial,
            "correction_skipped": skipped,
            "norm_ratio": norm_ratio,
        }
