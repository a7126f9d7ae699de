"""Fail-fast for tool servers: stop a run whose server stopped answering, instead of training on error observations.

`ConsecutiveFailures` counts, per key (a server URL) and per process, the calls in a row that got no answer; any
answer resets the count. When the count reaches the caller's limit it raises `SearchFailFastError`, logs the
message once, and keeps raising it from `raise_if_tripped` for the rest of the process (every later sample fails
at once: the server is gone). Shared by all trajectories of an agent-loop worker; verl runs them as coroutines of
one event loop, so plain counters are enough.

>>> failures = ConsecutiveFailures()
>>> failures.failed("http://x", limit=2, message=lambda n: f"{n} failed")
>>> failures.reset("http://x"); failures.failed("http://x", limit=2, message=lambda n: f"{n} failed")
>>> failures.failed("http://x", limit=2, message=lambda n: f"{n} failed")
Traceback (most recent call last):
...
agentic_verl.agent_loops.fail_fast.SearchFailFastError: 2 failed
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

logger = logging.getLogger(__name__)


class SearchFailFastError(RuntimeError):
    """A tool server failed too many calls in a row: the run must stop (see `ConsecutiveFailures`)."""


@dataclass
class _Streak:
    count: int = 0
    error: str | None = None  # set once the limit was reached


class ConsecutiveFailures:
    def __init__(self):
        self._streaks: dict[str, _Streak] = {}

    def failed(self, key: str, limit: int, message: Callable[[int], str]) -> None:
        """One more call without an answer; at `limit` (0 = never) raise SearchFailFastError(message(count))."""
        streak = self._streaks.setdefault(key, _Streak())
        streak.count += 1
        if not limit or streak.count < int(limit):
            return
        if streak.error is None:
            streak.error = message(streak.count)
            logger.error(streak.error)
        raise SearchFailFastError(streak.error)

    def reset(self, key: str) -> None:
        """The server answered: the streak starts again (a tripped key stays tripped)."""
        streak = self._streaks.get(key)
        if streak is not None:
            streak.count = 0

    def raise_if_tripped(self, key: str) -> None:
        streak = self._streaks.get(key)
        if streak is not None and streak.error is not None:
            raise SearchFailFastError(streak.error)

    def count(self, key: str) -> int:
        streak = self._streaks.get(key)
        return streak.count if streak else 0

    def clear(self) -> None:
        """Forget every streak and trip (an in-process caller that restarted its server; tests)."""
        self._streaks.clear()
