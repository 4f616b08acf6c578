"""One `fedbench train` reads results/ for "already done?" once (it did three times: before
loading, after loading, and under the claim); the runner's cheap look at the run's own
folders under its claim is the one other check."""

from conftest import invoke

from fedbench.training import runner

FAST = ["--rounds", "2", "--set", "N=6", "--set", "K=3", "--set", "E=2", "--quiet"]


def _counting(monkeypatch) -> list[bool]:
    calls: list[bool] = []
    real = runner.check_not_done

    def counted(*args, **kw):
        calls.append(kw.get("own_folders", False))
        return real(*args, **kw)

    monkeypatch.setattr(runner, "check_not_done", counted)
    return calls


def test_train_reads_results_once(tmp_path, monkeypatch):
    calls = _counting(monkeypatch)
    for folder in ("a", "b"):  # b: the data's fingerprint is known, checked before loading
        calls.clear()
        r = invoke("train", *FAST, "--results", tmp_path / folder)
        assert r.exit_code == 0, r.output
        assert calls.count(False) == 1 and calls.count(True) == 1, (folder, calls)
    calls.clear()
    r = invoke("train", *FAST, "--results", tmp_path / "b")
    assert r.exit_code != 0 and "already exists" in r.output
    assert calls == [False], calls
