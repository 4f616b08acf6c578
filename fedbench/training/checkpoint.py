"""Checkpoints of a run in progress: a killed or preempted run resumes from its last checkpoint and
ends bit for bit as the run that was never stopped (tests/test_resume.py kills real runs).

A run's whole state after round r: the global model and buffers (Engine.w, Engine.buffers), the
method's declared state (Method.state_dict: control variates, server momentum, adaptive mu, ...)
and the rows recorded so far, with the divergence rule's first values and the seconds so far.
There are no random-stream positions to keep: every draw comes from a generator made afresh from
(seed, purpose, round, device) (fedbench.devices.generator), so round r + 1 draws the same
whether the process trained rounds 1..r or read them from here. The run's identity (config hash,
data fingerprint) and the fedbench and torch versions are stored too: a checkpoint of anything
else is not resumed (the run starts from round 0, with a warning).

File: <run folder>/checkpoint.pt, written atomically (fedbench.atomic) by torch.save and read by
torch.load(weights_only=True), so loading runs no code from a file in results/. The state is
kept as the bytes of its own torch.save with their SHA-256 beside them: a file whose bytes do not
match, or whose model holds a NaN or inf, is not resumed. A checkpoint that cannot be written
(a full disk: OSError, or torch's RuntimeError) is a warning; the run goes on without. It is removed
when the run finishes (complete or diverged); an interrupted or failed run keeps it, and the next
`fedbench train` / `fedbench sweep` of that config resumes from it (--overwrite starts afresh).

When (Policy; not part of the config, so it never changes a run's identity): every `rounds`
rounds, and/or `minutes` after the last one (default 2 minutes, so short runs write none), but
never spending more than MAX_SHARE of the run's time on writing them; and at the end of the round
when a signal asks the run to stop (fedbench.training.signals). FEDBENCH_CHECKPOINT_ROUNDS and
FEDBENCH_CHECKPOINT_MINUTES (0: off) set the defaults; `--checkpoint-rounds/--checkpoint-minutes`
of train and sweep override them.
"""

from __future__ import annotations

import logging
import math
import os
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch

from fedbench import identity, version
from fedbench.atomic import atomic_write_with
from fedbench.config import RunConfig
from fedbench.devices import device_name
from fedbench.errors import FedbenchError
from fedbench.safe_read import CHECKPOINT_CAP, open_regular

FILE = "checkpoint.pt"
FORMAT = 2  # 2: the state saved as bytes under their SHA-256 (1, unhashed, is not resumed)
MINUTES = 2.0  # default time between checkpoints
MAX_SHARE = 0.05  # at most this share of a run's time goes to writing checkpoints

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Policy:
    """How often a run writes a checkpoint: every `rounds` rounds (0: not by rounds) and after
    `minutes` (0: not by time). Both 0: never (a signal's stop still writes one)."""

    rounds: int = 0
    minutes: float = MINUTES

    def __post_init__(self):
        if not (isinstance(self.rounds, int) and self.rounds >= 0):
            raise FedbenchError(f"checkpoint rounds must be an integer >= 0, got {self.rounds!r}")
        if not (math.isfinite(self.minutes) and self.minutes >= 0):
            raise FedbenchError(f"checkpoint minutes must be a number >= 0, got {self.minutes!r}")

    @staticmethod
    def from_env(rounds: int | None = None, minutes: float | None = None) -> Policy:
        """The policy of FEDBENCH_CHECKPOINT_ROUNDS / _MINUTES, with the values given here
        (command-line options) taking precedence."""

        def env(name: str, kind):
            text = os.environ.get(name)
            if text is None or text == "":
                return None
            try:
                return kind(text)
            except ValueError:
                msg = f"{name}={text!r} is not a number; fix or unset it"
                raise FedbenchError(msg) from None

        if rounds is None:
            rounds = env("FEDBENCH_CHECKPOINT_ROUNDS", int)
        if minutes is None:
            minutes = env("FEDBENCH_CHECKPOINT_MINUTES", float)
        return Policy(
            rounds=0 if rounds is None else rounds,
            minutes=MINUTES if minutes is None else float(minutes),
        )

    def to_dict(self) -> dict:
        return {"rounds": self.rounds, "minutes": self.minutes}


@dataclass
class Progress:
    """What a run has done so far, besides the engine's state."""

    rows: list[dict]
    base: dict = field(default_factory=dict)  # the divergence rule's first values
    cum_seconds: float = 0.0
    started: str = ""
    resumed: list[int] = field(default_factory=list)  # rounds this run resumed from

    @property
    def round(self) -> int:
        return int(self.rows[-1]["round"])


