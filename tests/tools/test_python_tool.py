"""PythonTool in the real sandbox: prints come back, an exception comes back as text, output is cut with a marker,
the opt-in is enforced, persistent mode carries state by replay, and the tool loads through verl's
`initialize_tools_from_config` from a YAML. (Hostile code and arguments: test_python_tool_hostile.py.)"""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest
from verl.tools.tool_registry import initialize_tools_from_config

from agentic_verl.eval.sandbox import CodeExecutionNotAllowed
from agentic_verl.tools.code import PythonTool


def call(tool: PythonTool, parameters, **kwargs) -> tuple[str, dict]:
    async def go():
        instance_id, _ = await tool.create()
        try:
            response, reward, metrics = await tool.execute(instance_id, parameters, **kwargs)
        finally:
            await tool.release(instance_id)
        assert reward == 0.0
        return response.text, metrics

    return asyncio.run(go())


@pytest.fixture(scope="module")
def tool() -> PythonTool:
    return PythonTool({"type": "native", "allow_code_execution": True, "timeout_s": 5, "max_output_chars": 300})


def test_prints_come_back(tool):
    text, metrics = call(tool, {"code": "import math\nprint('root', math.isqrt(1764))\nprint(sum(range(10)))"})
    assert text == "root 42\n45"
    assert metrics["status"] == "ok" and metrics["output_truncated"] is False


def test_stderr_and_exception_come_back_as_text(tool):
    code = "import sys\nprint('before')\nprint('warn', file=sys.stderr)\ndef f(x):\n    return 1 / x\nf(0)\n"
    text, metrics = call(tool, {"code": code})
    assert text.startswith("before\n[stderr]\nwarn\nTraceback (most recent call last):")
    assert 'File "<cell>", line 6' in text and text.endswith("ZeroDivisionError: division by zero")
    assert "boot.py" not in text and "program.py" not in text  # the sandbox's own frames are not shown
    assert metrics["status"] == "error" and metrics["error_type"] == "error"


def test_syntax_error_and_system_exit_are_observations(tool):
    text, metrics = call(tool, {"code": "def (:"})
    assert "SyntaxError" in text and metrics["status"] == "error"
    text, metrics = call(tool, {"code": "print('bye')\nraise SystemExit(3)"})
    assert text.startswith("bye\n") and text.endswith("SystemExit: 3") and metrics["status"] == "error"


def test_output_is_cut_to_the_limit_with_a_marker(tool):
    before = tool.failure_counts["output_truncated"]
    text, metrics = call(tool, {"code": "print('a' * 1000)"})
    assert text == "a" * 300 + "\n...[output truncated: first 300 of 1001 characters shown]"
    assert metrics["status"] == "ok" and metrics["output_truncated"] is True
    assert tool.failure_counts["output_truncated"] == before + 1
    assert metrics["failure_counts"]["output_truncated"] == before + 1


def test_no_output_says_so(tool):
    text, metrics = call(tool, {"code": "x = 1"})
    assert text == "(no output; use print() to see values)" and metrics["status"] == "ok"


@pytest.mark.parametrize("config", [{"type": "native"}, {"type": "native", "allow_code_execution": False},
                                    {"type": "native", "allow_code_execution": "true"}])
def test_opt_in_is_enforced(config):
    with pytest.raises(CodeExecutionNotAllowed, match="allow_code_execution: true"):
        PythonTool(config)


@pytest.mark.parametrize("config, message", [
    ({"mode": "forever"}, "mode must be one of"), ({"timeout_s": 0}, "timeout_s"), ({"max_output_chars": 0},
     "max_output_chars"), ({"memory_mb": 8}, "bad sandbox limits"), ({"allow_network": True}, "unknown python tool"),
])
def test_bad_config_is_refused(config, message):
    with pytest.raises(ValueError, match=message):
        PythonTool({"type": "native", "allow_code_execution": True, **config})


def test_persistent_mode_carries_state_per_trajectory_by_replay():
    tool = PythonTool({"type": "native", "allow_code_execution": True, "mode": "persistent", "timeout_s": 5})
    one, two = SimpleNamespace(request_id="trajectory-1"), SimpleNamespace(request_id="trajectory-2")
    assert call(tool, {"code": "x = 20\nprint('set')"}, agent_data=one)[0] == "set"
    assert call(tool, {"code": "x = x + 1\nimport math"}, agent_data=one)[1]["status"] == "ok"
    call(tool, {"code": "y = 1 / 0"}, agent_data=one)  # failed cells are not replayed
    text, _ = call(tool, {"code": "print(x * 2, math.pi > 3)"}, agent_data=one)
    assert text == "42 True"  # replayed output ('set') is not shown again
    text, metrics = call(tool, {"code": "print(x)"}, agent_data=two)  # another trajectory: its own state
    assert "NameError" in text and metrics["status"] == "error"
    stateless = PythonTool({"type": "native", "allow_code_execution": True, "timeout_s": 5})
    call(stateless, {"code": "x = 1"}, agent_data=one)
    assert "NameError" in call(stateless, {"code": "print(x)"}, agent_data=one)[0]


def test_loads_through_verls_initialize_tools_from_config(tmp_path):
    path = tmp_path / "code_tool.yaml"
    path.write_text("tools:\n  - class_name: agentic_verl.tools.code.PythonTool\n"
                    "    config: {type: native, allow_code_execution: true, timeout_s: 5}\n")
    [tool] = initialize_tools_from_config(str(path))
    assert isinstance(tool, PythonTool) and tool.name == "python"
    schema = tool.get_openai_tool_schema().model_dump()
    assert schema["function"]["parameters"]["required"] == ["code"]
    text, metrics = call(tool, {"code": "print(6 * 7)"})
    assert text == "42" and metrics["status"] == "ok"
    refused = tmp_path / "refused.yaml"
    refused.write_text("tools:\n  - class_name: agentic_verl.tools.code.PythonTool\n    config: {type: native}\n")
    with pytest.raises(CodeExecutionNotAllowed):
        initialize_tools_from_config(str(refused))
