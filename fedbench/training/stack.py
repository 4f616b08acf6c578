"""Stacked runs: R runs of a sweep train their rounds' devices as one engine pass.

A default-run round (logreg, E = 20) keeps on average 2 of its 10 rows busy: most steps run one
long device while the others have finished, and through the torch loop a step costs the same
dispatch whether it carries 1 row or 30. Stacking R runs (say seeds) fills those idle rows.

How: each run keeps its own thread of this process, its own Engine, runner, claim, run folder
and records (nothing in fedbench.training.runner knows about stacks). The engine's run_round checks
in at the round barrier (Member.train_local, or Member.idle for a round it trains without the
stack); when every member of the stack has checked in, one of the waiting members runs ONE
train_local over all requests' rows (plans concatenated and re-sorted by steps, rows' start models,
local state and, where the runs' arrays differ, their training data concatenated with offset batch
indices) and every member gets its own rows back, in its own order. A member leaves the stack
when its run ends for any reason (Stack.member's finally), so the others never wait for it.

Exact by construction: only requests whose local step is the same computation row by row are
merged (merge_key: same model class and shapes, lr, batch size, weight decay, momentum, clipping,
dtype, device, fast-path choice; no input pipeline, no BatchNorm buffers; plain SGD or a
SCAFFOLD-style drift, which reads nothing but the row's own state). Every batched operation of
the engine is row-wise, and each run's loss summaries are computed from its own rows of the
step losses, cut to its own steps, as a run alone computes them. Anything else trains alone.

What it gives: a stacked round runs as many steps as the longest device of all its runs, so R
runs gain at most (their rounds' steps one after another) / (the stack's steps): 3.1x for 9
seeds of the default run over 5 rounds, and a merged step with more rows costs somewhat more;
benchmarks/stacked_sweep.py measured 2.3x (wall, 2.5x CPU) through the torch loop, ~1x (0.96x
wall, 0.81x CPU) through the CPU fast path, whose rows run one after another anyway.
"""

from __future__ import annotations

import contextlib
import contextvars
import copy
import dataclasses
import threading
from dataclasses import dataclass

import torch

# the member the engines built in this thread belong to (set by Stack.member)
_CURRENT: contextvars.ContextVar[Member | None] = contextvars.ContextVar(
    "fedbench_stack", default=None
)

MAX_RUNS = 16  # runs in one stack (the 9-seed sweep fits)
MERGE_BYTES = 1 << 30  # merged plan tensors and concatenated data of one merged call, at most


def current() -> Member | None:
    """The stack member of this thread, or None (a run alone)."""
    return _CURRENT.get()


def merge_key(engine) -> tuple | None:
    """What must be equal for two runs' rounds to train as rows of one call, or None when this
    engine's rounds train alone. Conservative: only what is exact row by row."""
    from fedbench.models.mlp import BatchedMLP
    from fedbench.models.quadratic_model import BatchedQuadratic

    cfg, model, method, data = engine.cfg, engine.model, engine.method, engine.data
    if type(model) not in (BatchedMLP, BatchedQuadratic) or model.buffer_dim:
        return None
    if data.pipeline is not None or method.sequential:
        return None
    # the local step reads only the row's own state: scale g + local[const] (no mu (w - wg):
    # the merged call has one wg)
    step = method.linear_step()
    if step is None or step.mu or step.decay or step.ascent or step.term:
        return None
    return (
        type(model),
        model.dim,
        tuple(getattr(model, "sizes", ())),
        model.step_window,
        step.scale,
        step.const,
        cfg.batch_size,
        cfg.weight_decay,
        cfg.momentum,
        cfg.grad_clip,
        engine.dtype,
        engine.device,
        engine.fastpath,
        tuple(data.train_x.shape[1:]),
        data.train_x.dtype,
    )


@dataclass
class _Request:
    engine: object
    ctx: object
    plan: object
    local: dict
    key: tuple
    result: object = None  # LocalResult, or the exception of the merged call
    done: bool = False


@dataclass
class _Rows:
    """What a merged train_local produced, before the per-run loss summaries."""

    w: torch.Tensor
    local: dict
    step_loss: torch.Tensor
    grad_evals: torch.Tensor


