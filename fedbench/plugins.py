"""Plugins: methods, server optimizers, datasets, models and tables registered from outside.

A plugin is a Python file (``--plugin path/to/my_method.py``) or an importable module
(``--plugin mypkg.fl``) that registers names with the decorators the built-in modules use:
``fedbench.methods.register``, ``fedbench.methods.server_opt.register_server_optimizer``,
``fedbench.data.registry.register_dataset``,
``fedbench.models.registry.register_model`` and ``fedbench.tables.spec.table`` / ``register``.
Registering runs the same checks as for a built-in name, so a bad plugin stops with one line
naming its file.

Plugins are loaded from, in this order: the entry-point group ``fedbench.plugins`` of installed
packages (a module, or a callable taking no arguments), ``FEDBENCH_PLUGINS`` (entries separated
by ``os.pathsep``) and ``--plugin`` on the command line. Loading a plugin also adds it to
``FEDBENCH_PLUGINS`` in this process's environment, so a sweep's worker processes (and Ray tasks,
which get the variable) load the same plugins before they build a config. Loading one twice is a
no-op.

A run records the plugins that provided its method, dataset or model (file, SHA-256) in its
run.json (``records_for``); the run's identity is its config and the method's ``version``, as
for a built-in method, so moving or re-saving the plugin file keeps it.

Torch-free and a leaf: it imports nothing of fedbench but errors.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import re
import sys
import traceback
import types
from dataclasses import dataclass
from pathlib import Path

from fedbench.errors import FedbenchError

ENV = "FEDBENCH_PLUGINS"
ENTRY_POINT_GROUP = "fedbench.plugins"


@dataclass(frozen=True)
class Plugin:
    """One loaded plugin: what was given, the module it became and the file it ran."""

    source: str  # as given: a file path, a module name, or "entry point NAME"
    module: str  # its name in sys.modules
    path: str | None  # the file that ran (absolute)
    sha256: str | None  # of that file

    def record(self) -> dict:
        """What run.json keeps of it."""
        return {"source": self.source, "module": self.module, "path": self.path,
                "sha256": self.sha256}  # fmt: skip


LOADED: dict[str, Plugin] = {}  # key: absolute file path or module name


def file_sha256(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def is_file_spec(spec: str) -> bool:
    """A file path (has a slash or ends in .py), not a dotted module name."""
    return spec.endswith(".py") or "/" in spec or os.sep in spec


def _module_name(path: Path) -> str:
    """A stable sys.modules name for a plugin file: its stem and a hash of its location."""
    stem = re.sub(r"\W", "_", path.stem)
    return f"fedbench_plugin_{stem}_{hashlib.sha256(str(path).encode()).hexdigest()[:8]}"


def _plugin_error(where: str, e: BaseException) -> FedbenchError:
    """One line: which plugin, what went wrong and, for an error in its code, the line."""
    if isinstance(e, FedbenchError):
        return FedbenchError(f"plugin {where}: {e}")
    if isinstance(e, SyntaxError):
        return FedbenchError(f"plugin {where}: syntax error at line {e.lineno}: {e.msg}")
    if isinstance(e, SystemExit):  # sys.exit(0) too: a command must never end silently here
        return FedbenchError(
            f"plugin {where} called sys.exit({e.code!r}) while being imported; a plugin only "
            "defines and registers (fix or remove it)"
        )
    if isinstance(e, KeyboardInterrupt):
        return FedbenchError(
            f"plugin {where} raised KeyboardInterrupt while being imported; fix or remove it"
        )
    frames = [f for f in traceback.extract_tb(e.__traceback__) if f.filename == where]
    line = f" (line {frames[-1].lineno})" if frames else ""
    first = (str(e).strip().splitlines() or [""])[0]
    return FedbenchError(f"plugin {where}: {type(e).__name__}: {first}{line}")


def _passes(e: BaseException) -> bool:
    """What a plugin's import may raise through: fedbench's own signal stop (it carries the
    signal's number) and running out of memory; sys.exit and KeyboardInterrupt of its code
    become one line naming it."""
    return isinstance(e, MemoryError) or (isinstance(e, KeyboardInterrupt) and hasattr(e, "signum"))


def load_file(spec: str) -> Plugin:
    path = Path(spec).expanduser().resolve()
    key = str(path)
    if key in LOADED:
        return LOADED[key]
    if not path.is_file():
        what = "is not a file" if path.exists() else "not found"
        raise FedbenchError(f"plugin {spec} {what}; give a .py file or an importable module")
    if path.suffix != ".py":
        raise FedbenchError(f"plugin {spec} is not a .py file; give Python source or a module")
    name = _module_name(path)
    module_spec = importlib.util.spec_from_file_location(name, path)
    if module_spec is None or module_spec.loader is None:  # pragma: no cover
        raise FedbenchError(f"plugin {spec}: Python cannot load it as a module")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module  # dataclasses and pickling look classes up by module name
    try:
        module_spec.loader.exec_module(module)
    except BaseException as e:
        sys.modules.pop(name, None)
        if _passes(e):
            raise
        raise _plugin_error(key, e) from None
    plugin = Plugin(spec, name, key, file_sha256(path))
    LOADED[key] = plugin
    return plugin


def load_module(spec: str, source: str | None = None) -> Plugin:
    if spec in LOADED:
        return LOADED[spec]
    try:
        module = importlib.import_module(spec)
    except ModuleNotFoundError as e:
        if e.name and spec.startswith(e.name):  # the plugin itself, not one of its imports
            raise FedbenchError(
                f"plugin {spec}: no module named {e.name}; give a .py file or a module on "
                "the Python path"
            ) from None
        raise _plugin_error(spec, e) from None
    except BaseException as e:
        if _passes(e):
            raise
        where = getattr(sys.modules.get(spec), "__file__", None) or spec
        raise _plugin_error(where, e) from None
    path = getattr(module, "__file__", None)
    plugin = Plugin(source or spec, spec, path, file_sha256(path) if path else None)
    LOADED[spec] = plugin
    return plugin


def load(specs) -> list[Plugin]:
    """Load each plugin (a file path or a module name), in order; add them to ENV so that
    worker processes load them too. Raises a one-line FedbenchError for the first bad one."""
    out = []
    for spec in specs:
        spec = str(spec).strip()
        if not spec:
            continue
        out.append(load_file(spec) if is_file_spec(spec) else load_module(spec))
    _export(out)
    return out


def _export(plugins: list[Plugin]) -> None:
    """Add the plugins (files as absolute paths) to this process's ENV."""
    entries = env_entries()
    for p in plugins:
        entry = p.path if is_file_spec(p.source) else p.module
        if p.source.startswith("entry point "):
            continue  # a worker finds installed entry points itself
        if entry and entry not in entries:
            entries.append(entry)
    if entries:
        os.environ[ENV] = os.pathsep.join(entries)


def env_entries() -> list[str]:
    return [e for e in os.environ.get(ENV, "").split(os.pathsep) if e.strip()]


_ENTRY_POINTS: list[Plugin] = []  # loaded once per process
_SCANNED: list[bool] = []


def load_entry_points() -> list[Plugin]:
    """The installed packages' plugins (entry-point group fedbench.plugins), once."""
    if _SCANNED:
        return list(_ENTRY_POINTS)
    from importlib.metadata import entry_points

    out = []
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        source = f"entry point {ep.name}"
        if ep.value in LOADED:
            out.append(LOADED[ep.value])
            continue
        try:
            obj = ep.load()
            if callable(obj) and not isinstance(obj, types.ModuleType):
                obj()
        except BaseException as e:
            if _passes(e):
                raise
            raise _plugin_error(f"{ep.value} ({source})", e) from None
        module = ep.value.split(":")[0]
        path = getattr(sys.modules.get(module), "__file__", None)
        plugin = Plugin(source, module, path, file_sha256(path) if path else None)
        LOADED[ep.value] = plugin
        out.append(plugin)
    _ENTRY_POINTS[:] = out
    _SCANNED.append(True)
    return out


def load_all(extra=()) -> list[Plugin]:
    """Entry points, then ENV, then `extra` (the command line's --plugin values)."""
    out = load_entry_points()
    try:
        out += load(env_entries())
    except FedbenchError as e:
        raise FedbenchError(f"{e} (from {ENV})") from None
    return out + load(extra)


def owner(module: str) -> Plugin | None:
    """The plugin whose module (or a submodule of it) is `module`; None: not a plugin's."""
    for p in LOADED.values():
        if module == p.module or module.startswith(p.module + "."):
            return p
    return None


def records_for(modules) -> list[dict]:
    """run.json's `plugins`: each plugin that implements one of these modules, once."""
    out: dict[str, dict] = {}
    for m in modules:
        p = owner(m) if m else None
        if p is not None:
            out.setdefault(p.module, p.record())
    return list(out.values())
