"""PythonTool fail-fast: calls the sandbox itself could not run (status sandbox_error) stop the run after
`max_consecutive_sandbox_failures` in a row; the model's own errors, timeouts and kills never do.

The sandbox failure is real: the tool's plan binds a Python installation folder that does not exist, so the
launcher's mount fails inside the new namespace and it reports `setup-error` (what a removed or moved virtual
environment does to a running worker)."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest

from agentic_verl.agent_loops.tool_agent_traced import TracedToolAgentLoop
from agentic_verl.tools.code import PythonTool, SandboxFailFastError

MISSING_INSTALLATION = "/nonexistent/agentic_verl_python_installation"


def make_tool(limit: int, **config) -> PythonTool:
    return PythonTool({"type": "native", "allow_code_execution": True, "timeout_s": 2,
                       "max_consecutive_sandbox_failures": limit, **config})


def break_sandbox(tool: PythonTool) -> None:
    tool.healthy_plan = tool.plan
    tool.plan = dataclasses.replace(tool.plan, read_only=(*tool.plan.read_only, MISSING_INSTALLATION))


def repair_sandbox(tool: PythonTool) -> None:
    tool.plan = tool.healthy_plan


def call(tool: PythonTool, parameters) -> tuple[str, dict]:
    async def go():
        instance_id, _ = await tool.create()
        try:
            response, _, metrics = await tool.execute(instance_id, parameters)
        finally:
            await tool.release(instance_id)
        return response.text, metrics

    return asyncio.run(go())


def test_repeated_sandbox_failures_stop_the_run_with_the_fix():
    tool = make_tool(3)
    break_sandbox(tool)
    for _ in range(2):
        text, metrics = call(tool, {"code": "print(1)"})
        assert metrics["status"] == "sandbox_error" and text.startswith("[sandbox error]")
        assert MISSING_INSTALLATION in text
    with pytest.raises(SandboxFailFastError) as raised:
        call(tool, {"code": "print(1)"})
    message = str(raised.value)
    assert "could not run 3 calls in a row" in message and MISSING_INSTALLATION in message
    assert "max_consecutive_sandbox_failures=3" in message and "detect_isolation" in message
    with pytest.raises(SandboxFailFastError):
        tool.raise_if_tripped()
    repair_sandbox(tool)  # tripped stays tripped for the process: the run is over
    with pytest.raises(SandboxFailFastError):
        call(tool, {"code": "print(1)"})
    # the loop asks every tool after each call (verl's _call_tool swallows the exception into an observation)
    loop = TracedToolAgentLoop.__new__(TracedToolAgentLoop)
    loop.tools = {"python": tool}
    with pytest.raises(SandboxFailFastError):
        loop._raise_if_a_tool_tripped()


def test_the_models_own_failures_never_count_and_reset_the_streak():
    tool = make_tool(2, timeout_s=1)
    for code in ("raise ValueError('mine')", "while True: pass", "import os; os._exit(3)"):
        for _ in range(2):  # twice the limit in a row: still observations
            _, metrics = call(tool, {"code": code})
            assert metrics["status"] in ("error", "timeout", "killed")
    tool.raise_if_tripped()
    break_sandbox(tool)
    assert call(tool, {"code": "print(1)"})[1]["status"] == "sandbox_error"
    repair_sandbox(tool)
    assert call(tool, {"code": "1 / 0"})[1]["status"] == "error"  # the sandbox ran it: the streak starts again
    break_sandbox(tool)
    assert call(tool, {"code": "print(1)"})[1]["status"] == "sandbox_error"
    assert call(tool, {"code": ""})[1]["status"] == "bad_arguments"  # never reached the sandbox: no reset
    with pytest.raises(SandboxFailFastError, match="2 calls in a row"):
        call(tool, {"code": "print(1)"})


def test_zero_never_stops():
    tool = make_tool(0)
    break_sandbox(tool)
    for _ in range(4):
        assert call(tool, {"code": "print(1)"})[1]["status"] == "sandbox_error"
    tool.raise_if_tripped()
    assert tool.failure_counts["sandbox_error"] == 4


@pytest.mark.parametrize("limit", [-1, True, 2.5, "3"])
def test_bad_limit_is_refused(limit):
    with pytest.raises(ValueError, match="max_consecutive_sandbox_failures"):
        make_tool(limit)