class Stack:
    """The round barrier of R runs training in R threads of this process."""

    def __init__(self, size: int):
        self.size = size  # members at the start (recorded in each run's run.json)
        self._cond = threading.Condition()
        self._active = 0
        self._arrived: dict[Member, _Request | None] = {}  # this barrier's check-ins
        self._closed: list[list[_Request]] = []  # full barriers waiting for a member to train
        self._data: dict[tuple, tuple] = {}  # merged training data by its members' arrays
        self._arrays: list[tuple[torch.Tensor, torch.Tensor]] = []  # distinct (x, y) seen

    @contextlib.contextmanager
    def member(self):
        """Make this thread's engines members of the stack until the block ends, however it
        ends. Join every member (join()) before starting their threads."""
        m = Member(self)
        token = _CURRENT.set(m)
        try:
            yield m
        finally:
            _CURRENT.reset(token)
            self._leave(m)

    def join(self) -> None:
        """Count one more member: called once per member, before any thread runs."""
        with self._cond:
            self._active += 1

    def _leave(self, member: Member) -> None:
        with self._cond:
            self._active -= 1
            self._arrived.pop(member, None)  # an idle check-in: nothing to train
            self._close_if_full()

    # ---------------------------------------------------------------- the barrier
    def _check_in(self, member: Member, req: _Request | None):
        """Check in at the barrier (req None: idle this round) and return req's result. A
        member checks in once per barrier: an idle one that comes back before the barrier
        closed waits for it, so the runs stay in step round by round."""
        with self._cond:
            while member in self._arrived:
                self._cond.wait()
            self._arrived[member] = req
            self._close_if_full()
            if req is None:
                return None
            while not req.done:
                batch = self._closed.pop(0) if self._closed else None
                if batch is None:
                    self._cond.wait()
                    continue
                self._cond.release()  # train outside the lock
                try:
                    self._train(batch)
                finally:
                    self._cond.acquire()
                    self._cond.notify_all()
        if isinstance(req.result, BaseException):
            raise req.result
        return req.result

    def _close_if_full(self) -> None:
        """Under the lock: once every active member has checked in, the barrier's requests
        are ready to train (by whichever waiting member takes them)."""
        if self._arrived and len(self._arrived) >= self._active:
            reqs = [r for r in self._arrived.values() if r is not None]
            self._arrived = {}
            if reqs:
                self._closed.append(reqs)
            self._cond.notify_all()

    def _train(self, reqs: list[_Request]) -> None:
        """Train a full barrier's requests: each group of mergeable ones as one call."""
        groups: dict[tuple, list[_Request]] = {}
        for r in reqs:
            groups.setdefault(r.key, []).append(r)
        try:
            for group in groups.values():
                for part in self._by_memory(group):
                    try:
                        results = self._merged(part)
                    except BaseException as e:  # every member of the call fails with it
                        results = [e] * len(part)
                    for r, res in zip(part, results):
                        r.result, r.done = res, True
        finally:  # whatever went wrong here, no member waits for ever
            for r in reqs:
                if not r.done:
                    r.result, r.done = RuntimeError("stacked training stopped"), True

    def _by_memory(self, group: list[_Request]) -> list[list[_Request]]:
        """Cut a group into calls whose merged [rows, S, B] plan tensors (padded to the longest
        S) fit MERGE_BYTES; a request too big alone is a call of its own."""
        parts: list[list[_Request]] = []
        rows = s_max = 0
        for r in group:
            idx, wt = r.plan.batch_idx, r.plan.batch_weight
            per_cell = idx[:1, :1].nbytes + wt[:1, :1].nbytes  # B indices and B weights
            k, s = r.plan.k, idx.shape[1]
            if not parts or (rows + k) * max(s_max, s) * per_cell > MERGE_BYTES:
                parts.append([])
                rows = s_max = 0
            parts[-1].append(r)
            rows, s_max = rows + k, max(s_max, s)
        return parts

    # ---------------------------------------------------------------- one merged call
    def _merged(self, reqs: list[_Request]) -> list:
        from fedbench.methods import LocalResult

        if len(reqs) == 1:
            r = reqs[0]
            return [r.engine.train_local(r.ctx, r.plan, r.engine.w, r.local)]
        lead = reqs[0].engine
        data, offsets = self._merged_data([r.engine for r in reqs])
        plan, order = _merged_plan([r.plan for r in reqs], offsets)
        pos = torch.argsort(order)  # merged row of each concatenated row
        start = torch.cat([r.engine.w.expand(r.plan.k, -1) for r in reqs])[order]
        local = {n: torch.cat([r.local[n] for r in reqs])[order] for n in reqs[0].local}
        ctx = dataclasses.replace(
            reqs[0].ctx,
            clients=plan.clients.to(lead.device),
            n_samples=torch.cat([r.ctx.n_samples for r in reqs])[order],
            steps=plan.steps.to(lead.device),
            units=plan.units.to(lead.device),
            tau=plan.tau.to(lead.device),
            weights=torch.cat([r.ctx.weights for r in reqs])[order],
        )
        runner = copy.copy(lead)  # the lead's engine on the merged data, returning raw rows
        runner.data = data
        runner._local_result = lambda plan, w, local, loss, evals, buf: _Rows(w, local, loss, evals)
        rows = runner.train_local(ctx, plan, start, local)
        out, at = [], 0
        for r in reqs:
            mine = pos[at : at + r.plan.k].to(rows.w.device)
            at += r.plan.k
            step_loss = rows.step_loss[mine, : r.plan.batch_idx.shape[1]]
            mean_loss, last_loss = r.engine._loss_summaries(r.plan, step_loss)
            out.append(
                LocalResult(
                    w=rows.w[mine],
                    global_w=r.engine.w,
                    local={n: t[mine] for n, t in rows.local.items()},
                    mean_loss=mean_loss,
                    last_epoch_loss=last_loss,
                    grad_evals=rows.grad_evals[mine],
                )
            )
        return out

    def _merged_data(self, engines) -> tuple:
        """The members' training arrays as one data set (each distinct array once; equal arrays,
        e.g. FMNIST under any seed, are shared) and each engine's offset into it."""
        ids = tuple(self._array_id(e.data) for e in engines)
        distinct = list(dict.fromkeys(ids))
        if ids not in self._data:
            if len(self._data) > 8:  # members come and go: keep the cache small
                self._data.clear()
            xs = [self._arrays[i][0] for i in distinct]
            ys = [self._arrays[i][1] for i in distinct]
            base = engines[0].data
            merged = base
            if len(distinct) > 1:
                merged = dataclasses.replace(base, train_x=torch.cat(xs), train_y=torch.cat(ys))
            starts = [0]
            for x in xs[:-1]:
                starts.append(starts[-1] + len(x))
            offset_of = dict(zip(distinct, starts))
            self._data[ids] = (merged, [offset_of[i] for i in ids])
        return self._data[ids]

    def _array_id(self, data) -> int:
        """Index of this data's (train_x, train_y) among the distinct arrays seen (by value)."""
        x, y = data.train_x, data.train_y
        with self._cond:
            for i, (xa, ya) in enumerate(self._arrays):
                same = xa is x or (
                    xa.shape == x.shape and xa.dtype == x.dtype and torch.equal(xa, x)
                )
                if same and (ya is y or (ya.shape == y.shape and torch.equal(ya, y))):
                    return i
            self._arrays.append((x, y))
            return len(self._arrays) - 1


