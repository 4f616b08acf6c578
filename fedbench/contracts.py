"""The contracts a registered name keeps, as checks a user can run on a plugin
(`fedbench check --contracts --plugin my_method.py`): the same properties the test suite holds
every built-in method, dataset, model and table to (tests/test_method_contracts.py,
tests/test_linear_step.py, tests/test_table_contracts.py), on tiny data, in seconds.

Each check is a function that raises AssertionError (or any error) with what is wrong; the
runner turns it into a Check row, so one failure never hides the others.
"""

from __future__ import annotations

import copy
import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass

from fedbench import plugins
from fedbench.config import RunConfig
from fedbench.errors import FedbenchError


@dataclass(frozen=True)
class Check:
    subject: str  # "method fedavg_l1", "table tau", ...
    name: str
    ok: bool
    detail: str = ""


def _run(subject: str, name: str, fn: Callable[[], str | None]) -> Check:
    try:
        return Check(subject, name, True, fn() or "")
    except Exception as e:
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        return Check(subject, name, False, f"{type(e).__name__}: {first}")


# ---------------------------------------------------------------- methods


def _tiny_engine(method: str, params: dict, data=None, slow=False, **fields):
    """A tiny_config run of the method; slow: with partial-work devices (PARTIAL_WORK)."""
    from fedbench.assembly import validate_config
    from fedbench.testing import PARTIAL_WORK, tiny_config, tiny_data
    from fedbench.training.engine import Engine

    fields = {**PARTIAL_WORK, **fields} if slow else fields
    cfg = tiny_config(method=method, method_params=params, **fields)
    return Engine(validate_config(cfg), data=data if data is not None else tiny_data())


def _help_and_defaults(method: str) -> str:
    from fedbench.methods import METHODS, describe_methods, method_params

    cls = METHODS[method]
    for f in dataclasses.fields(cls.Params):
        assert f.metadata.get("help"), f"parameter {f.name} has no metadata help"
    (row,) = [r for r in describe_methods() if r["method"] == method]
    assert row["about"], "no docstring (the class's or its module's first line)"
    method_params(method, {})
    return row["parameters"]


def _bad_parameters(method: str) -> None:
    """An unknown parameter and a wrong-typed value of each: one line naming both."""
    from fedbench.methods import METHODS, method_params

    probes = [{"no_such_parameter": 1}]
    for f in dataclasses.fields(METHODS[method].Params):
        d = f.default
        probes.append({f.name: "yes" if isinstance(d, bool) else 3 if isinstance(d, str) else "x"})
    for params in probes:
        try:
            method_params(method, params)
        except FedbenchError as e:
            msg, key = str(e), next(iter(params))
            assert "\n" not in msg and method in msg and key in msg, f"error for {params}: {msg}"
            continue
        raise AssertionError(f"accepted {params}")


def _two_rounds(method: str) -> str:
    eng = _tiny_engine(method, {}, slow=True, grad_clip=10.0)
    for r in (1, 2):
        rec = eng.run_round(r)
        assert rec["round"] == r and math.isfinite(rec["local_loss"]), f"round {r}: {rec}"
        assert math.isfinite(eng.eval_record()["test_loss"]), f"round {r}: test loss"
    assert bool(eng.w.isfinite().all()), "non-finite global model"
    return "2 rounds with slow devices (hetero=fedlga) and clipping"


def _state_round_trip(method: str) -> str:
    """Saved after 2 rounds and loaded into a fresh run, round 3 is the same bit for bit."""
    import torch

    a, b = (_tiny_engine(method, {}, slow=True, server_momentum=0.5) for _ in range(2))
    a.run_round(1)
    a.run_round(2)
    state = a.method.state_dict()
    saved = copy.deepcopy(state)
    b.w, b.buffers = a.w.clone(), a.buffers.clone()
    b.method.load_state_dict(state)
    a.run_round(3)
    b.run_round(3)
    assert torch.equal(a.w, b.w), "round 3 differs after load_state_dict"
    for name, v in saved.items():
        same = torch.equal(state[name], v) if isinstance(v, torch.Tensor) else state[name] == v
        assert same, f"state {name} saved by state_dict() changed in a later round"
    return f"state: {', '.join(sorted(state)) or 'none'}"


