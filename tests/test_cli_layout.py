"""The command line stays a package of short functions: none in fedbench/cli/ over 60 lines
(decorators left out, signature and docstring counted)."""

import ast
from pathlib import Path

import fedbench.cli

LIMIT = 60


def test_no_cli_function_over_60_lines():
    folder = Path(fedbench.cli.__file__).parent
    long = []
    for path in sorted(folder.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > LIMIT:
                    long.append(f"{path.name}:{node.lineno} {node.name} ({lines} lines)")
    assert not long, "functions over 60 lines: " + "; ".join(long)
