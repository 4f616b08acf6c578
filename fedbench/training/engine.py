"""The shared training engine: one round loop for every method.

The K sampled devices train together: their models are rows of one [K, D] tensor, every local
step is one batched forward/backward over all still-active devices, and the data stays on the
torch device. Devices are ordered by how many steps they run (most first), so at step s the active
devices are the first k_s rows: partial work is a shorter prefix, never a special case, and
finished devices cost nothing.

Models with BatchNorm also carry buffers (running statistics, [Db] flat like the parameters):
the engine keeps the global buffers, gives each training device its own copy [K, Db] at the
round's start, lets train-mode steps update them in place, averages them after the round like
FedAvg averages parameters (evaluation.merged_buffers), and evaluates with them. Models without
buffers (buffer_dim == 0) get no `buffers=` argument anywhere: their code path is unchanged.

This module is the training core only: who trains and on which batches comes from
fedbench.training.round_plan (pure), evaluation and full-batch gradients from
fedbench.training.evaluation (also what methods reach through ctx.services); the Engine's
plan_round / evaluate / full_batch_grads / eval_record are thin wrappers that fill in its own
config, data, model and global state.
"""

from __future__ import annotations

import math
import time

import torch

from fedbench.config import RunConfig
from fedbench.data import FederatedData, load_federated
from fedbench.devices import apply_tf32, generator, resolve_device, synchronize, take_rows
from fedbench.methods import LocalResult, RoundContext, Setup, build_method
from fedbench.methods.base import LinearStep, step_paths
from fedbench.models import build_model
from fedbench.training import evaluation, fastpath, memory, threads, window_const, window_gram
from fedbench.training import round_plan as planning
from fedbench.training import stack as stacking
from fedbench.training.round_plan import RoundPlan


