"""Stacked runs (fedbench.training.stack): which of a sweep's runs may train as one stack, and
running a stack, one thread a run."""

from __future__ import annotations

import functools

from fedbench.config import RunConfig
from fedbench.devices import resolve_device
from fedbench.identity import run_id
from fedbench.sweep.one_run import OnDone, OnRound, OnStart, Outcome, execute_run

# Config fields that never change what a round's local step computes row by row (which runs
# a stack can merge is decided again at every round by fedbench.training.stack.merge_key, exactly;
# this key only picks who shares a stack): the seeds, the heterogeneity draws' parameters, how long
# a run lasts and what it evaluates, the preset's name. Everything else (data set and
# partition, model, K, E, B, lr and its decay, momentum, clipping, dtype, device, server
# step) must be equal. Method parameters are dropped only for methods whose local step is
# plain SGD or SCAFFOLD-style drift (the only ones merge_key merges): their parameters act
# on the server side or on the drift's value, never on the step's form.
STACK_FREE_FIELDS = (
    "seed",
    "data_seed",
    "rho",
    "tau_max",
    "stragglers",
    "straggler_epochs",
    "rounds",
    "stop_at_target",
    "target_acc",
    "eval_every",
    "eval_train",
    "eval_local",
    "preset",
)
# dispatch-bound models: a step of K rows costs what a step of R*K rows costs (through the torch
# loop); the FMNIST MLP's rounds are GEMM-bound and gain nothing (~1x, issue 11)
DISPATCH_BOUND_MODELS = ("logreg", "quadratic")


def _local_step_form(cfg: RunConfig) -> str | None:
    """ "plain" (SGD on the gradient), "drift" (a local step that reads none of the Params:
    SCAFFOLD's g + c - c_i), "other"
    (FedProx and the like: plain only at some parameters or states, which merge_key sees
    round by round), or None for a sequential method (SFL: never stacked)."""
    from fedbench.methods import build_method
    from fedbench.methods.base import Method

    m = build_method(cfg.method, cfg.method_params)  # before setup: read class attributes only
    if m.sequential:
        return None
    if type(m).local_step is Method.local_step:
        return "plain"
    return "drift" if m.local_step_params == () else "other"


def stack_key(cfg: RunConfig) -> tuple | None:
    """Runs with equal keys may train as one stack; None: this run trains alone."""
    import json

    form = _local_step_form(cfg)
    if cfg.augment or cfg.resize or form is None:
        return None
    drop = STACK_FREE_FIELDS + (("method_params",) if form in ("plain", "drift") else ())
    d = {k: v for k, v in cfg.to_dict().items() if k not in drop}
    return tuple(sorted((k, json.dumps(v, sort_keys=True)) for k, v in d.items()))


def stack_pays(cfg: RunConfig) -> bool:
    """Whether stacking is worth it by default (measured: benchmarks/stacked_sweep.py): small
    models whose rounds go through the torch loop (a GPU, or FEDBENCH_FASTPATH=0) with a local
    step that always merges. On CPU the compiled fast path already runs such rounds without
    dispatch (stacking: ~1x), and bigger models' rounds are bound by their GEMMs (~1x)."""
    from fedbench.training import fastpath

    if cfg.model not in DISPATCH_BOUND_MODELS or _local_step_form(cfg) not in ("plain", "drift"):
        return False
    # the fast path takes every plain or drift round of these models on CPU
    return not (fastpath.ENABLED and resolve_device(cfg.device).type == "cpu")


def stack_groups(
    todo: list[RunConfig], stack: bool | None, max_runs: int | None = None
) -> list[list[RunConfig]]:
    """The todo list as stacks, in todo order of their first run: runs with one stack_key
    together (at most max_runs, default fedbench.training.stack.MAX_RUNS), the rest alone. stack
    None: only where stack_pays; False: every run alone."""
    from fedbench.training.stack import MAX_RUNS

    cap = max_runs or MAX_RUNS
    groups: dict[object, list[list[RunConfig]]] = {}
    out: list[list[RunConfig]] = []
    for i, cfg in enumerate(todo):
        key = stack_key(cfg) if stack is not False else None
        if key is None or (stack is None and not stack_pays(cfg)):
            key = ("alone", i)
        chunks = groups.setdefault(key, [])
        if not chunks or len(chunks[-1]) >= cap:
            chunks.append([])
            out.append(chunks[-1])
        chunks[-1].append(cfg)
    return out


def execute_stack(
    cfgs: list[RunConfig],
    results: str,
    repair: set[str],
    threads: int | None,
    on_start: OnStart,
    on_done: OnDone,
    on_round: OnRound | None = None,
    checkpoint: dict | None = None,
) -> None:
    """Run cfgs as one stack: one thread each, their rounds' local training merged
    (fedbench.training.stack). Each run is an ordinary execute_run (claim, folder, records)."""
    import threading

    from fedbench.training.stack import Stack

    stack = Stack(len(cfgs))
    errors: list[BaseException] = []  # from the callbacks (execute_run never raises)

    def one(cfg: RunConfig) -> None:
        try:
            with stack.member():
                on_start(cfg)
                rid = run_id(cfg)
                rounds = functools.partial(on_round, cfg) if on_round else None
                d = execute_run(
                    cfg.to_dict(), results, rid in repair, threads, None, rounds, checkpoint
                )
                on_done(cfg, Outcome.from_dict(d))
        except BaseException as e:
            errors.append(e)

    for _ in cfgs:
        stack.join()
    workers = [threading.Thread(target=one, args=(cfg,), daemon=True) for cfg in cfgs]
    for t in workers:
        t.start()
    _join_all(workers)
    if errors:
        raise errors[0]


def _join_all(workers) -> None:
    """Join the threads, whatever signal comes meanwhile: a stop reaches their runs at their
    rounds' ends (fedbench.training.signals), which then record themselves interrupted; the
    stop is raised once all have."""
    stop: KeyboardInterrupt | None = None
    for t in workers:
        while t.is_alive():
            try:
                t.join()
            except KeyboardInterrupt as e:
                stop = stop or e
    if stop is not None:
        raise stop
