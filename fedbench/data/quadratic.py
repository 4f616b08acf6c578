"""SFL's quadratic experiment (liyipeng00/convergence quadratic.py), spec §5.1: M = 2 devices,
F_m(x) = a_m x^2 + b_m x with a scalar x (the quadratic model starts it at x0 = 10), one
sample (a_m, b_m) per device, exact gradients. x* = -(b1 + b2) / (2 (a1 + a2))."""

from __future__ import annotations

import numpy as np

from fedbench.data.registry import Arrays, register_dataset

# (a, b) of the two devices, Table 2 of the slides
GROUPS = {
    1: ((0.5, 0.0), (0.5, 0.0)),
    2: ((0.5, 1.0), (0.5, -1.0)),
    3: ((2 / 3, 1.0), (1 / 3, -1.0)),
    4: ((1.0, 1.0), (0.0, -1.0)),
}


def quadratic_coeffs(group: int, b_scale: float = 1.0) -> list[tuple[float, float]]:
    return [(a, b * b_scale) for a, b in GROUPS[group]]


def x_star(coeffs) -> float:
    a = sum(c[0] for c in coeffs)
    b = sum(c[1] for c in coeffs)
    return -b / (2 * a) + 0.0  # + 0.0: no "-0"


def quadratic_problem(group: int, b_scale: float = 1.0):
    """(x [2, 2, 1] float64: rows (a, b), labels [2], one index array per device, info)."""
    coeffs = quadratic_coeffs(group, b_scale)
    x = np.array([[[a], [b]] for a, b in coeffs], dtype=np.float64)
    y = np.zeros(len(coeffs), dtype=np.int64)
    parts = [np.array([i]) for i in range(len(coeffs))]
    info = {"x_star": x_star(coeffs), "coeffs": [list(c) for c in coeffs]}
    return x, y, parts, info


@register_dataset("quadratic", natural=True)
def load(cfg) -> Arrays:
    x, y, parts, info = quadratic_problem(cfg.quad_group, cfg.quad_b_scale)
    desc = (
        f"SFL quadratic group {cfg.quad_group} (b x {cfg.quad_b_scale:g}), x* = {info['x_star']:g}"
    )
    return Arrays(x, y, x, y, 1, desc, parts=parts, info=info)  # test data = training data
