"""The shape of what we build and configure: the fields a class requires and accepts (a pydantic model, a
dataclass or a plain constructor), and the keys of a config dataclass.

    >>> from dataclasses import dataclass
    >>> @dataclass
    ... class Out:
    ...     token_ids: list
    ...     stop_reason: str = "completed"
    >>> field_problems(Out, ("token_ids",))
    []
    >>> @dataclass
    ... class Out2:
    ...     token_ids: list
    ...     request_id: str
    >>> field_problems(Out2, ("token_ids",))
    ["requires field(s) 'request_id' that our code does not pass (it builds Out2 with token_ids)"]
"""

from __future__ import annotations

import inspect
import typing
from dataclasses import MISSING, fields, is_dataclass


def required_fields(cls) -> list[str]:
    """The fields a class cannot be built without: a pydantic model's required fields, a dataclass's fields with no
    default, else its constructor's parameters with no default."""
    model_fields = getattr(cls, "model_fields", None)
    if isinstance(model_fields, dict):
        return [name for name, info in model_fields.items() if info.is_required()]
    if is_dataclass(cls):
        return [f.name for f in fields(cls) if f.init and f.default is MISSING and f.default_factory is MISSING]
    parameters = list(inspect.signature(cls).parameters.values())
    return [p.name for p in parameters if p.default is p.empty and p.name != "self"
            and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


def accepted_fields(cls) -> set[str] | None:
    """The fields a class can be built with (None: any keyword, a **kwargs constructor)."""
    model_fields = getattr(cls, "model_fields", None)
    if isinstance(model_fields, dict):
        return set(model_fields)
    parameters = inspect.signature(cls).parameters.values()
    if any(p.kind == p.VAR_KEYWORD for p in parameters):
        return None
    return {p.name for p in parameters}


def field_problems(cls, builds_with) -> list[str]:
    """What stops our code from building `cls` with the fields `builds_with`."""
    if not inspect.isclass(cls):
        return [f"is no longer a class we can build ({type(cls).__name__})"]
    problems = []
    new = [name for name in required_fields(cls) if name not in builds_with]
    if new:
        problems.append(f"requires field(s) {', '.join(map(repr, new))} that our code does not pass "
                        f"(it builds {cls.__name__} with {', '.join(builds_with)})")
    accepted = accepted_fields(cls)
    gone = [] if accepted is None else [name for name in builds_with if name not in accepted]
    if gone:
        problems.append(f"no longer takes field(s) {', '.join(map(repr, gone))} that our code passes")
    return problems


def dataclass_key_problems(cls, keys) -> list[str]:
    """The dotted `keys` that are not fields of the config dataclass `cls` (nested dataclasses followed)."""
    problems = []
    for key in keys:
        node, owner = cls, getattr(cls, "__name__", repr(cls))
        for part in key.split("."):
            if not is_dataclass(node) or part not in {f.name for f in fields(node)}:
                problems.append(f"config key {key!r} is gone ({part!r} is not a field of {owner})")
                break
            node, owner = _dataclass_in(typing.get_type_hints(node).get(part)), f"{owner}.{part}"
    return problems


def _dataclass_in(hint):
    """The dataclass a field's type names (Optional[X] included), else None."""
    for candidate in (hint, *typing.get_args(hint)):
        if is_dataclass(candidate):
            return candidate
    return None
