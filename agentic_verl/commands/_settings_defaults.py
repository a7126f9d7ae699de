"""A command's flags default to its settings dataclass's defaults, so that the CLI and a library call agree."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def defaults_of(settings_cls: type) -> Callable[[str], Any]:
    """`default(name)`: the default of the field `name` of the dataclass `settings_cls`."""
    fields = settings_cls.__dataclass_fields__
    return lambda name: fields[name].default
