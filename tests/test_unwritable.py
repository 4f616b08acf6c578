"""Where nothing can be written: a sweep on a results folder it may not write to never says a
failure was recorded in a run.json; `export --out ''` (the current folder) is refused."""

from __future__ import annotations

import pytest
from conftest import invoke, one_line_error

TINY = ["--set", "rounds=2", "--set", "N=6", "--set", "K=3", "--set", "local_steps=2",
        "--threads", "1", "--quiet"]  # fmt: skip


def test_a_sweep_on_a_read_only_folder_never_claims_a_record(tmp_path, monkeypatch, one_thread):
    from fedbench.results.locks import RunClaim

    def read_only(self):  # as os.mkdir in a read-only folder (tests run as root: chmod is moot)
        raise PermissionError(13, "Permission denied", str(self.folder))

    monkeypatch.setattr(RunClaim, "acquire", read_only)
    r = invoke("sweep", "--methods", "fedavg", "--seeds", "0,1", *TINY, "--results", tmp_path)
    assert r.exit_code == 1, r.output
    last = r.output.strip().splitlines()[-1]
    assert "2 run(s) failed" in last and "Permission denied" in last, last
    assert "recorded in its run.json" not in last
    assert "2 of them could not be recorded in their run.json" in last, last
    assert not list(tmp_path.rglob("run.json"))


@pytest.mark.parametrize(
    "command, option",
    [
        ("export", "--out"),
        ("export", "--results"),
        ("publish", "--store"),
        ("publish", "--results"),
    ],
)
def test_an_empty_folder_option_is_refused(tmp_path, command, option, monkeypatch):
    monkeypatch.chdir(tmp_path)
    args = {"--results": str(tmp_path / "r"), option: " "}
    args.update({"--out": str(tmp_path / "o")} if command == "export" else {"--run": "x"})
    args[option] = ""
    r = invoke(command, *[x for kv in args.items() for x in kv])
    line = one_line_error(r)
    assert f"'{option}': empty: that would mean the current directory" in line, line
    assert not list(tmp_path.iterdir())
