"""The checks the evaluations' settings dataclasses make in `__post_init__` (bfcl_eval, humaneval, qa_eval,
screenspot): counts that must be at least 1, named in the error as the field is named; data paths that must exist."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path


def checked_paths(data, present: Callable[[Path], bool], *, none_given: str, not_found: str) -> list[str]:
    """`data` (one path or a list of them) as a list of strings: ValueError(`none_given`) when empty,
    FileNotFoundError("`not_found`: the missing ones") when any fails `present` (Path.is_file, Path.exists)."""
    paths = [str(p) for p in ([data] if isinstance(data, (str, Path)) else data)]
    if not paths:
        raise ValueError(none_given)
    missing = [p for p in paths if not present(Path(p))]
    if missing:
        raise FileNotFoundError(f"{not_found}: {', '.join(missing)}")
    return paths


def check_counts(settings, *names: str, none_allowed: tuple[str, ...] = ()) -> None:
    """ValueError naming the first field of `settings` among `names` (in order) whose value is below 1; a field in
    `none_allowed` may be None (no bound, e.g. `limit`)."""
    for name in names:
        value = getattr(settings, name)
        if value is None and name in none_allowed:
            continue
        if int(value) < 1:
            raise ValueError(f"{name} must be >= 1, got {value}")
