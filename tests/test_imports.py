"""fedbench's modules import each other without cycles, and the light ones without torch.

What counts as an import: every `import` / `from ... import` in a module, at its top level or
inside a function, except under `if TYPE_CHECKING:` (never executed). A function-level import
is still a dependency (it runs on first call); deferring one to break a cycle only hides the
cycle (as presets <-> config and config -> methods -> config once were), so the test refuses it.
Deferring an import for speed (torch-heavy modules) is fine as long as it points downward.
Importing fedbench.a.b also runs fedbench/a/__init__.py, so it counts as importing fedbench.a
too, unless the importer lives inside fedbench.a.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import fedbench

ROOT = Path(fedbench.__file__).parent


def module_names() -> dict[str, Path]:
    out = {}
    for path in ROOT.rglob("*.py"):
        parts = ["fedbench", *path.relative_to(ROOT).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _type_checking_only(node: ast.AST) -> bool:
    test = getattr(node, "test", None)
    return isinstance(node, ast.If) and (
        (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
        or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")
    )


def _imports(tree: ast.AST):
    """Every import node, skipping `if TYPE_CHECKING:` blocks."""
    for node in ast.iter_child_nodes(tree):
        if _type_checking_only(node):
            yield from (i for n in node.orelse for i in _imports_in(n))
            continue
        yield from _imports_in(node)


def _imports_in(node: ast.AST):
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        yield node
    else:
        yield from _imports(node)


def _targets(node: ast.Import | ast.ImportFrom, importer: str, is_pkg: bool) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    base = node.module or ""
    if node.level:  # relative import
        pkg = importer.split(".") if is_pkg else importer.split(".")[:-1]
        pkg = pkg[: len(pkg) - node.level + 1]
        base = ".".join(pkg + ([base] if base else []))
    return [base] + [f"{base}.{a.name}" for a in node.names]  # `from pkg import submodule`


def import_graph() -> dict[str, set[str]]:
    modules = module_names()
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for mod, path in modules.items():
        is_pkg = path.name == "__init__.py"
        own_packages = {mod} | {mod.rsplit(".", k)[0] for k in range(1, mod.count(".") + 1)}
        for node in _imports(ast.parse(path.read_text(), str(path))):
            for target in _targets(node, mod, is_pkg):
                parts = target.split(".")
                for k in range(2, len(parts) + 1):  # the module and the packages it runs
                    name = ".".join(parts[:k])
                    if name in modules and name not in own_packages:
                        graph[mod].add(name)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1: on the path, 2: done
    path: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        path.append(m)
        for n in sorted(graph[m]):
            if state.get(n) == 1:
                return path[path.index(n) :] + [n]
            if n not in state and (cycle := visit(n)):
                return cycle
        path.pop()
        state[m] = 2
        return None

    for m in sorted(graph):
        if m not in state and (cycle := visit(m)):
            return cycle
    return None


def test_the_walk_sees_known_imports():
    graph = import_graph()
    assert "fedbench.config" in graph["fedbench.assembly"]
    assert "fedbench.presets" in graph["fedbench.assembly"]
    assert "fedbench.methods" in graph["fedbench.identity"]
    assert "fedbench.methods.base" in graph["fedbench.methods.registry"]


def test_no_import_cycle_among_fedbench_modules():
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_config_is_a_leaf():
    assert import_graph()["fedbench.config"] <= {"fedbench.errors"}


def _modules_after(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", f"import sys\n{code}\nprint(' '.join(sys.modules))"],
        capture_output=True,
        text=True,
        check=True,
    )
    return set(out.stdout.split())


def test_hashing_a_config_does_not_import_torch():
    loaded = _modules_after(
        "from fedbench.config import RunConfig\n"
        "from fedbench.assembly import build_config\n"
        "from fedbench.identity import config_hash, run_id\n"
        "config_hash(RunConfig(method='fedprox', method_params={'mu': 0.1}))\n"
        "run_id(build_config('fedlga-fmnist', None, {'method': 'fedlga'}))"
    )
    assert "torch" not in loaded and "fedbench.methods.fedprox" in loaded


def test_indexing_runs_does_not_import_torch(tmp_path):
    """RunIndex re-hashes every stored config; reading 1,000 runs needs no torch."""
    from fedbench.config import RunConfig
    from fedbench.testing import write_fake_run

    methods = [("fedavg", {}), ("fedprox", {"mu": 0.1}), ("fedlga", {}), ("scaffold", {})]
    for seed in range(250):
        for method, params in methods:
            cfg = RunConfig(method=method, method_params=params, seed=seed, rounds=2)
            write_fake_run(tmp_path, cfg)
    loaded = _modules_after(
        f"from fedbench.results import RunIndex\nassert len(RunIndex({str(tmp_path)!r})) == 1000"
    )
    assert "torch" not in loaded
