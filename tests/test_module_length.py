"""Modules stay readable (issue 32, item 2): none in fedbench/ over 500 lines. A module that
grows past it is split by concern (what it does), not by count; tests/test_function_length.py
caps functions the same way."""

from pathlib import Path

import fedbench

LIMIT = 500


def module_lengths() -> dict[str, int]:
    """'path' -> lines, for every module in fedbench/."""
    root = Path(fedbench.__file__).parent
    return {
        p.relative_to(root).as_posix(): len(p.read_text().splitlines())
        for p in sorted(root.rglob("*.py"))
    }


def test_no_module_over_500_lines():
    long = {k: n for k, n in module_lengths().items() if n > LIMIT}
    assert not long, f"modules over {LIMIT} lines (split them by concern): " + "; ".join(
        f"{k} ({n})" for k, n in sorted(long.items())
    )


def test_the_count_sees_every_package():
    """The walk reaches the subpackages (a cap that reads only the top level enforces nothing)."""
    seen = module_lengths()
    for module in ("config.py", "sweep/executors.py", "results/index.py", "papers/fedlga_paper.py"):
        assert module in seen
