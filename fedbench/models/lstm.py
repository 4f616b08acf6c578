"""FedProx's LSTMs (App. C), batched over k devices: embedding, 2-layer LSTM, Linear on the last
output. Inputs are int64 token ids [k, B, L]; each LSTM layer's recurrence is one bmm per time
step for all k models (fedbench/models/layers.py lstm_layer, equal to nn.LSTM, tested).

- charlstm (Shakespeare): 8-d embedding over an 80-char vocab, LSTM 100 units x 2, Linear(100, 80);
  input the 80 previous chars, target the next.
- sentlstm (Sent140): 300-d embedding, LSTM 256 units x 2, Linear(256, 2); 25 tokens in LEAF.
  Deviation: the paper looks the embedding up in frozen pretrained GloVe (400k words); without
  GloVe here the embedding is a trained parameter over a vocabulary of `vocab_size` words (the
  dataset's, passed by the data loader), since K copies of a 400k x 300 table would not fit.

Init: torch's defaults (nn.Embedding N(0,1), nn.LSTM/nn.Linear uniform); LEAF's TF code uses
Glorot-uniform, which differs only in scale.
"""

from __future__ import annotations

from torch import nn

from fedbench.models import layers as L
from fedbench.models.net import NetModel


class _LSTMNet(nn.Module):
    def __init__(self, vocab, embed, hidden, layers, num_classes):
        super().__init__()
        self.embed = nn.Embedding(vocab, embed)
        self.lstm = nn.LSTM(embed, hidden, layers, batch_first=True)
        self.fc = nn.Linear(hidden, num_classes)

    def forward(self, x):
        out, _ = self.lstm(self.embed(x))
        return self.fc(out[:, -1])


class BatchedLSTM(NetModel):
    def __init__(self, vocab_size: int, embed: int, hidden: int, num_classes: int, layers: int = 2):
        self.vocab_size, self.embed, self.hidden = vocab_size, embed, hidden
        self.num_classes, self.layers = num_classes, layers
        super().__init__()

    def module(self):
        return _LSTMNet(self.vocab_size, self.embed, self.hidden, self.layers, self.num_classes)

    def run(self, p, x, b, train):
        h = L.embedding(x, p["embed.weight"])
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


def sent_lstm(vocab_size: int, num_classes: int = 2) -> BatchedLSTM:
    """Sent140 sentiment model (FedProx App. C), embedding learned (see module docstring)."""
    return BatchedLSTM(vocab_size, embed=300, hidden=256, num_classes=num_classes)
