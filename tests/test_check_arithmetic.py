"""fedbench check sees a change of any method's arithmetic (issue 31, item 3): a one-character
edit of an update rule, or FedProx's mu 0.1 -> 0, fails the committed reference; the paper-scale
claims' directions are asserted."""

import difflib
import inspect
import json

import pytest
from conftest import invoke

from fedbench.check import arithmetic
from fedbench.check.arithmetic import ARITHMETIC, RTOL, differences
from fedbench.methods import METHODS, fedprox, server_opt
from fedbench.testing import registries_restored

pytestmark = pytest.mark.usefixtures("one_thread")


def one_character_edit(module, old: str, new: str) -> dict:
    """The module's source with `old` replaced by `new` (one character apart), executed into a
    fresh namespace."""
    source = inspect.getsource(module)
    assert source.count(old) == 1
    ops = difflib.SequenceMatcher(None, old, new).get_opcodes()
    changed = [(i2 - i1, j2 - j1) for tag, i1, i2, j1, j2 in ops if tag != "equal"]
    assert len(changed) == 1 and max(changed[0]) == 1, "not a one-character edit"
    namespace = {"__name__": module.__name__}
    exec(compile(source.replace(old, new), module.__file__, "exec"), namespace)
    return namespace


def failing_check(only: str) -> str:
    r = invoke("check", "--only", only)
    assert r.exit_code == 1, r.output
    return r.output.strip().splitlines()[-1]


def test_the_committed_reference_passes_every_arithmetic_check():
    r = invoke("check", "--only", ",".join(ARITHMETIC))
    assert r.exit_code == 0, r.output
    assert f"ok: {len(ARITHMETIC)} check(s) within tolerance" in r.output


def test_a_sign_flip_in_fedproxs_proximal_term_fails_the_check():
    with registries_restored():
        METHODS.pop("fedprox")  # the edited module registers its FedProx in its place
        one_character_edit(fedprox, "LinearStep(mu=self.mu)", "LinearStep(mu=-self.mu)")
        last = failing_check("tiny-fedprox,tiny-fedavg")
    assert last.startswith("Error: 1 regression(s): tiny-fedprox "), last


def test_a_changed_constant_in_adams_second_moment_fails_the_check(monkeypatch):
    edited = one_character_edit(server_opt, "alpha=1 - self.beta2)", "alpha=1 + self.beta2)")
    monkeypatch.setitem(server_opt.SERVER_OPTIMIZERS, "adam", edited["Adam"])
    last = failing_check("tiny-fedavg+adam,tiny-fedavg+yogi")
    assert last.startswith("Error: 1 regression(s): tiny-fedavg+adam "), last


def test_fedprox_mu_0_1_to_0_fails_the_check(monkeypatch):
    method, _, fields = ARITHMETIC["tiny-fedprox"]
    monkeypatch.setitem(ARITHMETIC, "tiny-fedprox", (method, {"mu": 0.0}, fields))
    assert "tiny-fedprox" in failing_check("tiny-fedprox")


def test_rounding_noise_passes_and_a_real_change_does_not():
    ref = {"local_loss": [0.5, 0.4], "test_loss": [0.6, 0.5], "test_acc": [0.7, 0.8]}
    ref |= {"w_norm": 6.0, "w_sum": 0.0}
    noisy = {k: [x * (1 + 1e-12) for x in v] if isinstance(v, list) else v for k, v in ref.items()}
    assert differences(ref, noisy)[0] < 1e-11
    moved = {**ref, "test_loss": [0.6, 0.5001]}
    worst, where, was, now = differences(ref, moved)
    assert worst > RTOL and where == "test_loss[round 2]" and (was, now) == (0.5, 0.5001)
    assert differences(ref, {**ref, "w_norm": float("nan")})[0] == float("inf")


def test_an_old_format_reference_says_to_recreate_it(tmp_path):
    old = tmp_path / "ref.json"
    old.write_text(json.dumps({"checks": {}}))
    r = invoke("check", "--only", "tiny-fedavg", "--reference", old)
    assert r.exit_code == 2 and "has format 1, this fedbench reads 2" in r.output, r.output


def test_update_writes_the_arithmetic_numbers(tmp_path):
    ref = tmp_path / "ref.json"
    r = invoke("check", "--only", "tiny-sfl", "--reference", ref, "--update")
    assert r.exit_code == 0, r.output
    got = json.loads(ref.read_text())
    assert got["format"] == 2 and len(got["arithmetic"]["tiny-sfl"]["test_acc"]) == 3
    assert got["arithmetic"]["tiny-sfl"]["config"]["dtype"] == "float64"
    assert arithmetic.arithmetic_config("tiny-sfl").method == "sfl"


def test_every_method_and_server_optimizer_has_an_arithmetic_check():
    covered = {m for m, _, _ in ARITHMETIC.values()}
    assert covered == set(METHODS)
    opts = {f.get("server_opt", "sgd") for _, _, f in ARITHMETIC.values()}
    assert opts == set(server_opt.SERVER_OPTIMIZERS)
