"""FedAvg's round against a hand-computed case on a quadratic (exact gradients)."""

from methods.quadratic import local_gd, quad_engine


def test_fedavg_quadratic_by_hand():
    eng = quad_engine("fedavg")
    eng.run_round(1)
    expected = 0.5 * local_gd(10.0, 1.0, -2.0, 3, 0.1) + 0.5 * local_gd(10.0, 0.5, 1.0, 3, 0.1)
    assert abs(float(eng.w) - expected) < 1e-12