def _identity(cfg: RunConfig, eng) -> dict:
    return {
        "run_id": identity.run_id(cfg),
        "config_hash": identity.config_hash(cfg),
        "fingerprint": eng.data.info.get("fingerprint"),
        "fedbench_version": version.__version__,
        "torch_version": str(torch.__version__),
    }


class Checkpointer:
    """Writes one run's checkpoints into its folder under a Policy."""

    def __init__(self, run_dir: Path, policy: Policy, cfg: RunConfig, eng):
        self.path = Path(run_dir) / FILE
        self.policy, self.cfg, self.eng = policy, cfg, eng
        self.last = time.monotonic()
        self.write_seconds = 0.0
        self.saved_round: int | None = None
        self.refused = False

    def due(self, r: int) -> bool:
        p = self.policy
        if p.rounds and r % p.rounds == 0:
            return True
        if not p.minutes:
            return False
        wait = max(p.minutes * 60, self.write_seconds / MAX_SHARE)
        return time.monotonic() - self.last >= wait

    def save(self, progress: Progress) -> bool:
        """Write the checkpoint of the run after progress.round (atomically); False when none
        could be written (a warning says why; the run goes on without)."""

        t0 = time.monotonic()
        eng = self.eng
        method_state = eng.method.state_dict()
        odd = _not_plain(progress.rows) or _not_plain(method_state)
        if odd:  # torch.load(weights_only=True) would refuse it: better none than a useless one
            if not self.refused:
                log.warning("%s: no checkpoint (a record holds a %s)", self.path, odd)
            self.refused = True
            return False
        state = {
            **_identity(self.cfg, eng),
            "device_name": device_name(eng.device),
            "round": progress.round,
            "w": eng.w.detach().cpu(),
            "buffers": eng.buffers.detach().cpu(),
            "method": {
                k: v.cpu() if isinstance(v, torch.Tensor) else v for k, v in method_state.items()
            },
            "rows": progress.rows,
            "base": dict(progress.base),
            "cum_seconds": float(progress.cum_seconds),
            "started": progress.started,
            "resumed": list(progress.resumed),
        }
        try:
            atomic_write_with(self.path, lambda f: torch.save(sealed(state), f))
        except (OSError, RuntimeError) as e:  # a full disk (torch says RuntimeError): go on
            why = (str(e).strip().splitlines() or [type(e).__name__])[0]
            log.warning("%s: no checkpoint of round %d (%s)", self.path, progress.round, why)
            self.last = time.monotonic()
            return False
        self.saved_round = progress.round
        self.last = time.monotonic()
        self.write_seconds = self.last - t0
        return True

    def remove(self) -> None:
        remove(self.path.parent)


PLAIN = (bool, int, float, str, type(None), torch.Tensor)


def _not_plain(obj) -> str | None:
    """The name of a type in obj that torch.load(weights_only=True) may refuse, or None."""
    if isinstance(obj, dict):
        return next(filter(None, map(_not_plain, [*obj.keys(), *obj.values()])), None)
    if isinstance(obj, list):
        return next(filter(None, map(_not_plain, obj)), None)
    return None if type(obj) in PLAIN or isinstance(obj, torch.Tensor) else type(obj).__name__


def sealed(state: dict) -> dict:
    """The file's content: the state's torch.save bytes (a uint8 tensor) and their SHA-256."""
    import hashlib
    import io

    buf = io.BytesIO()
    torch.save(state, buf)
    data = buf.getvalue()
    payload = torch.frombuffer(bytearray(data), dtype=torch.uint8)
    return {"format": FORMAT, "sha256": hashlib.sha256(data).hexdigest(), "payload": payload}


def read_state(path: Path, device="cpu") -> dict:
    """The state a checkpoint file holds, checked against its SHA-256 (ValueError if not)."""
    return _load(Path(path), device)


def remove(run_dir: Path) -> None:
    """Delete the run's checkpoint file (a folder of that name is not ours: left, warned)."""
    path = Path(run_dir) / FILE
    if not path.is_dir() or path.is_symlink():
        path.unlink(missing_ok=True)


