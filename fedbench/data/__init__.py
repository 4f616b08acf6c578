"""Federated datasets: all samples resident on the torch device, one index array per device."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from fedbench.config import RunConfig
from fedbench.data import partition as part
from fedbench.data.idx import NORMALIZE, load_idx_dataset
from fedbench.data.synthetic import generate_synthetic


@dataclass
class FederatedData:
    train_x: torch.Tensor  # [n, ...] on the run's device
    train_y: torch.Tensor  # [n] int64
    test_x: torch.Tensor
    test_y: torch.Tensor
    client_indices: list[torch.Tensor]  # per device, indices into train_x (CPU, int64)
    num_classes: int
    info: dict = field(default_factory=dict)  # partition description and statistics

    @property
    def num_clients(self) -> int:
        return len(self.client_indices)

    @property
    def sizes(self) -> torch.Tensor:
        return torch.tensor([len(i) for i in self.client_indices])

    @property
    def input_shape(self) -> tuple[int, ...]:
        return tuple(self.train_x.shape[1:])

    def padded_indices(self) -> torch.Tensor:
        """[N, n_max] indices, rows padded with their first index (padding is always masked)."""
        n_max = int(self.sizes.max())
        out = torch.empty(self.num_clients, n_max, dtype=torch.long)
        for i, idx in enumerate(self.client_indices):
            out[i, : len(idx)] = idx
            out[i, len(idx) :] = idx[0]
        return out


def _images_to_tensor(x: np.ndarray, name: str, dtype: torch.dtype) -> torch.Tensor:
    mean, std = NORMALIZE[name]
    t = torch.from_numpy(x.astype(np.float32) / 255.0)
    return ((t - mean) / std).unsqueeze(1).to(dtype)  # [n, 1, 28, 28]


def make_partition(cfg: RunConfig, labels: np.ndarray) -> list[np.ndarray]:
    seed = cfg.effective_data_seed
    if cfg.partition == "iid":
        return part.iid(len(labels), cfg.num_clients, seed)
    if cfg.partition == "pclass":
        return part.pclass_shards(labels, cfg.num_clients, cfg.classes_per_client, seed)
    if cfg.partition == "dirichlet":
        return part.dirichlet(labels, cfg.num_clients, cfg.dirichlet_alpha, seed)
    raise AssertionError(cfg.partition)  # 'natural' is handled by the dataset itself


def load_federated(cfg: RunConfig, device: torch.device) -> FederatedData:
    dtype = getattr(torch, cfg.dtype)
    if cfg.dataset == "synthetic":
        trx, try_, tex, tey = generate_synthetic(
            cfg.syn_alpha, cfg.syn_beta, cfg.syn_iid, cfg.num_clients, cfg.effective_data_seed
        )
        sizes = np.array([len(y) for y in try_])
        offsets = np.concatenate([[0], np.cumsum(sizes)])
        parts = [np.arange(offsets[i], offsets[i + 1]) for i in range(len(sizes))]
        train_x = torch.from_numpy(np.concatenate(trx)).to(dtype)
        train_y_np = np.concatenate(try_)
        test_x = torch.from_numpy(np.concatenate(tex)).to(dtype)
        test_y = torch.from_numpy(np.concatenate(tey))
        num_classes = 10
        desc = (
            f"synthetic{'-iid' if cfg.syn_iid else ''}(alpha={cfg.syn_alpha}, beta={cfg.syn_beta})"
            ", natural split"
        )
    else:
        trx, train_y_np, tex, tey = load_idx_dataset(cfg.dataset, cfg.data_dir)
        train_y_np = train_y_np.astype(np.int64)
        parts = make_partition(cfg, train_y_np)
        train_x = _images_to_tensor(trx, cfg.dataset, dtype)
        test_x = _images_to_tensor(tex, cfg.dataset, dtype)
        test_y = torch.from_numpy(tey.astype(np.int64))
        num_classes = 10
        desc = f"{cfg.dataset}, partition={cfg.partition}"
    stats = part.partition_stats(train_y_np, parts)
    digest = _partition_digest(parts)
    return FederatedData(
        train_x=train_x.to(device),
        train_y=torch.from_numpy(train_y_np).to(device),
        test_x=test_x.to(device),
        test_y=test_y.to(device),
        client_indices=[torch.from_numpy(np.asarray(p, dtype=np.int64)) for p in parts],
        num_classes=num_classes,
        info={"description": desc, "partition_sha256": digest, **stats},
    )


def _partition_digest(parts: list[np.ndarray]) -> str:
    import hashlib

    h = hashlib.sha256()
    for p in parts:
        h.update(np.asarray(p, dtype=np.int64).tobytes())
        h.update(b"|")
    return h.hexdigest()[:16]
