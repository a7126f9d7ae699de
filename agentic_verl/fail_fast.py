"""Fail-fast: stop a run whose server stopped answering, or whose reward keeps raising, instead of training on
error observations or zero rewards.

`ConsecutiveFailures` counts, per key (a server URL, a reward component) and per process, the calls in a row that
failed; any success resets the count. When the count reaches the caller's limit it raises its error class (a
`FailFastError`), logs the message once, and keeps raising it from `raise_if_tripped` for the rest of the process
(every later sample fails at once: the server is gone, the reward is broken). verl runs an agent-loop worker's
trajectories as coroutines of one event loop, but a reward manager calls a synchronous `compute_score` from a
thread pool, so the counters sit behind a lock. Users: the `rag_r1` loop and `SearchTool` share one counter,
`SEARCH_FAILURES` (`SearchFailFastError`, per retrieval URL or local index: a dead server is dead for both, whatever
mix of loops a process runs), and the reward wrappers of agentic_verl.rewards.failures (`RewardFailFastError`, per
component).

>>> failures = ConsecutiveFailures(SearchFailFastError)
>>> failures.failed("http://x", limit=2, message=lambda n: f"{n} failed")
>>> failures.reset("http://x"); failures.failed("http://x", limit=2, message=lambda n: f"{n} failed")
>>> failures.failed("http://x", limit=2, message=lambda n: f"{n} failed")
Traceback (most recent call last):
...
agentic_verl.fail_fast.SearchFailFastError: 2 failed
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass

logger = logging.getLogger(__name__)


def check_limit(value, name: str, error: type[Exception] = ValueError) -> int:
    """A fail-fast limit from a config: an int >= 0 (0 = never stop), else `error` naming the setting `name`."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise error(f"{name} must be an integer >= 0 (0 = never stop), got {value!r}")
    return value


class FailFastError(RuntimeError):
    """Something failed too many times in a row: the run must stop (see `ConsecutiveFailures`)."""


class SearchFailFastError(FailFastError):
    """A tool server failed too many calls in a row."""


@dataclass
class _Streak:
    count: int = 0
    error: str | None = None  # set once the limit was reached


class ConsecutiveFailures:
    def __init__(self, error: type[FailFastError] = FailFastError):
        self.error = error
        self._streaks: dict[str, _Streak] = {}
        self._lock = threading.Lock()

    def failed(self, key: str, limit: int, message: Callable[[int], str]) -> None:
        """One more failed call; at `limit` (0 = never) raise `self.error(message(count))`."""
        with self._lock:
            streak = self._streaks.setdefault(key, _Streak())
            streak.count += 1
            if not limit or streak.count < int(limit):
                return
            if streak.error is None:
                streak.error = message(streak.count)
                logger.error(streak.error)
            error = streak.error
        raise self.error(error)

    def reset(self, key: str) -> None:
        """The call succeeded: the streak starts again (a tripped key stays tripped)."""
        with self._lock:
            streak = self._streaks.get(key)
            if streak is not None:
                streak.count = 0

    def raise_if_tripped(self, key: str) -> None:
        streak = self._streaks.get(key)
        if streak is not None and streak.error is not None:
            raise self.error(streak.error)

    def count(self, key: str) -> int:
        streak = self._streaks.get(key)
        return streak.count if streak else 0

    def clear(self) -> None:
        """Forget every streak and trip (an in-process caller that restarted its server; tests)."""
        with self._lock:
            self._streaks.clear()


SEARCH_FAILURES = ConsecutiveFailures(SearchFailFastError)  # per retrieval URL (or local index): rag_r1 + SearchTool
