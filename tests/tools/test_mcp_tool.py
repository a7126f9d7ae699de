"""McpTool against a real stdio MCP server (tests/tools/mcp_servers/counter_server.py, the official `mcp` SDK),
loaded through verl's own `initialize_tools_from_config` from a YAML without schemas."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from verl.tools.tool_registry import initialize_tools_from_config

from agentic_verl.commands.tools import main_mcp_yaml, register
from agentic_verl.tools.mcp import McpTool

SERVER = str(Path(__file__).parent / "mcp_servers" / "counter_server.py")
COMMAND = [sys.executable, SERVER]


def _entry(tool: str, **config) -> dict:
    server = {"command": COMMAND, "stderr": "discard"}
    return {"class_name": "agentic_verl.tools.mcp.McpTool",
            "config": {"type": "native", "server": server, "tool": tool, **config}}


@pytest.fixture(scope="module")
def tools(tmp_path_factory) -> dict[str, McpTool]:
    path = tmp_path_factory.mktemp("mcp") / "tools.yaml"
    entries = [_entry("increment"), _entry("fail", session="shared"), _entry("sleep", timeout_s=0.5),
               _entry("crash")]
    path.write_text(yaml.safe_dump({"tools": entries}))  # no tool_schema anywhere: read from the server
    return {tool.name: tool for tool in initialize_tools_from_config(str(path))}


class Trajectory:  # stands in for verl's AgentData: one object per trajectory, freed at its end
    pass


def test_schemas_are_read_from_the_server(tools):
    assert sorted(tools) == ["crash", "fail", "increment", "sleep"]
    schema = tools["increment"].tool_schema.model_dump(exclude_none=True)
    assert schema["function"]["parameters"]["properties"]["by"]["type"] == "integer"
    assert "counter" in schema["function"]["description"]
    # an optional parameter (anyOf, no type) loads and reaches the chat template whole (verl's model rejects it)
    code = tools["fail"].tool_schema.model_dump(exclude_unset=True, exclude_none=True)["function"]["parameters"]
    assert {"type": "integer"} in code["properties"]["code"]["anyOf"] and code["required"] == ["reason"]


def test_execute_and_per_trajectory_state_is_isolated(tools):
    tool = tools["increment"]

    async def run():
        a, b = Trajectory(), Trajectory()
        out = []
        for trajectory, by in ((a, 2), (b, 10), (a, 3)):  # verl: a fresh instance_id per call, one AgentData
            instance_id, _ = await tool.create()
            response, _, metrics = await tool.execute(instance_id, {"by": by}, agent_data=trajectory)
            await tool.release(instance_id)
            out.append((response.text, metrics["status"]))
        first, second = await tool.create(), await tool.create()  # no agent_data: keyed by instance_id
        texts = [(await tool.execute(first[0], {"by": 1}))[0].text, (await tool.execute(second[0], {"by": 1}))[0].text]
        await tool.release(first[0])
        await tool.release(second[0])
        return out, texts

    out, texts = asyncio.run(run())
    assert out == [("count=2", "ok"), ("count=10", "ok"), ("count=5", "ok")]
    assert texts == ["count=1", "count=1"]


def test_a_failing_tool_comes_back_as_text(tools):
    async def run():
        return await tools["fail"].execute("x", {"reason": "no fuel"})

    response, reward, metrics = asyncio.run(run())
    assert "refused: no fuel" in response.text and reward == 0.0
    assert metrics["status"] == "tool_error"


def test_a_timeout_is_an_observation_and_the_connection_lives_on(tools):
    tool = tools["sleep"]

    async def run():
        trajectory = Trajectory()
        slow = await tool.execute("x", {"seconds": 5}, agent_data=trajectory)
        fast = await tool.execute("x", {"seconds": 0.01}, agent_data=trajectory)
        return slow, fast

    (slow, _, slow_metrics), (fast, _, fast_metrics) = asyncio.run(run())
    assert "did not answer within 0.5s" in slow.text and slow_metrics["status"] == "timeout"
    assert fast.text == "slept 0.01" and fast_metrics["status"] == "ok"


def test_a_server_killed_mid_run_is_counted_restarted_and_not_fatal(tools):
    tool = tools["crash"]
    before = tool.counters["restarts"]

    async def run():
        trajectory = Trajectory()
        first = await tool.execute("x", {}, agent_data=trajectory)  # the server SIGKILLs itself
        second = await tool.execute("x", {}, agent_data=trajectory)  # restarted, and killed again
        return first, second

    (first, _, first_metrics), (second, _, second_metrics) = asyncio.run(run())
    assert first_metrics["status"] == "server_crashed" and "exited during the call" in first.text
    assert second_metrics["status"] == "server_crashed"
    assert tool.counters["restarts"] == before + 1 and second_metrics["restarts"] == before + 1


def test_connections_end_with_their_trajectory(tools):
    tool = tools["increment"]

    async def run():
        trajectory = Trajectory()
        await tool.execute("x", {"by": 1}, agent_data=trajectory)
        conn = tool.connections._by_trajectory[trajectory]
        del trajectory
        gc.collect()
        for _ in range(100):  # the finalizer schedules the close on the loop
            if conn._owner.done():
                break
            await asyncio.sleep(0.05)
        return conn

    conn = asyncio.run(run())
    assert conn._owner.done() and len(tool.connections._by_trajectory) == 0


@pytest.fixture(scope="module")
def hostile_loop():  # one loop for all examples, so they share one server connection
    loop = asyncio.new_event_loop()
    yield loop
    loop.run_until_complete(asyncio.sleep(0))
    for task in asyncio.all_tasks(loop):
        task.cancel()
    loop.run_until_complete(asyncio.gather(*asyncio.all_tasks(loop), return_exceptions=True))
    loop.close()


@settings(max_examples=200, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(
    st.none(), st.integers(), st.floats(), st.text(max_size=50), st.binary(max_size=20),
    st.lists(st.integers(), max_size=5),
    st.dictionaries(st.text(max_size=10), st.recursive(
        st.none() | st.booleans() | st.floats() | st.text(max_size=20), lambda inner: st.lists(inner, max_size=3),
        max_leaves=10), max_size=4),
    st.just({"by": "x" * 200_000}), st.just("{\"by\": 1"), st.just({"by": float("nan")}), st.just({1: object()}),
))
def test_hostile_arguments_never_raise(tools, hostile_loop, parameters):
    response, reward, metrics = hostile_loop.run_until_complete(tools["increment"].execute("hostile", parameters))
    assert isinstance(response.text, str) and response.text and reward == 0.0
    assert metrics["status"] in ("ok", "bad_arguments", "tool_error")


def test_a_missing_server_or_tool_fails_when_the_tools_are_built(tmp_path):
    path = tmp_path / "tools.yaml"
    path.write_text(yaml.safe_dump({"tools": [_entry("no_such_tool")]}))
    with pytest.raises(ValueError, match="has no tool 'no_such_tool'"):
        initialize_tools_from_config(str(path))
    with pytest.raises(FileNotFoundError, match="not an executable"):
        McpTool({"type": "native", "server": {"command": ["no-such-binary-xyz"]}, "tool": "t"})


def test_mcp_yaml_output_loads_back_through_verl(tmp_path, capsys):
    out = tmp_path / "entries.yaml"
    assert main_mcp_yaml(["--out", str(out), "--session", "shared", "--", *COMMAND]) == 0
    data = yaml.safe_load(out.read_text())
    assert {entry["config"]["tool"] for entry in data["tools"]} == {"increment", "fail", "sleep", "crash"}
    assert not any("tool_schema" in entry for entry in data["tools"])  # read whole from the server at load
    loaded = {tool.name: tool for tool in initialize_tools_from_config(str(out))}
    # --with-schemas writes them for reading; verl's own YAML schema model rejects fail's optional `code` (anyOf)
    with_schemas = tmp_path / "with_schemas.yaml"
    assert main_mcp_yaml(["--out", str(with_schemas), "--with-schemas", "--tool", "fail", "--", *COMMAND]) == 0
    (entry,) = yaml.safe_load(with_schemas.read_text())["tools"]
    assert entry["tool_schema"]["function"]["parameters"]["properties"]["code"]["anyOf"]
    with pytest.raises(ValueError, match="type"):
        initialize_tools_from_config(str(with_schemas))

    async def run():
        return await loaded["increment"].execute("x", {"by": 7})

    assert asyncio.run(run())[0].text == "count=7"


@pytest.fixture
def http_server_url():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen([*COMMAND, "--http", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.2):
                break
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(10)


def test_a_streamable_http_server_shared_by_trajectories(tmp_path, http_server_url):
    path = tmp_path / "tools.yaml"
    entry = {"class_name": "agentic_verl.tools.mcp.McpTool",
             "config": {"type": "native", "server": {"url": http_server_url}, "tool": "increment", "session": "shared"}}
    path.write_text(yaml.safe_dump({"tools": [entry]}))
    (tool,) = initialize_tools_from_config(str(path))

    async def run():
        return [(await tool.execute("x", {"by": 2}, agent_data=Trajectory()))[0].text for _ in range(2)]

    assert asyncio.run(run()) == ["count=2", "count=4"]  # one server process: the state is shared


def test_the_subcommand_parses_a_server_command_after_the_separator():
    parser = argparse.ArgumentParser(prog="agentic-verl")
    register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["tools", "mcp-yaml", "--session", "shared", "--", "npx", "-y", "server", "--flag"])
    assert (args.command, args.tools_command, args.session) == ("tools", "mcp-yaml", "shared")
    assert [part for part in args.server_command if part != "--"] == ["npx", "-y", "server", "--flag"]


def test_verl_tool_agent_loop_calls_keep_one_session_per_trajectory(tools):
    """verl's own `_call_tool` (create, execute with agent_data, release around every call) keeps the state."""
    from verl.experimental.agent_loop.tool_agent_loop import ToolAgentLoop
    from verl.experimental.agent_loop.tool_parser import FunctionCall

    loop_self = SimpleNamespace(tools=tools, max_tool_response_length=1000, tool_response_truncate_side="right")

    async def call(trajectory, arguments: str) -> str:
        call = FunctionCall(name="increment", arguments=arguments)
        return (await ToolAgentLoop._call_tool(loop_self, call, {}, trajectory))[0].text

    async def run():
        a, b = Trajectory(), Trajectory()
        return [await call(a, '{"by": 4}'), await call(b, '{"by": 1}'), await call(a, '{"by": 4}'),
                await call(a, '{"by": "four"}')]

    texts = asyncio.run(run())
    assert texts[:3] == ["count=4", "count=1", "count=8"]
    assert "valid integer" in texts[3]  # the server's own validation message, as it reports it


