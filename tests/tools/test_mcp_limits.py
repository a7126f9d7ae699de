"""McpTool's limits against the real stdio test server (tests/tools/mcp_servers/counter_server.py): fail-fast after
consecutive failed starts / crashes, and the cap on live connections per server."""

from __future__ import annotations

import asyncio
import gc
import sys
import time
from pathlib import Path

import pytest
from verl.experimental.agent_loop.tool_parser import FunctionCall

from agentic_verl.agent_loops.tool_agent_traced import TracedToolAgentLoop
from agentic_verl.tools.mcp import MCP_FAILURES, McpFailFastError, McpTool

SERVER = str(Path(__file__).parent / "mcp_servers" / "counter_server.py")


class Trajectory:  # stands in for verl's AgentData: one object per trajectory, freed at its end
    pass


def _tool(tool: str, refuse: Path, **config) -> McpTool:
    # the env makes the server spec (and so its fail-fast streak and pool) this test's own
    server = {"command": [sys.executable, SERVER], "stderr": "discard",
              "env": {"COUNTER_SERVER_REFUSE_IF_EXISTS": str(refuse)}}
    return McpTool({"type": "native", "server": server, "tool": tool, "connect_timeout_s": 10, **config})


@pytest.fixture(autouse=True)
def _fresh_streaks():
    MCP_FAILURES.clear()
    yield
    MCP_FAILURES.clear()


def test_a_server_that_never_starts_stops_the_run_with_the_reason(tmp_path):
    refuse = tmp_path / "refuse"
    tool = _tool("increment", refuse, max_consecutive_failures=3)
    refuse.touch()  # listed when the tools were built, then it stops starting

    async def run():
        observed = [await tool.execute("x", {"by": 1}, agent_data=Trajectory()) for _ in range(2)]
        with pytest.raises(McpFailFastError) as third:
            await tool.execute("x", {"by": 1}, agent_data=Trajectory())
        refuse.unlink()  # even a server that is back: the run stays stopped
        with pytest.raises(McpFailFastError):
            await tool.execute("x", {"by": 1}, agent_data=Trajectory())
        return observed, str(third.value)

    observed, reason = asyncio.run(run())
    assert [metrics["status"] for _, _, metrics in observed] == ["connect_failed"] * 2
    assert "failed to start or crashed 3 times in a row" in reason and "counter_server.py" in reason
    assert "max_consecutive_failures=3" in reason
    with pytest.raises(McpFailFastError):
        tool.raise_if_tripped()


def test_crashes_in_a_row_trip_and_an_answer_resets_the_streak(tmp_path):
    refuse = tmp_path / "refuse"
    crash = _tool("crash", refuse, max_consecutive_failures=3)
    fail = _tool("fail", refuse, max_consecutive_failures=3)

    async def run():
        statuses = []
        for tool, arguments in ((crash, {}), (crash, {}), (fail, {"reason": "r"}), (crash, {}), (crash, {})):
            statuses.append((await tool.execute("x", arguments, agent_data=Trajectory()))[2]["status"])
        with pytest.raises(McpFailFastError, match="3 times in a row"):
            await crash.execute("x", {}, agent_data=Trajectory())
        return statuses

    # an isError answer means the server is up: the streak starts again
    assert asyncio.run(run()) == ["server_crashed"] * 2 + ["tool_error"] + ["server_crashed"] * 2


def test_zero_never_stops(tmp_path):
    refuse = tmp_path / "refuse"
    tool = _tool("increment", refuse, max_consecutive_failures=0)
    refuse.touch()

    async def run():
        return [(await tool.execute("x", {"by": 1}))[2]["status"] for _ in range(4)]

    assert asyncio.run(run()) == ["connect_failed"] * 4
    tool.raise_if_tripped()  # does not raise


def test_the_traced_loop_turns_the_trip_into_a_failed_trajectory(tmp_path):
    """verl's `_call_tool` swallows a tool's exception; tool_agent_traced re-raises the fail-fast error."""
    from verl.experimental.agent_loop.tool_agent_loop import ToolAgentLoop

    refuse = tmp_path / "refuse"
    tool = _tool("increment", refuse, max_consecutive_failures=1)
    loop = TracedToolAgentLoop.__new__(TracedToolAgentLoop)
    loop.tools = {"increment": tool}
    loop._raise_if_a_tool_tripped()  # not tripped: nothing raised
    refuse.touch()
    verl_self = type("LoopSelf", (), {"tools": loop.tools, "max_tool_response_length": 1000,
                                      "tool_response_truncate_side": "right"})()

    async def run():
        call = FunctionCall(name="increment", arguments='{"by": 1}')
        return (await ToolAgentLoop._call_tool(verl_self, call, {}, Trajectory()))[0].text

    assert "failed to start or crashed 1 times" in asyncio.run(run())  # verl made it an observation
    with pytest.raises(McpFailFastError, match="failed to start or crashed 1 times"):
        loop._raise_if_a_tool_tripped()


def test_bad_limits_are_config_errors(tmp_path):
    for key, value in (("max_consecutive_failures", -1), ("max_connections", 1.5), ("connection_wait_s", 0)):
        with pytest.raises(ValueError, match=key):
            _tool("increment", tmp_path / "refuse", **{key: value})


def test_concurrent_trajectories_wait_for_the_connection_cap(tmp_path):
    tool = _tool("sleep", tmp_path / "refuse", max_connections=2, timeout_s=10)
    peak = 0

    async def trajectory_run():
        trajectory = Trajectory()
        result = await tool.execute("x", {"seconds": 0.5}, agent_data=trajectory)
        del trajectory  # verl frees the trajectory's AgentData: its server ends and the slot is free
        gc.collect()
        return result

    async def watch(stop: asyncio.Event):
        nonlocal peak
        while not stop.is_set():
            peak = max(peak, tool.connections.live())
            await asyncio.sleep(0.01)

    async def run():
        stop = asyncio.Event()
        watcher = asyncio.create_task(watch(stop))
        started = time.perf_counter()
        results = await asyncio.gather(*(trajectory_run() for _ in range(6)))
        elapsed = time.perf_counter() - started
        stop.set()
        await watcher
        return results, elapsed

    results, elapsed = asyncio.run(run())
    assert [metrics["status"] for _, _, metrics in results] == ["ok"] * 6
    assert peak == 2  # never more than the cap, and the cap was used
    assert elapsed >= 1.4  # six 0.5 s calls, two at a time


def test_past_the_cap_a_caller_waits_a_bounded_time(tmp_path):
    tool = _tool("increment", tmp_path / "refuse", max_connections=1, connection_wait_s=0.5)

    async def run():
        holder = Trajectory()  # a trajectory still running: it keeps its connection
        first = await tool.execute("x", {"by": 1}, agent_data=holder)
        started = time.perf_counter()
        blocked = await tool.execute("x", {"by": 1}, agent_data=Trajectory())
        waited = time.perf_counter() - started
        again = await tool.execute("x", {"by": 1}, agent_data=holder)  # its own connection still serves it
        del holder
        gc.collect()
        await asyncio.sleep(0.2)  # the freed trajectory's server ends
        freed = await tool.execute("x", {"by": 1}, agent_data=Trajectory())
        return first, blocked, waited, again, freed

    first, (blocked, _, blocked_metrics), waited, again, freed = asyncio.run(run())
    assert first[0].text == "count=1" and again[0].text == "count=2"
    assert blocked_metrics["status"] == "too_many_connections" and "all 1 connections" in blocked.text
    assert 0.4 <= waited < 5
    assert freed[0].text == "count=1" and freed[2]["status"] == "ok"
