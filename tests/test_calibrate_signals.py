"""`fedbench calibrate` runs its points as sweeps do (issue 31, item 8): SIGTERM stops its run at
a round's end, recorded `interrupted` with a checkpoint (resumed by the next calibrate), its
claim file removed, exit 143; off a terminal it prints the sweep's progress lines."""

import signal

import pytest
from resume_helpers import fedbench_env, run_jsons, signal_at

from fedbench.assembly import build_config
from fedbench.errors import FedbenchError

CAL = ["calibrate", "--table", "tau", "--dataset", "fmnist", "--anchor", "fedavg", "--param", "lr",
       "--seeds", "0", "--set", "rounds=40", "--set", "N=20", "--set", "K=5", "--target", "5",
       "--threads", "1"]  # fmt: skip


def have_fmnist() -> bool:
    from fedbench.resources import missing_data

    try:
        return not missing_data([build_config("fedlga-fmnist", None, {})], download=False)[0]
    except FedbenchError:
        return False


@pytest.mark.skipif(not have_fmnist(), reason="needs Fashion-MNIST here")
def test_calibrate_stopped_by_sigterm_is_interrupted_without_a_claim(tmp_path):
    results = tmp_path / "r"
    env = fedbench_env(FEDBENCH_NO_DOWNLOAD="1")
    assert signal_at([*CAL, "--results", results], results, 2, env, sig=signal.SIGTERM) == 143
    ((name, meta),) = run_jsons(results).items()
    assert meta["status"] == "interrupted" and meta["checkpoint_round"] >= 2
    assert (results / name / "checkpoint.pt").exists()
    assert not list((results / ".claims").glob("*.lock"))