def test_a_shared_connection_serves_concurrent_calls():
    tool = McpTool({"type": "native", "server": {"command": COMMAND, "stderr": "discard"}, "tool": "sleep",
                    "session": "shared", "timeout_s": 10})

    async def run():
        await tool.execute("warm", {"seconds": 0})
        started = time.perf_counter()
        results = await asyncio.gather(*(tool.execute(str(i), {"seconds": 1.0}) for i in range(8)))
        return results, time.perf_counter() - started

    results, elapsed = asyncio.run(run())
    assert [metrics["status"] for _, _, metrics in results] == ["ok"] * 8
    assert elapsed < 5.0  # one after another would take 8 s


def test_a_server_that_no_longer_starts_is_an_observation(tmp_path):
    refuse = tmp_path / "refuse"
    server = {"command": COMMAND, "stderr": "discard", "env": {"COUNTER_SERVER_REFUSE_IF_EXISTS": str(refuse)}}
    tool = McpTool({"type": "native", "server": server, "tool": "increment", "connect_timeout_s": 10})

    async def run():
        refuse.touch()
        failed = await tool.execute("x", {"by": 1}, agent_data=(trajectory := Trajectory()))
        refuse.unlink()
        return failed, await tool.execute("x", {"by": 1}, agent_data=trajectory)

    (failed, _, failed_metrics), (ok, _, ok_metrics) = asyncio.run(run())
    assert failed_metrics["status"] == "connect_failed" and "could not be started" in failed.text
    assert (ok.text, ok_metrics["status"]) == ("count=1", "ok")