class Engine:
    def __init__(self, cfg: RunConfig, data: FederatedData | None = None):
        self.cfg = cfg
        self.device = resolve_device(cfg.device)
        if self.device.type == "cpu":  # big temporaries reuse mapped pages (memory.py)
            memory.keep_freed()
        self.tf32 = apply_tf32(self.device)  # FEDBENCH_TF32 (devices.py; off: full float32)
        self.dtype = getattr(torch, cfg.dtype)
        self.data = data if data is not None else load_federated(cfg, self.device)
        self.model = build_model(
            cfg, self.data.input_shape, self.data.num_classes, self.data.info, self.data.embeddings
        )
        self.threads = threads.apply(self.model, cfg)  # torch CPU threads (threads.py)
        self.model.configure(self.device, self.threads)  # conv nets' layout (models/layouts.py)
        self.method = build_method(cfg.method, cfg.method_params)
        self.fastpath = fastpath.ENABLED  # compiled loops (fastpath.py; the setter below)
        fastpath.warm_up(self)
        self.stack = stacking.current()  # set in a stacked sweep's threads (stack.py)
        self.sizes = self.data.sizes  # CPU [N]
        self.w = self.model.init(generator(cfg.seed, "init"), self.dtype).to(self.device)
        # global buffers [Db] (BatchNorm running statistics); empty for most models
        self.buffers = self.model.init_buffers(self.dtype).to(self.device)
        self.method.setup(
            Setup(
                num_clients=self.data.num_clients,
                dim=self.model.dim,
                device=self.device,
                dtype=self.dtype,
                cfg=cfg,
                client_sizes=self.sizes.to(self.device, self.dtype),
            )
        )
        # state that starts from w^0 (a checkpoint replaces it)
        self.method.init(self.w, evaluation.RoundServices(self.model, self.data, self.buffers))
        # the next round's plan, built while this one trains (round_plan.py)
        self.plans = planning.PlanAhead(lambda r: self.plan_round(r))

    # ------------------------------------------------------------------ planning
    def device_grams(self):
        """window_gram.DeviceGrams, made at the first windowed round (None where they do not
        apply)."""
        if not hasattr(self, "_grams"):
            self._grams = window_gram.device_grams(self)
        return self._grams

    @property
    def fastpath(self) -> bool:
        """Compiled loops on: fastpath.py's whole rounds and a model's compiled steps."""
        return self._fastpath

    @fastpath.setter
    def fastpath(self, on: bool) -> None:
        self._fastpath = self.model.compiled_steps = bool(on)

    def plan_round(self, r: int) -> RoundPlan:
        """Round r's plan (round_plan.py: a pure function of the config, the data and r)."""
        return planning.plan_round(
            self.cfg,
            r,
            self.sizes,
            self.data.client_indices,
            self.method.drops_stragglers,
            self.device,
        )

    def lr_at(self, r: int) -> float:
        return planning.lr_at(self.cfg, r)

    # ------------------------------------------------------------------ local training
    def context(self, r: int, plan: RoundPlan, lr: float) -> RoundContext:
        dev = self.device
        n_samples = self.sizes[plan.clients].to(dev, self.dtype)
        weights = planning.aggregation_weights(self.cfg, n_samples)
        return RoundContext(
            round=r,
            lr=lr,
            global_w=self.w,
            clients=plan.clients.to(dev),
            n_samples=n_samples,
            steps=plan.steps.to(dev),
            units=plan.units.to(dev),
            tau=plan.tau.to(dev),
            weights=weights,
            cfg=self.cfg,
            services=evaluation.RoundServices(self.model, self.data, self.buffers),
        )

    def train_local(
        self,
        ctx: RoundContext,
        plan: RoundPlan,
        start: torch.Tensor,
        local: dict,
        start_buffers: torch.Tensor | None = None,
    ) -> LocalResult:
        """Run every device of `plan` from `start` ([D] or [K, D]) as one batched computation;
        models with buffers start from `start_buffers` ([Db] or [K, Db], default: the global
        buffers) and each device's final buffers come back in the result. The round goes
        through one of the round paths (methods.base.ROUND_PATHS; round_path says which)."""
        k = plan.k
        w = start.expand(k, -1).clone() if start.dim() == 1 else start.clone()
        buf = None
        if self.model.buffer_dim:
            b0 = self.buffers if start_buffers is None else start_buffers
            buf = b0.expand(k, -1).clone() if b0.dim() == 1 else b0.clone()
        step = self.method.linear_step()
        path = self.round_path(step, w, buf)
        return getattr(self, f"_round_{path}")(ctx, plan, w, local, buf, step)

    def round_path(self, step: LinearStep | None, w: torch.Tensor, buf) -> str:
        """Which of methods.base.ROUND_PATHS trains a round whose local step is `step` (the
        method's LinearStep or None): the fastest of step_paths(step) that this model and config
        allow. The first three run a declared linear step without calling the method;
        "stepwise" calls local_step at every step (any method; ~20x slower than compiled on the
        default run: an autograd pass and a Python call per step, benchmarks/round_paths.py)."""
        if fastpath.eligible(self, step, w):
            return "compiled"
        paths, cfg = step_paths(step), self.cfg
        free = not cfg.momentum and cfg.grad_clip is None
        if free and "window" in paths and buf is None and self.model.step_window > 1:
            return "window"
        return "fused" if free and "fused" in paths else "stepwise"

    def _round_compiled(self, ctx, plan, w, local, buf, step) -> LocalResult:
        """fastpath.py: one compiled loop over the round's devices and steps."""
        step_loss = fastpath.run_round(self, ctx, plan, w, local, step)
        return self._local_result(plan, w, local, step_loss, plan.steps.to(self.device), buf)

    def _round_window(self, ctx, plan, w, local, buf, step) -> LocalResult:
        """The model's sgd_steps over windows of model.step_window steps (the MLP's GEMMs)."""
        step_loss = self._step_losses(plan)
        aug = self._augment(ctx, plan)
        lr_w, wd, const = self._window_terms(ctx, local, plan.k, step)
        active = self._active(plan)
        products, grams = self._window_products(plan, const)
        # the constant's first-layer sums, carried from window to window (BatchedMLP's
        # const_due) and subtracted once, not in a pass over the first layer every window
        due = None
        if const is not None and hasattr(self.model, "apply_const_due"):
            due = torch.zeros(plan.k, dtype=w.dtype, device=w.device)
        args = (lr_w, wd, const, step.ascent, products, due)
        self._sgd_windows(plan, w, step_loss, active, aug, *args, grams)
        if due is not None:
            self.model.apply_const_due(w, const, due, lr_w)
        passes = 2 if step.ascent else 1  # SAM: the ascent point's gradient too
        return self._local_result(
            plan, w, local, step_loss, plan.steps.to(self.device) * passes, buf
        )

    def _window_products(self, plan, const):
        """(X C1^T of the constant, once a round: window_const; the windows' Grams, from each
        device's X X^T once a run: window_gram), each None where it does not apply. Both read
        where the round's samples sit in their devices: found once."""
        products, grams, pays = None, self.device_grams(), window_const.pays(self, const)
        if grams is None and not pays:
            return None, None
        clients = [int(c) for c in plan.clients.cpu()]
        places = self.data.positions(clients, plan.batch_idx)
        if pays:
            products = window_const.ConstProducts(self.model, self.data, clients, places, const)
        return products, grams.for_round(clients, places) if grams is not None else None

    @torch.no_grad()
    def _round_fused(self, ctx, plan, w, local, buf, step) -> LocalResult:
        """Plain SGD plus a fixed drift and the method's grad_term (LinearStep.term) at each
        step's w: the model fuses gradient and update (sgd_step)."""
        step_loss, aug, drift = self._step_losses(plan), self._augment(ctx, plan), step.const
        lr, wd = ctx.lr, self.cfg.weight_decay
        padded = self._padded(plan, buf)
        for s, ka in enumerate(self._active(plan)):
            wk = w[:ka]
            xb, yb, bw = self._batch(plan, s, ka, aug)
            bkw = self._buffer_args(buf, padded, s, ka)
            term = None
            if step.term:  # at the step's starting w
                term = self.method.grad_term(ctx, wk, {n: t[:ka] for n, t in local.items()})
            step_loss[:ka, s] = self.model.sgd_step(wk, xb, yb, bw, lr, wd, **bkw)
            if drift is not None:
                wk.sub_(local[drift][:ka], alpha=lr)
            if term is not None:
                wk.sub_(term, alpha=lr)
        return self._local_result(plan, w, local, step_loss, plan.steps.to(self.device), buf)

    def _round_stepwise(self, ctx, plan, w, local, buf, step) -> LocalResult:
        """The method's local_step at every step, with momentum and clipping if configured."""
        lr, mom = ctx.lr, self.cfg.momentum
        if mom:
            local["_momentum"] = torch.zeros_like(w)
        step_loss, aug = self._step_losses(plan), self._augment(ctx, plan)
        grad_evals = torch.zeros(plan.k, dtype=torch.long, device=self.device)
        padded = self._padded(plan, buf)
        for s, ka in enumerate(self._active(plan)):
            wk = w[:ka]
            xb, yb, bw = self._batch(plan, s, ka, aug)
            bkw = self._buffer_args(buf, padded, s, ka)
            lk = {name: t[:ka] for name, t in local.items()}
            grad_fn, first = self._grad_fn(xb, yb, bw, bkw, grad_evals, ka)
            with torch.no_grad():
                d = self.method.local_step(ctx, wk, grad_fn, lk)
                if mom:
                    d = lk["_momentum"].mul_(mom).add_(d)
                wk.sub_(d, alpha=lr)
            step_loss[:ka, s] = first[0]
        return self._local_result(plan, w, local, step_loss, grad_evals, buf)

    def _grad_fn(self, xb, yb, bw, bkw, grad_evals, ka):
        """(grad_fn for local_step, the list that receives the step's first losses). The
        step's first gradient (at the devices' current models) records the batch in the
        running statistics; further ones on the same batch (FedSAM's perturbed point) use
        batch statistics only, so each batch is recorded once."""
        cfg, model, first = self.cfg, self.model, []

        def grad_fn(v):
            kw = {n: a for n, a in bkw.items() if n != "buffers"} if first else bkw
            losses, g = model.loss_and_grad(v, xb, yb, bw, **kw)
            if cfg.grad_clip is not None:
                norm = g.norm(dim=1, keepdim=True)
                g.mul_((cfg.grad_clip / (norm + 1e-6)).clamp(max=1.0))
            if cfg.weight_decay:
                g.add_(v, alpha=cfg.weight_decay)
            grad_evals[:ka] += 1
            if not first:
                first.append(losses)
            return losses, g

        return grad_fn, first

    @staticmethod
    def _padded(plan: RoundPlan, buf) -> list[list[bool]] | None:
        """Models with buffers (BatchNorm): which rows' batches have padding, [S][K] on the
        host, read once a round so that the steps need no host synchronisation."""
        if buf is None:
            return None
        return (plan.batch_weight == 0).any(2).t().tolist()

    @staticmethod
    def _buffer_args(buf, padded, s: int, ka: int) -> dict:
        """Step s's buffer arguments of the first ka rows (buffers updated in place)."""
        if buf is None:
            return {}
        return {"buffers": buf[:ka], "padded": padded[s][:ka]}

    def _step_losses(self, plan: RoundPlan) -> torch.Tensor:
        return torch.zeros(plan.k, plan.batch_idx.shape[1], dtype=self.dtype, device=self.device)

    @staticmethod
    def _active(plan: RoundPlan) -> list[int]:
        """Devices still training at each step: a prefix of the rows (sorted by steps)."""
        s_max = plan.batch_idx.shape[1]
        return (plan.steps.unsqueeze(1) > torch.arange(s_max)).sum(0).tolist()

    def _augment(self, ctx: RoundContext, plan: RoundPlan):
        """The round's per-sample augmentation draws, from each device's stream (or None)."""
        s_max = plan.batch_idx.shape[1]
        return self.data.draw_augment(
            self.cfg.seed, ctx.round, plan.clients, s_max, self.cfg.batch_size
        )

    def _batch(self, plan: RoundPlan, s: int, ka: int, aug):
        """Step s's mini-batch of the first ka rows, through the input pipeline."""
        rows = plan.batch_idx[:ka, s]
        xb, yb = take_rows(self.data.train_x, rows), take_rows(self.data.train_y, rows)
        bw = plan.batch_weight[:ka, s]
        xb = self.data.train_transform(xb, None if aug is None else aug[:ka, s])
        return xb, yb, bw

    def _window_terms(self, ctx, local: dict, k: int, step):
        """The local step (a LinearStep) as sgd_steps' SGD w <- w - lr' (g + wd' w + const):
        lr' = lr scale, wd' = wd + mu', const = c' local[const] - mu' wg [k, D] or None (plain
        SGD), with mu' and c' from LinearStep.as_sgd."""
        lr, mu, c = step.as_sgd(ctx.lr)
        const = local[step.const] if step.const else None
        if const is not None and c != 1:
            const = const * c
        if mu:
            prox = ctx.global_w.mul(-mu).expand(k, -1)
            const = prox.contiguous() if const is None else const + prox
        if const is not None and not const.is_contiguous():  # an expanded view (FedCM's pull)
            const = const.contiguous()
        wd = self.cfg.weight_decay + mu
        if step.decay:  # per row (FedDyn's alpha_i): [k], divided by scale as mu is
            wd = local[step.decay].flatten() / step.scale + wd
        return lr, wd, const

    @torch.no_grad()
    def _sgd_windows(
        self,
        plan,
        w,
        step_loss,
        active: list[int],
        aug,
        lr: float,
        wd: float,
        const=None,
        ascent: float = 0.0,
        products=None,
        due=None,
        grams=None,
    ) -> None:
        """SGD steps w <- w - lr (g + wd w + const) in windows of model.step_window consecutive
        steps (one model.sgd_steps call each, which may batch the window's work into bigger
        operations); ascent > 0 takes g at SAM's ascent point (LinearStep.ascent); products
        (window_const.ConstProducts, or None) hold const's first-layer products; due [k] (or
        None) carries const's first-layer sums across windows (BatchedMLP.sgd_steps); grams
        (window_gram.RoundGrams, or None) the windows' Grams."""
        more = {"ascent": ascent} if ascent else {}  # models without SAM need not know it
        x_all, y_all, data = self.data.train_x, self.data.train_y, self.data
        s_max, window = len(active), self.model.step_window
        for s in range(0, s_max, window):
            act = active[s : s + window]
            ka, t_n = act[0], len(act)
            rows = plan.batch_idx[:ka, s : s + t_n]  # [ka, T, B]
            # gathered row by row ([ka, T, B]) and viewed as [T, ka, B]: the window's [ka, T*B]
            # inputs (BatchedMLP.sgd_steps' x_all) are then a view, not one more copy
            xs, ys = take_rows(x_all, rows).transpose(0, 1), take_rows(y_all, rows.transpose(0, 1))
            if data.pipeline is not None:  # the transform takes one step's [ka, B, ...]
                augs = [None if aug is None else aug[:ka, s + t] for t in range(t_n)]
                xs = torch.stack([data.train_transform(xs[t], augs[t]) for t in range(t_n)])
            bws = plan.batch_weight[:ka, s : s + t_n].transpose(0, 1).contiguous()
            ck = None if const is None else const[:ka]
            wdk = wd[:ka] if torch.is_tensor(wd) else wd
            if products is not None:
                more["const_x"] = products.window(s, t_n, ka)
            if due is not None:
                more["const_due"] = due[:ka]
            if grams is not None:
                more["gram"] = grams.window(s, t_n, ka)
            losses = self.model.sgd_steps(w[:ka], xs, ys, bws, act, lr, wdk, ck, **more)
            step_loss[:ka, s : s + t_n] = losses.T

    def _local_result(self, plan, w, local, step_loss, grad_evals, buf) -> LocalResult:
        mean_loss, last_loss = self._loss_summaries(plan, step_loss)
        return LocalResult(
            w=w,
            global_w=self.w,
            local=local,
            mean_loss=mean_loss,
            last_epoch_loss=last_loss,
            grad_evals=grad_evals,
            buffers=buf,
        )

    def _loss_summaries(self, plan: RoundPlan, step_loss: torch.Tensor):
        """Sample-weighted mean loss over all local steps and over the last local epoch."""
        cnt = (plan.batch_weight > 0).sum(2).to(step_loss.dtype)  # [K, S] samples per batch
        s = torch.arange(step_loss.shape[1], device=step_loss.device)
        steps = plan.steps.to(step_loss.device).unsqueeze(1)
        nb = plan.batches_per_epoch.to(step_loss.device).unsqueeze(1)
        last = (s >= steps - nb) & (s < steps)
        tot = (step_loss * cnt).sum(1) / cnt.sum(1).clamp(min=1)
        cl = cnt * last
        last_loss = (step_loss * cl).sum(1) / cl.sum(1).clamp(min=1)
        return tot, last_loss

    # ------------------------------------------------------------------ one round
    def run_round(self, r: int) -> dict:
        """Train round r (1-based) and return its record (without evaluation)."""
        t0 = time.perf_counter()
        plan = self.plans.get(r, ahead=r < self.cfg.rounds)
        ctx = self.context(r, plan, self.lr_at(r))
        if self.stack is not None and (plan.k == 0 or self.method.sequential):
            self.stack.idle()  # its stack-mates train without it this round
        if plan.k == 0:  # everyone dropped: the global model stays
            res, extra = None, {}
        else:
            local = self.method.client_start(ctx)
            if self.method.sequential:
                res = self._train_sequential(ctx, plan, local)
            elif self.stack is not None:  # as rows of one call with its stack-mates' rounds
                res = self.stack.train_local(self, ctx, plan, local)
            else:
                res = self.train_local(ctx, plan, self.w, local)
            res = self.method.client_final(ctx, res)
            local_acc = self._local_acc(ctx, plan, res)
            new_w, extra = self.method.aggregate(ctx, res)
            extra = {**local_acc, **extra}
            self.w = new_w.detach()
            self.buffers = evaluation.merged_buffers(self.buffers, ctx, res)
        synchronize(self.device)
        seconds = time.perf_counter() - t0
        p = ctx.weights
        record = {
            "round": r,
            "lr": ctx.lr,
            "local_loss": float((p * res.mean_loss).sum()) if res is not None else math.nan,
            "round_seconds": seconds,
            "n_full": int((plan.tau == 1).sum()),
            "n_partial": int((plan.tau > 1).sum()),
            "n_dropped": plan.n_dropped,
            "clients": plan.clients.tolist(),
            "units": plan.units.tolist(),
            "dropped": plan.dropped,
            "grad_evals": int(res.grad_evals.sum()) if res is not None else 0,
        }
        record.update(extra)
        return record

    def _local_acc(self, ctx: RoundContext, plan: RoundPlan, res: LocalResult) -> dict:
        """{'local_acc': the devices' weighted mean accuracy of their local models on their own
        training data} with eval_local (reads the models only: no other number changes)."""
        if not self.cfg.eval_local or "x_star" in self.data.info:  # quadratic: no accuracy
            return {}
        acc = evaluation.local_accuracy(self.model, self.data, res.w, plan.clients, res.buffers)
        return {"local_acc": float((ctx.weights.to(acc) * acc).sum())}

    def _train_sequential(self, ctx: RoundContext, plan: RoundPlan, local: dict) -> LocalResult:
        """SFL: the round's devices one after another, in a random order drawn from the run's
        seed and the round, each starting from the previous device's final model.

        Rows of the result stay in engine order: w[i] is device i's final model, so
        delta[i] = w[i] - w^t is the chain's progress up to and including device i; `order`
        holds the rows in training order (the new SFL model is w[order[-1]]). Each device runs
        as a one-row plan cut to its own steps; the method sees the full round's ctx.
        """
        order = torch.randperm(plan.k, generator=generator(self.cfg.seed, "order", ctx.round))
        w, b = self.w, self.buffers  # buffers (if any) are chained like the model
        outs: list[LocalResult | None] = [None] * plan.k
        for i in order.tolist():
            sub_plan = plan.rows(slice(i, i + 1))
            s_i = int(sub_plan.steps[0])
            sub_plan.batch_idx = sub_plan.batch_idx[:, :s_i]
            sub_plan.batch_weight = sub_plan.batch_weight[:, :s_i]
            sub = {n: t[i : i + 1] for n, t in local.items()}
            out = self.train_local(ctx, sub_plan, w, sub, b)
            w = out.w[0]
            b = out.buffers[0] if out.buffers is not None else b
            outs[i] = out
        return LocalResult(
            w=torch.cat([o.w for o in outs]),
            global_w=self.w,
            local={n: torch.cat([o.local[n] for o in outs]) for n in outs[0].local},
            mean_loss=torch.cat([o.mean_loss for o in outs]),
            last_epoch_loss=torch.cat([o.last_epoch_loss for o in outs]),
            grad_evals=torch.cat([o.grad_evals for o in outs]),
            order=order.to(self.device),
            buffers=None if outs[0].buffers is None else torch.cat([o.buffers for o in outs]),
        )

    # ------------------------------------------------------------------ evaluation
    # (fedbench.training.evaluation, with the engine's model, data and global state as defaults)
    def evaluate(self, x, y, w=None, chunk: int = 10000, buffers=None) -> tuple[float, float]:
        w = self.w if w is None else w
        b = self.buffers if buffers is None else buffers
        return evaluation.evaluate(self.model, self.data, w, b, x, y, chunk)

    def full_batch_grads(self, w, clients, chunk=None) -> tuple[torch.Tensor, torch.Tensor]:
        return evaluation.full_batch_grads(self.model, self.data, w, clients, chunk)

    def eval_record(self) -> dict:
        return evaluation.eval_record(self.cfg, self.model, self.data, self.w, self.buffers)
