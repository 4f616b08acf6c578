"""FedSoftMax, FedMax and FedMax(k) (paper 002 §2.3): weight the devices that are worst off.

Both aggregate w^{t+1} = sum_i alpha_i w_i with weights from each device's loss gap l_i - l_i*:
  fedsoftmax: alpha_i proportional to p_i^use_p exp(beta (l_i - l_i*)), a stable softmax;
  fedmax:     alpha_i = 1/k on the k devices with the largest l_i - l_i* (k = 1 is FedMax).

Defaults follow the authors' code (alexandreduplessis/Tamaya_Federated_Learning,
src/soft_mergers.py Merger_FedSoft, src/topk_mergers.py), not the paper's formula
(spec §6.2, §7.14):
  loss=last_epoch  l_i = the device's mean training loss over its last local epoch, along its
                   local path (the code's output.losses[-1]); loss=start is the paper's F_i(w_t),
                   the device's full local loss at the round's starting global model;
  fstar=zero       l_i* = 0 (the code); fstar=min_seen keeps, per device, the running minimum of
                   every l_i seen so far, the current one included (so l_i - l_i* >= 0);
  temperature=inverse  beta = T: the code's "T" multiplies the loss, an inverse temperature, which
                   is why a larger T (paper range 5-30) converges faster; temperature=paper uses
                   the paper's exp((l - l*)/T);
  use_p=False      the code's Merger_FedSoft leaves p_i out (Merger_FedSuperSoft has it; p_i are
                   the run's aggregation weights: n_i/sum n_j, or 1/K under aggregation=uniform).
The code also allows T = 0 (FedCst) and T < 0 (FedSoftmin); here T must be > 0.
If fewer than k devices report (stragglers dropped), FedMax(k) averages all that did.

Records per round: agg_weights, the alpha_i aligned with the record's `clients` list (for the
participation heat map, 002 Fig. 7).
"""

from __future__ import annotations

from dataclasses import dataclass

from fedbench.errors import FedbenchError
from fedbench.lazy import torch
from fedbench.methods.base import Method, RecordField, State, weighted_mean
from fedbench.methods.params import param
from fedbench.methods.registry import register

LOSSES = ("last_epoch", "start")
FSTARS = ("zero", "min_seen")


def _loss_field():
    return param(
        "last_epoch",
        "l_i: last_epoch = last local epoch's training loss (the code); start = F_i(w_t), full "
        "local loss at the round's start (the paper)",
    )


def _fstar_field():
    return param("zero", "l_i*: zero (the code) or min_seen (running minimum per device)")


def _check_common(name: str, loss: str, fstar: str) -> None:
    if loss not in LOSSES:
        raise FedbenchError(f"{name}: loss must be one of {', '.join(LOSSES)}, got {loss!r}")
    if fstar not in FSTARS:
        raise FedbenchError(f"{name}: fstar must be one of {', '.join(FSTARS)}, got {fstar!r}")


@dataclass(frozen=True)
class FedSoftMaxParams:
    T: float = param(
        5.0,
        "inverse temperature multiplying the loss (the code's T; paper range 5-30, the code's "
        "main experiment 5)",
        "> 0",
    )
    temperature: str = param(
        "inverse", "inverse: exp(T (l - l*)) (the code); paper: exp((l - l*) / T)"
    )
    use_p: bool = param(False, "multiply by p_i (the paper; the code leaves it out)")
    loss: str = _loss_field()
    fstar: str = _fstar_field()

    def __post_init__(self):
        if self.temperature not in ("inverse", "paper"):
            raise FedbenchError(
                f"fedsoftmax: temperature must be inverse or paper, got {self.temperature!r}"
            )
        _check_common("fedsoftmax", self.loss, self.fstar)


@dataclass(frozen=True)
class FedMaxParams:
    k: int = param(1, "number of worst-off devices averaged (1 = FedMax)", "an integer >= 1")
    loss: str = _loss_field()
    fstar: str = _fstar_field()

    def __post_init__(self):
        _check_common("fedmax", self.loss, self.fstar)


class _LossWeighted(Method):
    """Shared part: the loss gaps l_i - l_i*, the weighted average and its record."""

    # running minimum of each device's loss (fstar=min_seen); +inf = not seen yet
    state = (State("min_seen", "clients", fill=float("inf")),)
    record_fields = (
        RecordField("agg_weights", "list<float64>", "", "the devices' aggregation weights"),
    )

    def loss_gaps(self, ctx, res) -> torch.Tensor:
        if self.p.loss == "last_epoch":
            loss = res.last_epoch_loss
        else:
            loss = ctx.services.full_batch_grads(ctx.global_w, ctx.clients)[0]
        loss = loss.to(ctx.global_w.dtype)
        if self.p.fstar == "zero":
            return loss
        seen = torch.minimum(self.min_seen[ctx.clients], loss)
        self.min_seen[ctx.clients] = seen
        return loss - seen

    def weights(self, ctx, gaps: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def combine(self, ctx, res):
        alpha = self.weights(ctx, self.loss_gaps(ctx, res))
        return weighted_mean(res.w, alpha), {"agg_weights": alpha.tolist()}


@register(order=100)
class FedSoftMax(_LossWeighted):
    """FedSoftMax (paper 002 §2.3): average with softmax weights of the devices' losses."""

    name = "fedsoftmax"
    Params = FedSoftMaxParams

    def weights(self, ctx, gaps):
        beta = self.p.T if self.p.temperature == "inverse" else 1.0 / self.p.T
        logits = beta * gaps
        if self.p.use_p:
            logits = logits + ctx.weights.log()
        return torch.softmax(logits, dim=0)  # subtracts the max: no overflow at large T


@register(order=90)
class FedMax(_LossWeighted):
    """FedMax / FedMax(k) (paper 002 §2.3): average the k devices with the largest loss."""

    name = "fedmax"
    Params = FedMaxParams

    @classmethod
    def check_config(cls, params, cfg):
        super().check_config(params, cfg)
        if params.k > cfg.clients_per_round:
            raise FedbenchError(
                f"fedmax: k = {params.k} exceeds the devices per round K = "
                f"{cfg.clients_per_round}; choose k <= K"
            )

    def weights(self, ctx, gaps):
        k = min(self.p.k, len(gaps))
        # stable sort: ties go to the earlier row, the same on every run
        top = torch.argsort(gaps, descending=True, stable=True)[:k]
        alpha = torch.zeros_like(gaps)
        alpha[top] = 1.0 / k
        return alpha
