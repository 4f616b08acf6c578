"""The two device-heterogeneity samplers."""

import torch

from fedbench.config import RunConfig
from fedbench.training.hetero import sample_work


def test_fedlga_exact_slow_count_and_tau_range():
    cfg = RunConfig(hetero="fedlga", rho=0.5, tau_max=4, local_epochs=5)
    taus = []
    for r in range(200):
        w = sample_work(cfg, 10, torch.Generator().manual_seed(r))
        assert int(w.slow.sum()) == 5  # exactly round(rho K)
        assert torch.all(w.tau[~w.slow] == 1)
        assert torch.all((w.tau >= 1) & (w.tau <= 4))
        assert torch.equal(w.units, 5 - w.tau + 1)
        taus += w.tau[w.slow].tolist()
    assert set(taus) == {1, 2, 3, 4}  # uniform over {1..tau_max}, tau = 1 included


def test_fedlga_rounding_half_up():
    cfg = RunConfig(hetero="fedlga", rho=0.25, tau_max=2, local_epochs=3)
    w = sample_work(cfg, 10, torch.Generator().manual_seed(0))
    assert int(w.slow.sum()) == 3  # 2.5 rounds up


def test_stragglers_count_and_epochs():
    for s, n_slow in ((0.0, 0), (0.5, 5), (0.9, 9)):
        cfg = RunConfig(hetero="stragglers", stragglers=s, local_epochs=20)
        seen = set()
        for r in range(50):
            w = sample_work(cfg, 10, torch.Generator().manual_seed(r))
            assert int(w.slow.sum()) == n_slow
            u = w.units[w.slow]
            assert torch.all((u >= 1) & (u <= 19))  # code: U{1..E-1}
            seen |= set(u.tolist())
        if n_slow:
            assert 19 in seen and 1 in seen
    cfg = RunConfig(hetero="stragglers", stragglers=1.0, local_epochs=3, straggler_epochs="paper")
    seen = set()
    for r in range(50):
        seen |= set(sample_work(cfg, 10, torch.Generator().manual_seed(r)).units.tolist())
    assert seen == {1, 2, 3}  # paper: U{1..E}
