"""fedbench's modules import each other without cycles, and the light ones without torch.

What counts as an import: every `import` / `from ... import` in a module, at its top level,
inside a function or under `if TYPE_CHECKING:` (a type hint that names a module is a dependency
of the reader, and a circle through one is a circle in the design). A function-level import
is still a dependency (it runs on first call); deferring one to break a cycle only hides the
cycle (as presets <-> config and config -> methods -> config once were), so the test refuses it.
Deferring an import for speed (torch-heavy modules) is fine as long as it points downward.
Importing fedbench.a.b also runs fedbench/a/__init__.py, so it counts as importing fedbench.a
too, unless the importer lives inside fedbench.a. An import by name counts as well:
`importlib.import_module("fedbench.x")`, `__import__(...)` and `LazyModule(...)` with a literal
name, or `f"{__name__}.{...}"` (a package importing its own modules); a name made at run time is
allowed only where NAMED_ELSEWHERE says what it loads (a registry loading its catalog that way
was the runtime circle presets -> papers -> presets that the import statements did not show).
`import fedbench` (the package, which holds the API) counts as an import of the top layer.
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


def _imports(tree: ast.AST):
    """Every import node anywhere in the tree (functions and TYPE_CHECKING blocks included)."""
    return (n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom)))


def _targets(node: ast.Import | ast.ImportFrom, importer: str, is_pkg: bool) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    base = node.module or ""
    if node.level:  # relative import
        pkg = importer.split(".") if is_pkg else importer.split(".")[:-1]
        pkg = pkg[: len(pkg) - node.level + 1]
        base = ".".join(pkg + ([base] if base else []))
    return [base] + [f"{base}.{a.name}" for a in node.names]  # `from pkg import submodule`


# callables that import the module they are given the name of
IMPORTERS_BY_NAME = ("import_module", "__import__", "LazyModule")
# modules whose import by name takes a name made at run time, and what that name is
NAMED_ELSEWHERE = {
    "fedbench.plugins": "a user's plugin: a file or module outside fedbench",
    "fedbench.lazy": "LazyModule's own name: counted where a LazyModule(...) is made",
}


def _callee(call: ast.Call) -> str:
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")


def _name_prefix(arg: ast.AST, importer: str, is_pkg: bool) -> str | None:
    """The literal start of an imported name: all of a constant, the start of an f-string up to
    its first part made at run time (`{__name__}` is the importer's package); None: unknown."""
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return arg.value
    if not isinstance(arg, ast.JoinedStr):
        return None
    prefix = ""
    for part in arg.values:
        if isinstance(part, ast.Constant):
            prefix += str(part.value)
        elif not prefix and getattr(part.value, "id", "") == "__name__":
            prefix = importer if is_pkg else importer.rsplit(".", 1)[0]
        else:
            break
    return prefix or None


def imports_by_name(tree: ast.AST, importer: str, is_pkg: bool, modules) -> list[str | None]:
    """The modules imported by name (None: a name made at run time). An f-string's known
    start names every module it can reach (`f"{__name__}.{x}"`: each module of the package)."""
    out: list[str | None] = []
    for call in ast.walk(tree):
        if not (isinstance(call, ast.Call) and _callee(call) in IMPORTERS_BY_NAME and call.args):
            continue
        prefix = _name_prefix(call.args[0], importer, is_pkg)
        if prefix is None:
            out.append(None)
        elif prefix in modules or isinstance(call.args[0], ast.Constant):
            out.append(prefix)
        else:  # a name only partly known: every module it can be
            out += [m for m in modules if m.startswith(prefix)]
    return out


def _imports_the_package(node: ast.Import | ast.ImportFrom, modules) -> bool:
    """`import fedbench` or `from fedbench import train`: the package itself (the API), not
    one of its modules."""
    if isinstance(node, ast.Import):
        return any(a.name == "fedbench" for a in node.names)
    return (
        node.module == "fedbench"
        and not node.level
        and any(f"fedbench.{a.name}" not in modules for a in node.names)
    )


def _add(graph, mod: str, target: str, modules, own_packages) -> None:
    parts = target.split(".")
    for k in range(2, len(parts) + 1):  # the module and the packages it runs
        name = ".".join(parts[:k])
        if name in modules and name not in own_packages:
            graph[mod].add(name)


def import_graph(unknown: dict[str, int] | None = None) -> dict[str, set[str]]:
    """Who imports whom; `unknown` (if given) counts each module's imports by a run-time name."""
    modules = module_names()
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for mod, path in modules.items():
        is_pkg = path.name == "__init__.py"
        own_packages = {mod} | {mod.rsplit(".", k)[0] for k in range(1, mod.count(".") + 1)}
        tree = ast.parse(path.read_text(), str(path))
        for node in _imports(tree):
            for target in _targets(node, mod, is_pkg):
                _add(graph, mod, target, modules, own_packages)
            if mod != "fedbench" and _imports_the_package(node, modules):
                graph[mod].add("fedbench")
        for target in imports_by_name(tree, mod, is_pkg, modules):
            if target is None:
                if unknown is not None:
                    unknown[mod] = unknown.get(mod, 0) + 1
            else:
                _add(graph, mod, target, modules, own_packages)
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
    # by name: a package's own modules, the lazy table modules, and the package itself
    assert "fedbench.methods.fedavg" in graph["fedbench.methods"]
    assert "fedbench.tables.render" in graph["fedbench.tables"]
    assert "fedbench.papers.fedlga_paper" in graph["fedbench.papers"]
    assert "fedbench" not in graph["fedbench.training.runner"]  # the version: fedbench.version


def test_imports_by_name_are_counted():
    """The runtime loop the import statements hid (presets -> papers -> presets) is seen."""
    modules = module_names()
    code = 'import importlib\nimportlib.import_module("fedbench.papers")\n'
    tree = ast.parse(code)
    assert imports_by_name(tree, "fedbench.presets", False, modules) == ["fedbench.papers"]
    tree = ast.parse('__import__(f"{__name__}.spec")\nimportlib.import_module(name)')
    assert imports_by_name(tree, "fedbench.tables", True, modules) == ["fedbench.tables.spec", None]
    assert _imports_the_package(ast.parse("import fedbench").body[0], modules)
    assert not _imports_the_package(ast.parse("from fedbench import errors").body[0], modules)


def test_every_import_by_a_runtime_name_is_accounted_for():
    unknown: dict[str, int] = {}
    import_graph(unknown)
    assert set(unknown) <= set(NAMED_ELSEWHERE), (
        f"import by a name made at run time in {sorted(set(unknown) - set(NAMED_ELSEWHERE))}: "
        "import it by its literal name, or say in NAMED_ELSEWHERE what it loads"
    )


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
        "import fedbench.papers\n"  # the catalogs, as the entry points load them
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


# The import direction, lowest first: a module may import its own layer and those below it.
# training and tables/plots are siblings: training never reads tables, reading never trains.
LAYERS = (
    (
        "fedbench.version",
        "fedbench.errors",
        "fedbench.atomic",
        "fedbench.safe_read",
        "fedbench.lazy",
        "fedbench.names",
        "fedbench.param_fields",
        "fedbench.plugins",
    ),
    ("fedbench.config", "fedbench.config_input", "fedbench.devices"),
    ("fedbench.data", "fedbench.models", "fedbench.methods", "fedbench.presets"),
    ("fedbench.assembly", "fedbench.identity", "fedbench.resources"),
    ("fedbench.results", "fedbench.run_filter"),
    (
        "fedbench.training",
        "fedbench.tables",
        "fedbench.plots",
        "fedbench.table_plots",
        "fedbench.testing",
    ),
    ("fedbench.papers",),
    ("fedbench.sweep",),
    (
        "fedbench.calibration_search",
        "fedbench.check",
        "fedbench.contracts",
        "fedbench.api",
        "fedbench.reproduce",
    ),
    ("fedbench.cli", "fedbench.__main__"),
)
TOP = len(LAYERS)  # the package itself (fedbench/__init__.py: the API), above every layer
SIBLINGS_APART = (
    ("fedbench.training", ("fedbench.tables", "fedbench.plots", "fedbench.table_plots")),
)


def _layer(module: str) -> tuple[int, str]:
    if module == "fedbench":
        return TOP, module
    for i, layer in enumerate(LAYERS):
        for prefix in layer:
            if module == prefix or module.startswith(prefix + "."):
                return i, prefix
    raise AssertionError(f"{module} is in no layer of LAYERS: add it where it belongs")


def test_imports_point_down_the_layers():
    up = []
    for mod, deps in import_graph().items():
        if mod == "fedbench":
            continue
        (lm, pm) = _layer(mod)
        for dep in deps:
            (ld, pd_) = _layer(dep)
            if ld > lm:
                up.append(f"{mod} -> {dep}")
            for a, apart in SIBLINGS_APART:
                if (pm == a and pd_ in apart) or (pd_ == a and pm in apart):
                    up.append(f"{mod} -> {dep} (siblings)")
    assert not up, "imports against the layers: " + "; ".join(sorted(up))


def test_methods_name_nothing_of_training():
    """methods/base.py is the whole contract: no method module names the engine, not even in a
    type hint."""
    graph = import_graph()
    bad = [
        f"{m} -> {d}"
        for m, deps in graph.items()
        if m.startswith("fedbench.methods")
        for d in deps
        if d.startswith("fedbench.training")
    ]
    assert not bad, bad


def test_reading_a_table_imports_no_torch(tmp_path):
    """`fedbench table quadratic` computes Table 2 from the generator's arrays and reads runs:
    no torch (4 s of imports) for reading results (as `python -X importtime -m fedbench table
    quadratic` shows)."""
    loaded = _modules_after(
        "from fedbench.cli import cli\n"
        f"cli(['table', 'quadratic', '--results', {str(tmp_path)!r}], standalone_mode=False)"
    )
    assert "torch" not in loaded
    assert {"fedbench.tables.evaluate", "fedbench.data.quadratic"} <= loaded


# Imports sit at the top of a module. A function-level import is kept only where it saves
# start-up: of a module below that loads something heavy, or of a leaf that the start-up of
# `fedbench --help` / `fedbench table quadratic` would otherwise load for nothing.
CHEAP_LEAVES = (*LAYERS[0], *LAYERS[1], "fedbench.training.signals")
HEAVY = ("torch", "pandas", "numpy", "matplotlib", "numba", "pyarrow", "scipy")
DEFERRED = {  # a module (or package) that a function may import, and what deferring it saves
    "fedbench.data": "numpy and the dataset readers",
    "fedbench.models": "torch",
    "fedbench.training": "torch (the engine)",
    "fedbench.results": "pandas and pyarrow",
    "fedbench.testing": "pandas (the fake runs)",
    "fedbench.plots": "matplotlib",
    "fedbench.table_plots": "matplotlib",
    "fedbench.resources": "numpy",
    "fedbench.methods": "the 12 method modules, which `fedbench --help` does not load",
    "fedbench.presets": "the preset catalog, for commands that need no preset",
    "fedbench.assembly": "the method catalog (through fedbench.methods)",
    "fedbench.identity": "the method catalog (through fedbench.methods)",
    "fedbench.run_filter": "the method catalog (through fedbench.methods)",
    "fedbench.tables": "a command's own machinery: each command loads only its own",
    "fedbench.papers": "a command's own machinery",
    "fedbench.sweep": "a command's own machinery",
    "fedbench.reproduce": "a command's own machinery",
    "fedbench.check": "a command's own machinery",
    "fedbench.contracts": "a command's own machinery",
    "fedbench.calibration_search": "a command's own machinery",
    "fedbench.api": "the API, which loads the engine's front",
    "fedbench.cli": "a command's own machinery",
}


def function_level_imports(parse=ast.parse) -> list[tuple[str, str]]:
    """(importer, fedbench module) for every import inside a function."""
    modules = module_names()
    out = set()
    for mod, path in modules.items():
        is_pkg = path.name == "__init__.py"
        for fn in ast.walk(parse(path.read_text(), str(path))):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in _imports(fn):
                for target in _targets(node, mod, is_pkg):
                    if target in modules and target != "fedbench":
                        out.add((mod, target))
    return sorted(out)


def _deferred_why(target: str) -> str | None:
    for prefix, why in DEFERRED.items():
        if target == prefix or target.startswith(prefix + "."):
            return why
    return None


def test_leaves_are_cheap():
    loaded = _modules_after("\n".join(f"import {m}" for m in CHEAP_LEAVES))
    assert not loaded & set(HEAVY)


def _loaded_by(args: list[str]) -> set[str]:
    return _modules_after(
        "import contextlib, io\n"
        "from fedbench.cli import cli\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"  # the words of the help are no modules
        f"    cli({args!r}, standalone_mode=False)"
    )


def test_imports_sit_at_the_top_unless_deferring_saves_start_up(tmp_path):
    starts = [
        _loaded_by(["--help"]),
        _loaded_by(["table", "quadratic", "--results", str(tmp_path)]),
    ]
    bad = []
    for mod, target in function_level_imports():
        if target in CHEAP_LEAVES:
            if not any(mod in s and target not in s for s in starts):  # saves no start-up
                bad.append(f"{mod} -> {target} (a cheap leaf: import it at the top)")
        elif _deferred_why(target) is None:
            bad.append(f"{mod} -> {target} (import it at the top, or say in DEFERRED why not)")
    assert not bad, "function-level imports: " + "; ".join(bad)


def test_a_function_level_import_is_seen():
    """The check sees a leaf imported inside a function (as results/export.py once did config)."""
    code = "def f():\n    from fedbench import atomic\n"
    found = function_level_imports(lambda text, name: ast.parse(code))
    assert ("fedbench.config", "fedbench.atomic") in found


# benchmarks/: scripts that import each other by their bare names (their folder is on sys.path,
# as `python benchmarks/x.py` puts it); no circle there either (hostile.py and hostile_cases.py
# once imported each other: the shared helpers now sit in hostile_env.py)
BENCHMARKS = ROOT.parent / "benchmarks"


def benchmark_graph(folder: Path = BENCHMARKS) -> dict[str, set[str]]:
    """Which benchmarks/ script imports which (at any level: a function's import counts)."""
    names = {p.stem for p in folder.glob("*.py")}
    graph: dict[str, set[str]] = {n: set() for n in names}
    for name in names:
        tree = ast.parse((folder / f"{name}.py").read_text())
        for node in _imports(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 0:
                targets = [node.module or ""]
            else:
                targets = [a.name for a in node.names]
            graph[name] |= {t.split(".")[0] for t in targets} & names
    return graph


def test_the_benchmark_walk_sees_known_imports():
    graph = benchmark_graph()
    assert {"hostile_cases", "hostile_env"} <= graph["hostile"]
    assert "flop_bound" in graph["engine_speed"]


def test_the_benchmark_walk_sees_a_circle(tmp_path):
    (tmp_path / "a.py").write_text("from b import x\n")
    (tmp_path / "b.py").write_text("def f():\n    import a\n")
    assert find_cycle(benchmark_graph(tmp_path)) == ["a", "b", "a"]


def test_no_import_cycle_among_benchmarks():
    cycle = find_cycle(benchmark_graph())
    assert cycle is None, "import cycle in benchmarks/: " + " -> ".join(cycle or [])