def _reduces_to_fedavg(method: str) -> str:
    import torch

    from fedbench.methods import METHODS
    from fedbench.testing import tiny_data

    params = METHODS[method].reduces_to_fedavg
    if params is None:
        return "declares no such values (reduces_to_fedavg None)"
    data = tiny_data(sizes=(8, 8, 8, 8))
    ref, eng = _tiny_engine("fedavg", {}, data), _tiny_engine(method, dict(params), data)
    for r in (1, 2):
        ref.run_round(r)
        eng.run_round(r)
        gap = float((eng.w - ref.w).abs().max())
        assert torch.allclose(eng.w, ref.w, atol=1e-12, rtol=0), f"round {r}: off by {gap:.3g}"
    return f"at {params}"


def _linear_step(method: str) -> str:
    """At the defaults and where it reduces to FedAvg: a declared LinearStep is what
    local_step computes."""
    from fedbench.methods import METHODS

    extra = METHODS[method].reduces_to_fedavg
    found = [_linear_step_at(method, {})]
    if extra:
        found.append(f"at {extra}: {_linear_step_at(method, dict(extra))}")
    return "; ".join(found)


def linear_step_probe(eng) -> tuple:
    """Round 3 of a (non-sequential) run after 2 trained rounds (server state nonzero), at a
    random w and mini-batch gradient g: (the method's LinearStep or None, the round's local
    state, local_step's d, the d the LinearStep declares; both None without a LinearStep)."""
    import torch

    for r in (1, 2):
        eng.run_round(r)
    plan = eng.plan_round(3)
    ctx = eng.context(3, plan, eng.lr_at(3))
    local = eng.method.client_start(ctx)
    step = eng.method.linear_step()
    if step is None:
        return step, local, None, None
    gen = torch.Generator().manual_seed(0)
    k, dim = plan.k, eng.model.dim
    w = eng.w + torch.randn(k, dim, generator=gen, dtype=eng.w.dtype)
    g = torch.randn(k, dim, generator=gen, dtype=eng.w.dtype)
    wd = eng.cfg.weight_decay

    def grad_fn(v):  # a quadratic's gradient (SAM's ascent point must move it), weight decay in
        return torch.zeros(k), g + 0.5 * v + wd * v

    d = eng.method.local_step(ctx, w, grad_fn, local)
    at = w
    if step.ascent:  # the loss gradient's ascent point (methods.base.LinearStep)
        h = g + 0.5 * w
        at = w + step.ascent * h / (h.norm(dim=1, keepdim=True) + 1e-7)
    want = step.scale * (g + 0.5 * at + wd * w) + step.mu * (w - ctx.global_w)
    if step.decay:
        want = want + local[step.decay] * w
    term = eng.method.grad_term(ctx, w, local) if step.term else None
    if term is not None:
        want = want + term
    return step, local, d, want + local[step.const] if step.const else want


def _linear_step_at(method: str, params: dict) -> str:
    """After 2 rounds (server state nonzero), weight decay on, at a random w and gradient."""
    from fedbench.methods.base import Method

    eng = _tiny_engine(method, params, weight_decay=0.01)
    if eng.method.sequential:
        return "sequential: trains through its own loop"
    step, _, d, want = linear_step_probe(eng)
    if step is None:
        assert type(eng.method).local_step is not Method.local_step, "plain SGD declares None"
        return "no LinearStep: the per-step path (local_step every step)"
    gap = float((d - want).abs().max())
    assert gap <= 1e-12, f"local_step differs from its LinearStep {step} by {gap:.3g}"
    return f"{step}: the fused / compiled paths"


METHOD_CHECKS = (
    ("parameters have help, defaults valid", _help_and_defaults),
    ("bad parameters: one line", _bad_parameters),
    ("2 rounds run, finite", _two_rounds),
    ("state round-trips", _state_round_trip),
    ("reduces to FedAvg where declared", _reduces_to_fedavg),
    ("local_step matches linear_step", _linear_step),
)


def method_checks(method: str) -> list[Check]:
    from fedbench.methods import method_class

    method_class(method)  # one line for an unknown name
    return [_run(f"method {method}", name, lambda f=f: f(method)) for name, f in METHOD_CHECKS]


# ---------------------------------------------------------------- datasets and models


