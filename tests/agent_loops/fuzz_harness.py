"""What the loop fuzz tests (test_fuzz_*.py) share: one event loop for all examples, a server that counts the
outputs it generated, and the assertions every hostile example must pass.

One event loop for a whole test (instead of `asyncio.run` per example) keeps per-loop state warm, e.g. the
retrieval client's HTTP session, so thousands of examples stay within the light pass's time budget.
"""

from __future__ import annotations

import asyncio
import math
from collections import Counter

from agent_loop_helpers import ScriptedServer, build_loop
from agent_loop_invariants import check_token_invariants

from agentic_verl.agent_loops.trace import FAILURE_CATEGORIES, METRIC_KEYS, METRICS_FIELD

TOOL_FAILURES = ("unknown_tool", "bad_arguments", "timeout", "tool_error")  # recorded with a tool call


class FuzzRunner:
    """Runs coroutines on one event loop and counts the non-empty outputs the scripted servers generated.

    It is also the loop's `server_manager`: `generate` goes to the latest `server(...)`, so one loop object (built
    once with `build`: hydra's instantiate costs more than a whole example) serves every example, as a loop object
    that verl reuses would. Our loops keep no state between `run` calls (their config is resolved per sample)."""

    def __init__(self):
        self.loop = asyncio.new_event_loop()
        self.outputs = 0
        self.examples = 0
        self.current: ScriptedServer | None = None
        self.kinds: Counter = Counter()  # failure kind -> count over all examples (what the fuzzing reached)

    def server(self, tokenizer, turns, max_tokens: int) -> ScriptedServer:
        """A ScriptedServer for `turns`; text turns are first cut to 48 characters per token of `max_tokens` (the
        most one generation can keep): the server cuts them at `max_tokens` anyway, and encoding the whole of a
        170,000-character turn only to keep its start would dominate the test's time."""
        self.current = ScriptedServer(tokenizer, [t[: 48 * max_tokens] if isinstance(t, str) else t for t in turns])
        return self.current

    async def generate(self, request_id, **kwargs):
        return await self.current.generate(request_id, **kwargs)

    def build(self, agent_name: str, config, tokenizer, **build_kwargs):
        """The registered loop, built as verl builds it, inside this runner's event loop, served by this runner."""

        async def make():
            return build_loop(agent_name, config, self, tokenizer, **build_kwargs)

        return self.loop.run_until_complete(make())

    def run(self, coro, server: ScriptedServer):
        result = self.loop.run_until_complete(coro)
        self.examples += 1
        self.outputs += sum(1 for output in server.outputs if output.token_ids)
        metrics = getattr(result, "extra_fields", {}).get(METRICS_FIELD) or {}
        self.kinds.update({c: int(metrics.get(f"failure/{c}", 0)) for c in FAILURE_CATEGORIES})
        self.kinds["tool_calls"] += int(metrics.get("num_tool_calls", 0))
        return result

    def close(self):
        self.loop.run_until_complete(self.loop.shutdown_asyncgens())
        self.loop.close()


def failures(out) -> dict[str, float]:
    metrics = out.extra_fields[METRICS_FIELD]
    return {category: metrics[f"failure/{category}"] for category in FAILURE_CATEGORIES}


def check_hostile_output(out, server, tokenizer, response_length: int) -> dict[str, float]:
    """The invariants of any loop output, whatever the model wrote; returns the trace's metrics:

    - ids, mask and logprobs line up, policy tokens are the server's, observations carry logprob 0
      (`check_token_invariants`), and the response fits `response_length`;
    - every metric the trace reports is present and finite, failure counts are non-negative integers;
    - each failed tool call is counted under a tool failure kind, and each tool failure kind belongs to a call."""
    check_token_invariants(out, server, tokenizer)
    assert len(out.response_ids) <= response_length, (len(out.response_ids), response_length)
    metrics = out.extra_fields[METRICS_FIELD]
    assert set(metrics) == set(METRIC_KEYS)
    assert all(isinstance(v, float) and math.isfinite(v) for v in metrics.values()), metrics
    counts = failures(out)
    assert all(v >= 0 and v == int(v) for v in counts.values()), counts
    assert metrics["failed_tool_calls"] == sum(counts[c] for c in TOOL_FAILURES), metrics
    assert metrics["failed_tool_calls"] <= metrics["num_tool_calls"]
    return metrics