def _merged_plan(plans, offsets):
    """The plans' rows as one plan, sorted by steps (most first, stable) as the engine needs,
    batch indices shifted into the merged data; and the order (merged row -> concatenated row).
    The [K, S, B] tensors are the big part (~100 MB for 9 default runs): each is written once,
    straight into its sorted rows (past a row's own S: index 0, weight 0, never read)."""
    from fedbench.training.round_plan import RoundPlan

    s_max = max(p.batch_idx.shape[1] for p in plans)
    steps = torch.cat([p.steps for p in plans])
    order = torch.argsort(steps, descending=True, stable=True)
    pos = torch.argsort(order)  # merged row of each concatenated row
    first = plans[0]
    dev = first.batch_idx.device
    n, b = len(steps), first.batch_idx.shape[2]
    idx = torch.zeros(n, s_max, b, dtype=first.batch_idx.dtype, device=dev)
    wt = torch.zeros(n, s_max, b, dtype=first.batch_weight.dtype, device=dev)
    at = 0
    for p, off in zip(plans, offsets):
        rows, s_p = pos[at : at + p.k].to(dev), p.batch_idx.shape[1]
        at += p.k
        idx[rows, :s_p] = p.batch_idx + off if off else p.batch_idx
        wt[rows, :s_p] = p.batch_weight

    def cat(name):
        return torch.cat([getattr(p, name) for p in plans])[order]

    plan = RoundPlan(
        cat("clients"),
        cat("units"),
        cat("tau"),
        cat("slow"),
        steps[order],
        cat("batches_per_epoch"),
        idx,
        wt,
        0,
        [],
    )
    return plan, order


class Member:
    """One run's place in a stack: what its engine calls instead of training alone."""

    def __init__(self, stack: Stack):
        self.stack = stack

    @property
    def size(self) -> int:
        return self.stack.size

    def idle(self) -> None:
        """This round trains without the stack (nobody trains, or a sequential method)."""
        self.stack._check_in(self, None)

    def train_local(self, engine, ctx, plan, local: dict):
        """engine.train_local(ctx, plan, engine.w, local), with the stack-mates' rows where
        their steps are the same computation; else alone (after checking in idle)."""
        key = merge_key(engine)
        if key is None:
            self.idle()
            return engine.train_local(ctx, plan, engine.w, local)
        return self.stack._check_in(self, _Request(engine, ctx, plan, local, key + (ctx.lr,)))
