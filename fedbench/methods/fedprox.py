"""FedProx (Li et al., MLSys 2020): local SGD on F_k(w) + (mu/2)||w - w^t||^2.

Local step (litian96/FedProx flearn/optimizer/pgd.py): w <- w - lr (grad f_B(w) + mu (w - w^t)).
Aggregation: the p_i-weighted average of all K local models, partial work included.

Extras (off by default):
- adaptive=True (paper App. C.3.3, not in the code; spec §3.6): after each round the server
  computes the global training loss (mean cross-entropy over all training samples) at the new
  model; mu += 0.1 when it went up, mu -= 0.1 (not below 0) after 5 consecutive decreases. Round 1
  compares with the loss at the initial model (taken once, in init). An unchanged loss breaks a
  run of decreases without raising mu. The starting mu is the `mu` parameter (the paper: 1 for
  IID, 0 for non-IID data). Records `mu` (the value used in the round) and `global_train_loss`.
- dissimilarity=True (trainers/fedprox.py, spec §3.7): every round, at the round's starting global
  model, records "dissimilarity" = (1/N) sum_k |g - g_k|^2 over all N devices' full-batch
  gradients, g = sum n_k g_k / sum n_k (fedbench.training.evaluation.gradient_dissimilarity).
"""

from __future__ import annotations

from dataclasses import dataclass

from fedbench.methods.base import LinearStep, Method, RecordField, State
from fedbench.methods.params import param
from fedbench.methods.registry import register


@dataclass(frozen=True)
class FedProxParams:
    mu: float = param(
        1.0,
        "proximal weight (the start value when adaptive); FedProx grid {0.001,0.01,0.1,1}, "
        "FedLGA {0.1,0.5,1}",
        ">= 0",
    )
    adaptive: bool = param(
        False,
        "adapt mu (App. C.3.3): +0.1 when the global training loss rises, -0.1 after 5 "
        "consecutive decreases; start mu=1 (IID) or 0 (non-IID)",
    )
    dissimilarity: bool = param(
        False,
        "record (1/N) sum_k |g - g_k|^2 of the N devices' full-batch gradients at w^t every "
        "round (costs a full pass over all data)",
    )


@dataclass
class AdaptiveMu:
    """FedProx's adaptive-mu rule, fed one global training loss per round."""

    mu: float
    prev_loss: float | None = None
    n_down: int = 0  # consecutive decreases so far

    def update(self, loss: float) -> float:
        """Take the loss after a round; return mu for the next round."""
        if self.prev_loss is not None:
            if loss > self.prev_loss:
                self.mu, self.n_down = round(self.mu + 0.1, 12), 0
            elif loss < self.prev_loss:
                self.n_down += 1
                if self.n_down == 5:
                    self.mu, self.n_down = max(0.0, round(self.mu - 0.1, 12)), 0
            else:
                self.n_down = 0
        self.prev_loss = loss
        return self.mu


@register(order=10)
class FedProx(Method):
    name = "fedprox"
    Params = FedProxParams
    # the adaptive-mu rule's state (AdaptiveMu's fields); mu is the proximal weight in use
    state = (
        State("mu", "value", init=lambda p: p.mu),
        State("prev_loss", "value"),
        State("n_down", "value", init=0),
    )
    reduces_to_fedavg = {"mu": 0.0}
    record_fields = (
        RecordField(
            "dissimilarity",
            "float64",
            "",
            "(1/N) sum_k |g - g_k|^2 at the round's start model",
            "dissimilarity=true",
        ),
        RecordField("mu", "float64", "", "the proximal weight used in the round", "adaptive=true"),
        RecordField(
            "global_train_loss",
            "float64",
            "nats",
            "mean cross-entropy over all training samples at the new model",
            "adaptive=true",
        ),
    )

    def init(self, w0, services):
        # the adaptive rule's first comparison is with the initial model's training loss
        if self.p.adaptive:
            self._adapt(services.train_loss(w0))

    def linear_step(self):
        return LinearStep(mu=self.mu)  # mu may change round to round when adaptive

    def local_step(self, ctx, w, grad_fn, local):
        _, g = grad_fn(w)
        if self.mu:
            g.add_(w - ctx.global_w, alpha=self.mu)
        return g

    def aggregate(self, ctx, res):
        new_w, rec = super().aggregate(ctx, res)  # the model after the server step
        services = ctx.services
        if self.p.dissimilarity:
            rec["dissimilarity"] = services.gradient_dissimilarity(ctx.global_w)
        if self.p.adaptive:
            rec["mu"] = self.mu
            # a BatchNorm model with its new running statistics (the engine's next global ones)
            rec["global_train_loss"] = services.train_loss(new_w, ctx, res)
            self._adapt(rec["global_train_loss"])
        return new_w, rec

    def _adapt(self, loss: float) -> None:
        rule = AdaptiveMu(self.mu, self.prev_loss, self.n_down)
        rule.update(loss)
        self.mu, self.prev_loss, self.n_down = rule.mu, rule.prev_loss, rule.n_down