def _dataset_config(name: str, model: str = "logreg", parts: int | None = None):
    from fedbench.data.registry import DATASETS

    natural = DATASETS.lookup(name).natural
    n = parts or 4
    return RunConfig(
        dataset=name,
        partition="natural" if natural else "iid",
        model=model,
        num_clients=n,
        clients_per_round=min(2, n),
        local_steps=2,
        batch_size=4,
        rounds=2,
        device="cpu",
    )


def _dataset_loads(name: str) -> str:
    from fedbench.data import load_arrays

    train_x, train_y, test_x, _, parts, classes, info, _ = load_arrays(_dataset_config(name))
    n = len(train_x)
    for i, p in enumerate(parts):
        bad = [j for j in p if not 0 <= int(j) < n]
        assert not bad, f"device {i} holds index {bad[0]}, outside 0..{n - 1}"
    return (
        f"{n} training / {len(test_x)} test samples of shape {tuple(train_x.shape[1:])}, "
        f"{classes} classes, {len(parts)} devices: {info.get('description', '')}"
    )


def _rounds_on(dataset: str, model: str = "logreg") -> str:
    from fedbench.assembly import validate_config
    from fedbench.data import load_arrays
    from fedbench.training.engine import Engine

    parts = len(load_arrays(_dataset_config(dataset))[4])
    eng = Engine(validate_config(_dataset_config(dataset, model, parts)))
    for r in (1, 2):
        rec = eng.run_round(r)
        assert math.isfinite(rec["local_loss"]), f"round {r}: local loss {rec['local_loss']}"
    loss = eng.eval_record()["test_loss"]
    assert math.isfinite(loss), f"test loss {loss}"
    return f"{model} on {dataset}: 2 FedAvg rounds, test loss {loss:.4g}"


def dataset_checks(name: str) -> list[Check]:
    subject = f"dataset {name}"
    return [
        _run(subject, "loads, arrays consistent", lambda: _dataset_loads(name)),
        _run(subject, "2 FedAvg rounds (logreg)", lambda: _rounds_on(name)),
    ]


def model_checks(name: str, dataset: str = "synthetic") -> list[Check]:
    return [
        _run(f"model {name}", f"2 FedAvg rounds on {dataset}", lambda: _rounds_on(dataset, name))
    ]


# ---------------------------------------------------------------- tables


def _table_cells(name: str) -> str:
    """Every cell of every dataset builds; every runs cell's configs validate and name a
    metric fedbench knows; every paper value it names exists."""
    from fedbench.tables import METRICS, TABLES, cell_config, lookup

    spec = TABLES[name]
    n = 0
    for ds in spec.datasets:
        for cell in spec.cells(ds):
            where = f"{ds} / {cell.row} / {cell.col}"
            if cell.paper is not None:
                assert lookup(cell.paper, cell.dataset) is not None, f"{where}: no paper value"
            if cell.kind != "runs":
                continue
            assert cell.metric in METRICS, f"{where}: unknown metric {cell.metric!r}"
            for seed in cell.seeds or spec.seeds:
                cell_config(cell, seed)
                n += 1
    return f"{n} run configs over {', '.join(spec.datasets)}"


def table_checks(name: str) -> list[Check]:
    return [_run(f"table {name}", "cells build and validate", lambda: _table_cells(name))]


# ---------------------------------------------------------------- what plugins registered


def plugin_names() -> dict[str, list[str]]:
    """The names each registry holds from loaded plugins (fedbench.plugins), by kind."""
    from fedbench.data.registry import DATASETS
    from fedbench.methods import METHODS
    from fedbench.models.registry import MODELS
    from fedbench.tables.spec import TABLES

    def mine(obj) -> bool:
        return plugins.owner(getattr(obj, "__module__", "") or "") is not None

    return {
        "methods": [n for n, c in METHODS.items() if mine(c)],
        "datasets": [n for n, s in DATASETS.items() if mine(s.load)],
        "models": [n for n, b in MODELS.items() if mine(b)],
        "tables": [n for n, t in TABLES.items() if mine(t.build)],
    }


def run_checks(names: dict[str, list[str]]) -> list[Check]:
    """The checks of every name given, by kind (methods, datasets, models, tables)."""
    out: list[Check] = []
    datasets = names.get("datasets", [])
    for m in names.get("methods", []):
        out += method_checks(m)
    for d in datasets:
        out += dataset_checks(d)
    for m in names.get("models", []):
        out += model_checks(m, datasets[0] if datasets else "synthetic")
    for t in names.get("tables", []):
        out += table_checks(t)
    return out
