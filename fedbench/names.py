"""One small registry type for every kind of name the tool accepts (dataset, model, ...).

Each name is registered by the module that implements it (``@DATASETS.register("mnist")``), so
listings, help texts and validation read the registry instead of a hand-kept list. Torch-free:
a registry is a dict of name -> entry in registration order, plus one-line errors.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar

from fedbench.errors import FedbenchError

T = TypeVar("T")


class Registry(dict, Generic[T]):
    """name -> entry of one kind. ``entry(name, obj, **meta)`` turns what a decorator receives
    into the stored entry (default: the object itself); ``on_add(name, entry)`` is told of each
    name added (e.g. so that config validation accepts a plugin's dataset)."""

    def __init__(
        self,
        kind: str,
        entry: Callable[..., T] | None = None,
        on_add: Callable[[str, T], None] | None = None,
    ):
        super().__init__()
        self.kind = kind
        self._entry = entry
        self._on_add = on_add

    def add(self, name: str, value: T) -> T:
        if name in self and self[name] != value:
            raise FedbenchError(f"{self.kind} name {name!r} is already registered")
        self[name] = value
        if self._on_add is not None:
            self._on_add(name, value)
        return value

    def register(self, *names: str, **meta: Any):
        """Decorator: register the decorated object under each of `names`."""
        if not names:
            raise FedbenchError(f"register a {self.kind} under at least one name")

        def add(obj):
            for name in names:
                self.add(name, self._entry(name, obj, **meta) if self._entry else obj)
            return obj

        return add

    def lookup(self, name: str) -> T:
        """The entry of `name`, or a one-line error listing the choices."""
        if name not in self:
            raise FedbenchError(f"unknown {self.kind} {name!r}; choose one of: {', '.join(self)}")
        return self[name]

    def names(self, **where: Any) -> tuple[str, ...]:
        """Registered names in order; with keyword filters, those whose entry has the given
        attribute values (``DATASETS.names(natural=True)``)."""
        return tuple(
            n for n, e in self.items() if all(getattr(e, k) == v for k, v in where.items())
        )
