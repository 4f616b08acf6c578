"""Round planning is pure (fedbench.training.round_plan): a function of the config, the
devices' data and the round, with no model or engine; the engine and the per-device reference
loop share it."""

from __future__ import annotations

import ast
from pathlib import Path

import torch
from conftest import tiny_config, tiny_data

from fedbench.training import round_plan as planning
from fedbench.training.engine import Engine

ROOT = Path(__file__).resolve().parents[1] / "fedbench" / "training"


def fedbench_imports(module: str) -> set[str]:
    """The fedbench modules a module imports at run time (module level and inside functions;
    not those under `if TYPE_CHECKING:`, which are for annotations only)."""
    tree = ast.parse((ROOT / f"{module}.py").read_text())
    typing_only = {
        id(n)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"
        for n in ast.walk(node)
    }
    found = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("fedbench"):
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("fedbench"))
    return found


def test_plan_needs_no_engine_model_or_method():
    deps = fedbench_imports("round_plan")
    assert not {d for d in deps if d.startswith(("fedbench.training.engine", "fedbench.models"))}
    assert not {d for d in deps if d.startswith(("fedbench.methods", "fedbench.data"))}


def test_reference_loop_uses_plan_alone():
    deps = fedbench_imports("reference")
    assert not {d for d in deps if d.startswith("fedbench.training.engine")}
    assert "fedbench.training.round_plan" in deps


def test_plan_from_config_and_data_equals_the_engines():
    cfg = tiny_config(hetero="fedlga", rho=0.5, tau_max=2, aggregation="uniform", lr_decay=0.9)
    data = tiny_data()
    eng = Engine(cfg, data=data)
    for r in (1, 2, 3):
        got = planning.plan_round(cfg, r, data.sizes, data.client_indices)
        want = eng.plan_round(r)
        for name in ("clients", "units", "tau", "slow", "steps", "batch_idx", "batch_weight"):
            assert torch.equal(getattr(got, name), getattr(want, name)), name
        assert planning.lr_at(cfg, r) == eng.lr_at(r) == 0.1 * 0.9 ** (r - 1)
        n = data.sizes[got.clients].double()
        assert torch.equal(planning.aggregation_weights(cfg, n), eng.context(r, want, 0.1).weights)
