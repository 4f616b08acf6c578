"""fedbench: reproduce federated-learning papers' comparison tables on one batched engine."""

__version__ = "0.1.0"
