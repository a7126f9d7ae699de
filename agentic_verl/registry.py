"""One small registry class for every extension kind (rewards, tools, agent loops, ...).

A registry maps a string name (used in YAML) to an object. Anywhere a name is accepted, a
`module:attr` or `path/to/file.py:attr` reference is accepted too, so users can plug in their own
code without registering it first.

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
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

T = TypeVar("T")


class RegistryError(KeyError):
    """An unknown or duplicate name; the message lists what is known."""

    def __str__(self) -> str:  # KeyError would wrap the message in quotes
        return str(self.args[0])


class Registry(Generic[T]):
    def __init__(self, kind: str):
        self.kind = kind
        self._entries: dict[str, T] = {}

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
        """Look up a registered name, or import a `module:attr` / `file.py:attr` reference."""
        if name in self._entries:
            return self._entries[name]
        if ":" in name:
            return load_reference(name)
        known = ", ".join(sorted(self._entries)) or "(none)"
        raise RegistryError(f"unknown {self.kind} {name!r}; known: {known}; or pass 'module:attr' / 'file.py:attr'")

    def names(self) -> list[str]:
        return sorted(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())


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
