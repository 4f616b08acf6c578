"""fedbench.cli.main: an error already said in one line leaves by os._exit once pyarrow is
loaded (its thread pools sometimes abort the interpreter's teardown: exit 134 in ~2 of 100
failing publishes before), keeping the exit code; success and other exits are untouched."""

from __future__ import annotations

import sys

import pytest

import fedbench.cli as cli_pkg


def _main_with(monkeypatch, code, pyarrow_loaded=True):
    exits = []

    def fake_cli(obj):
        raise SystemExit(code)

    monkeypatch.setattr(cli_pkg, "cli", fake_cli)
    monkeypatch.setattr(cli_pkg.os, "_exit", lambda c: exits.append(c))
    if pyarrow_loaded:
        monkeypatch.setitem(sys.modules, "pyarrow", sys.modules.get("pyarrow", object()))
    else:
        monkeypatch.delitem(sys.modules, "pyarrow", raising=False)
    try:
        cli_pkg.main()
    except SystemExit as e:
        return exits, e.code
    return exits, None


def test_error_exit_skips_teardown_keeping_its_code(monkeypatch):
    assert _main_with(monkeypatch, 2) == ([2], None)


@pytest.mark.parametrize("code", [0, None, "a message for the user"])
def test_other_exits_are_left_to_python(monkeypatch, code):
    assert _main_with(monkeypatch, code) == ([], code)


def test_without_pyarrow_the_exit_is_plain(monkeypatch):
    assert _main_with(monkeypatch, 2, pyarrow_loaded=False) == ([], 2)
