"""FedProx's LSTMs (App. C), batched over k devices: embedding, 2-layer LSTM, Linear on the last
output. Inputs are int64 token ids [k, B, L]; each LSTM layer's recurrence is one bmm per time
step for all k models (fedbench/models/layers.py lstm_layer, equal to nn.LSTM, tested).

- charlstm (Shakespeare): 8-d embedding over an 80-char vocab, LSTM 100 units x 2, Linear(100, 80);
  input the 80 previous chars, target the next.
- sentlstm (Sent140): 300-d embedding, LSTM 256 units x 2, Linear(256, 2); 25 tokens in LEAF.
  With glove= (the paper) the embedding is the data's frozen GloVe table [V+1, d], shared by all
  devices and no parameter (a non-persistent buffer of the module). Deviation without GloVe:
  the embedding is a trained parameter over the training tweets' vocabulary (`vocab_size` words,
  the dataset's info), since GloVe is not shipped.

Init: torch's defaults (nn.Embedding N(0,1), nn.LSTM/nn.Linear uniform); LEAF's TF code uses
Glorot-uniform, which differs only in scale.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from fedbench.errors import FedbenchError
from fedbench.models import layers as L
from fedbench.models.net import NetModel
from fedbench.models.registry import register_model


class _LSTMNet(nn.Module):
    def __init__(self, vocab, embed, hidden, layers, num_classes, frozen=None):
        super().__init__()
        if frozen is None:
            self.embed = nn.Embedding(vocab, embed)
        else:  # not in the state_dict: no parameter, no buffer slot
            self.register_buffer("frozen_embed", frozen, persistent=False)
        self.lstm = nn.LSTM(embed, hidden, layers, batch_first=True)
        self.fc = nn.Linear(hidden, num_classes)

    def forward(self, x):
        table = self.embed.weight if hasattr(self, "embed") else self.frozen_embed
        out, _ = self.lstm(F.embedding(x, table))
        return self.fc(out[:, -1])


class BatchedLSTM(NetModel):
    family = "lstm"

    def __init__(
        self,
        vocab_size: int,
        embed: int,
        hidden: int,
        num_classes: int,
        layers: int = 2,
        frozen: torch.Tensor | None = None,
    ):
        """frozen: a fixed embedding table [vocab_size, embed] shared by all devices (GloVe)."""
        if frozen is not None and tuple(frozen.shape) != (vocab_size, embed):
            raise ValueError(
                f"frozen embedding {tuple(frozen.shape)}, expected {vocab_size, embed}"
            )
        self.vocab_size, self.embed, self.hidden = vocab_size, embed, hidden
        self.num_classes, self.layers, self.frozen = num_classes, layers, frozen
        super().__init__()

    def module(self):
        return _LSTMNet(
            self.vocab_size, self.embed, self.hidden, self.layers, self.num_classes, self.frozen
        )

    def run(self, p, x, b, train, mask=None):
        if self.frozen is None:
            h = L.embedding(x, p["embed.weight"])
        else:  # one table for all k devices
            h = F.embedding(x, self.frozen.to(p["fc.weight"].dtype))
        if self.layout.loop and h.shape[0] == 1:  # one device: torch's fused LSTM kernel
            names = ("weight_ih", "weight_hh", "bias_ih", "bias_hh")
            weights = [p[f"lstm.{n}_l{i}"][0] for i in range(self.layers) for n in names]
            h = L.lstm_one(h[0], weights, self.layers).unsqueeze(0)
            return L.linear(h[:, :, -1], p["fc.weight"], p["fc.bias"])
        for i in range(self.layers):
            h = L.lstm_layer(
                h,
                p[f"lstm.weight_ih_l{i}"],
                p[f"lstm.weight_hh_l{i}"],
                p[f"lstm.bias_ih_l{i}"],
                p[f"lstm.bias_hh_l{i}"],
            )
        return L.linear(h[:, :, -1], p["fc.weight"], p["fc.bias"])


def char_lstm(vocab_size: int = 80) -> BatchedLSTM:
    """Shakespeare next-character model (FedProx App. C)."""
    return BatchedLSTM(vocab_size, embed=8, hidden=100, num_classes=vocab_size)


def sent_lstm(vocab_size: int, num_classes: int = 2, glove: torch.Tensor | None = None):
    """Sent140 sentiment model (FedProx App. C): the frozen GloVe table glove [V+1, d] when the
    data has one, else a learned 300-d embedding (see module docstring)."""
    if glove is not None:
        return BatchedLSTM(len(glove), glove.shape[1], 256, num_classes, frozen=glove)
    return BatchedLSTM(vocab_size, embed=300, hidden=256, num_classes=num_classes)


TOKEN_DATASETS = {"charlstm": "shakespeare", "sentlstm": "sent140"}


def _vocab_size(cfg, info) -> int:
    """The dataset's vocabulary size: the LSTMs read token ids, which only some datasets have."""
    if "vocab_size" not in info:
        raise FedbenchError(
            f"model={cfg.model} reads token ids, and dataset {cfg.dataset} has none; "
            f"use dataset={TOKEN_DATASETS[cfg.model]}"
        )
    return info["vocab_size"]


@register_model("charlstm")
def _charlstm(cfg, input_shape, num_classes, info, embeddings) -> BatchedLSTM:
    return char_lstm(_vocab_size(cfg, info))


@register_model("sentlstm")
def _sentlstm(cfg, input_shape, num_classes, info, embeddings) -> BatchedLSTM:
    return sent_lstm(_vocab_size(cfg, info), num_classes, embeddings)