def resume(run_dir: Path, cfg: RunConfig, eng) -> Progress | None:
    """The progress of the checkpoint in run_dir, with the engine's model, buffers and method
    state restored from it; None (the engine untouched) when there is none or it cannot be
    resumed (then it is removed, with a warning that says why)."""
    path = Path(run_dir) / FILE
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    if stat.S_ISDIR(info.st_mode):  # never deleted (not ours); no checkpoint is written there
        log.warning("%s: not resumed (a folder, not a checkpoint file; delete it); the run "
                    "starts again from round 0", path)  # fmt: skip
        return None
    try:
        if not stat.S_ISREG(info.st_mode):
            raise ValueError("not a regular file")
        state = _load(path, eng.device)
        progress = _restore(state, cfg, eng)
    except Exception as e:  # anything wrong in the file: start afresh, never stop the run
        why = (str(e).strip().splitlines() or [type(e).__name__])[0]
        log.warning("%s: not resumed (%s); the run starts again from round 0", path, why)
        path.unlink(missing_ok=True)
        return None
    progress.resumed.append(progress.round)
    return progress


def _load(path: Path, device) -> dict:
    import hashlib
    import io

    with open_regular(path, CHECKPOINT_CAP) as f:
        outer = torch.load(f, map_location="cpu", weights_only=True)
    if not isinstance(outer, dict) or outer.get("format") != FORMAT:
        got = outer.get("format") if isinstance(outer, dict) else None
        raise ValueError(f"not a fedbench checkpoint of format {FORMAT}" + (
            f" (format {got!r}, from an older fedbench)" if got is not None else ""))  # fmt: skip
    payload = outer.get("payload")
    if not (isinstance(payload, torch.Tensor) and payload.dtype == torch.uint8):
        raise ValueError("it holds no state")
    data = payload.numpy().tobytes()
    if hashlib.sha256(data).hexdigest() != outer.get("sha256"):
        raise ValueError("its content does not match its SHA-256 (changed after it was written)")
    state = torch.load(io.BytesIO(data), map_location=device, weights_only=True)
    if not isinstance(state, dict):
        raise ValueError("its state is not a fedbench checkpoint's")
    return state


def _restore(state: dict, cfg: RunConfig, eng) -> Progress:
    """Check the checkpoint against this run, then put its state into the engine."""

    for key, want in _identity(cfg, eng).items():
        if state.get(key) != want:
            raise ValueError(f"its {key} is {state.get(key)!r}, this run's {want!r}")
    progress = _progress(state)
    w, buffers = state.get("w"), state.get("buffers")
    for name, t, ref in (("model", w, eng.w), ("buffers", buffers, eng.buffers)):
        if not (isinstance(t, torch.Tensor) and t.shape == ref.shape and t.dtype == ref.dtype):
            raise ValueError(f"its {name} does not fit this run's")
    method_state = state.get("method")
    if not isinstance(method_state, dict):
        raise ValueError("no method state")
    for name, t in (("model", w), ("buffers", buffers)):
        if not bool(t.isfinite().all()):
            raise ValueError(f"its {name} holds a NaN or inf")
    fills = {s.name: s.fill for s in eng.method.declared_state}
    for name, t in method_state.items():
        if (
            isinstance(t, torch.Tensor)
            and t.is_floating_point()
            and not _plausible(t, fills.get(name))
        ):
            raise ValueError(f"its {name} holds a NaN, or an inf its method does not start from")
    eng.method.load_state_dict(method_state)  # checks names and shapes (FedbenchError)
    eng.w, eng.buffers = w.to(eng.device), buffers.to(eng.device)
    if state.get("device_name") != device_name(eng.device):
        log.warning(
            "%s: resumed on %s, written on %s: the rounds after %d may differ in the last bits "
            "from a run on one device",
            state["run_id"],
            device_name(eng.device),
            state.get("device_name"),
            progress.round,
        )
    return progress


def _plausible(t: torch.Tensor, fill) -> bool:
    """No NaN; an inf only where the state starts from that inf (+inf = "not seen yet", as
    FedSoftMax's running minimum of each device's loss)."""

    bad = ~t.isfinite()
    if fill is not None and math.isinf(fill):
        bad &= t != fill
    return not bool(bad.any())


def _progress(state: dict) -> Progress:
    rows, base = state.get("rows"), state.get("base")
    ok = isinstance(rows, list) and len(rows) >= 2 and all(isinstance(r, dict) for r in rows)
    if not ok or [r.get("round") for r in rows] != list(range(len(rows))):
        raise ValueError("its rows are not rounds 0, 1, ...")
    if state.get("round") != len(rows) - 1:
        raise ValueError("its round does not match its rows")
    resumed = state.get("resumed")
    if not (isinstance(resumed, list) and all(type(r) is int for r in resumed)):
        raise ValueError("its list of resumptions is damaged")
    if not (isinstance(base, dict) and isinstance(state.get("cum_seconds"), float)):
        raise ValueError("its totals are damaged")
    return Progress(
        rows=rows,
        base=base,
        cum_seconds=state["cum_seconds"],
        started=str(state.get("started", "")),
        resumed=resumed,
    )
