"""One small registry class for every extension kind (rewards, tools, agent loops, ...).

A registry maps a string name (used in YAML) to an object. Anywhere a name is accepted, a
`module:attr` or `path/to/file.py:attr` reference is accepted too, so users can plug in their own
code without registering it first. A registry with an entry-point group also knows the names that
installed distributions declare there (`name = module:attr`), imported on first lookup, so an
outside package's names work in every process (verl's Ray workers too) without importing it first.

>>> scorers = Registry("scorer")
>>> @scorers.register("double")
... def double(x):
...     return 2 * x
>>> scorers.get("double")(3)
6
>>> scorers.get("math:sqrt")(9.0)
3.0
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import threading
from collections.abc import Callable, Iterator
from importlib import metadata
from typing import Generic, TypeVar

T = TypeVar("T")


class RegistryError(KeyError):
    """An unknown or duplicate name, or an entry point that cannot be imported; the message says which."""

    def __str__(self) -> str:  # KeyError would wrap the message in quotes
        return str(self.args[0])


class Registry(Generic[T]):
    def __init__(self, kind: str, entry_point_group: str | None = None):
        self.kind = kind
        self.entry_point_group = entry_point_group
        self._entries: dict[str, T] = {}
        self._declared: dict[str, list[metadata.EntryPoint]] | None = None  # read on first need
        self._loaded: dict[str, T] = {}  # entry points already imported
        self._lock = threading.RLock()  # reentrant: an entry point may look other names up while it imports

    def register(self, name: str) -> Callable[[T], T]:
        """Decorator: register `obj` under `name`. Registering a different object twice is an error."""

        def decorator(obj: T) -> T:
            existing = self._entries.get(name)
            if existing is not None and existing is not obj:
                raise RegistryError(f"{self.kind} {name!r} is already registered (by {_describe(existing)})")
            self._entries[name] = obj
            return obj

        return decorator

    def get(self, name: str) -> T:
        """A registered name, an entry point's name, or a `module:attr` / `file.py:attr` reference."""
        declared = self.entry_points().get(name)
        if declared:
            return self._load_entry_point(name, declared)
        if name in self._entries:
            return self._entries[name]
        if ":" in name:
            return load_reference(name)
        known = ", ".join(sorted(self._entries)) or "(none)"
        where = "or pass 'module:attr' / 'file.py:attr'"
        if self.entry_point_group:
            declared = sorted(self.entry_points().items())
            installed = ", ".join(f"{n} ({_distribution(found[0])})" for n, found in declared)
            known += f"; entry points ({self.entry_point_group}): {installed or '(none installed)'}"
            where += f", or declare it in the {self.entry_point_group!r} entry-point group of an installed package"
        raise RegistryError(f"unknown {self.kind} {name!r}; known: {known}; {where}")

    def entry_points(self) -> dict[str, list[metadata.EntryPoint]]:
        """Name -> the installed entry points that declare it (more than one is an error on lookup)."""
        if self.entry_point_group is None:
            return {}
        if self._declared is None:
            declared: dict[str, list[metadata.EntryPoint]] = {}
            for entry_point in metadata.entry_points(group=self.entry_point_group):
                declared.setdefault(entry_point.name, []).append(entry_point)
            self._declared = declared
        return self._declared

    def refresh(self) -> None:
        """Forget the entry points read so far (a package installed into a running process)."""
        with self._lock:
            self._declared = None
            self._loaded.clear()

    def names(self) -> list[str]:
        return sorted({*self._entries, *self.entry_points()})

    def __contains__(self, name: object) -> bool:
        return name in self._entries or name in self.entry_points()

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def _load_entry_point(self, name: str, declared: list[metadata.EntryPoint]) -> T:
        if len(declared) > 1:
            origins = "; ".join(entry_point_origin(entry_point) for entry_point in declared)
            raise RegistryError(f"{self.kind} {name!r} is declared by {len(declared)} entry points in "
                                f"{self.entry_point_group!r}: {origins}; uninstall or rename all but one")
        [entry_point] = declared
        with self._lock:
            if name not in self._loaded:
                try:
                    obj = entry_point.load()
                except Exception as exc:  # ImportError, or whatever the module raised: say whose it is
                    raise RegistryError(f"{self.kind} {name!r}: cannot import the entry point "
                                        f"{entry_point_origin(entry_point)}: {type(exc).__name__}: {exc}") from exc
                self._loaded[name] = obj
            obj = self._loaded[name]
        existing = self._entries.get(name)
        if existing is not None and existing is not obj:  # the same object registered by its own module is fine
            raise RegistryError(f"{self.kind} {name!r} is registered twice: by {_describe(existing)} and by the "
                                f"entry point {entry_point_origin(entry_point)}; rename the entry point")
        return obj


def entry_point_origin(entry_point: metadata.EntryPoint) -> str:
    """Whose entry point it is, for error messages: 'name = module:attr' of distribution NAME VERSION."""
    return f"'{entry_point.name} = {entry_point.value}' of distribution {_distribution(entry_point)}"


def _distribution(entry_point: metadata.EntryPoint) -> str:
    dist = getattr(entry_point, "dist", None)
    return f"{dist.name} {dist.version}" if dist is not None else "(unknown)"


def load_reference(reference: str):
    """Import `module.sub:attr` or `path/to/file.py:attr` and return the attribute."""
    target, _, attr = reference.rpartition(":")
    if not target or not attr:
        raise RegistryError(f"bad reference {reference!r}: expected 'module:attr' or 'path/file.py:attr'")
    if target.endswith(".py"):
        if not os.path.isfile(target):
            raise RegistryError(f"bad reference {reference!r}: file {target!r} does not exist")
        module_name = f"_agentic_verl_user_{abs(hash(os.path.abspath(target)))}"
        module = sys.modules.get(module_name)
        if module is None:
            spec = importlib.util.spec_from_file_location(module_name, target)
            module = importlib.util.module_from_spec(spec)
            sys.modules[module_name] = module
            spec.loader.exec_module(module)
    else:
        try:
            module = importlib.import_module(target)
        except ImportError as exc:
            raise RegistryError(f"bad reference {reference!r}: cannot import {target!r} ({exc})") from exc
    try:
        return getattr(module, attr)
    except AttributeError:
        raise RegistryError(f"bad reference {reference!r}: {target!r} has no attribute {attr!r}") from None


def _describe(obj: object) -> str:
    return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', repr(obj))}"
