"""Behaviour probes: each runs one verl symbol we rely on, on CPU, the way our code uses it, and returns the
problems it finds (an empty list: the behaviour holds). A contract names its probe (`Contract.probe`); the checker
calls it with the resolved symbol, so a test that replaces the symbol (a mutation) is what the probe runs.

Each probe stays small and offline: no Ray, no engine, no model; verl classes are built with the fewest fields.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from types import SimpleNamespace


def _run(coroutine):
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(coroutine)
    finally:
        loop.close()


def _shape(value) -> str:
    if isinstance(value, tuple):
        return f"a {len(value)}-tuple ({', '.join(type(v).__name__ for v in value)})"
    return f"a {type(value).__name__}"


# --- verl's ToolAgentLoop._call_tool (tool_agent_traced unpacks `response, reward, result`) ---------------------

class _FakeTool:
    """A BaseTool-like tool (create / execute / release) whose execute answers or raises."""

    def __init__(self, answer=None, error: Exception | None = None):
        self.answer, self.error, self.released, self.execute_kwargs = answer, error, 0, None

    async def create(self, instance_id=None, **kwargs):
        return "instance-1", None

    async def execute(self, instance_id, parameters, **kwargs):
        self.execute_kwargs = kwargs
        if self.error is not None:
            raise self.error
        return self.answer

    async def release(self, instance_id, **kwargs):
        self.released += 1


def call_tool_returns_response_reward_metrics(call_tool) -> list[str]:
    """(ToolResponse, reward, the tool's metrics dict) for a call that ran; verl's error text for a tool that
    raised; the sample's own tools (agent_data._active_tools) rather than the loop's; the trajectory's agent_data
    handed to the tool's execute (McpTool and PythonTool keep per-trajectory state by it)."""
    from verl.experimental.agent_loop.tool_parser import FunctionCall
    from verl.tools.schemas import ToolResponse

    metrics = {"status": "ok", "error_type": None, "num_queries": 1}
    ok_tool = _FakeTool(answer=(ToolResponse(text="found"), 0.5, metrics))
    loop = SimpleNamespace(tools={}, max_tool_response_length=1000, tool_response_truncate_side="middle")
    agent_data = SimpleNamespace(_active_tools={"search": ok_tool, "boom": _FakeTool(error=RuntimeError("down"))})
    problems = []

    result = _run(call_tool(loop, FunctionCall(name="search", arguments='{"query": "x"}'), {}, agent_data))
    if not (isinstance(result, tuple) and len(result) == 3):
        return [f"returns {_shape(result)}; we unpack (ToolResponse, reward, metrics dict)"]
    response, reward, tool_metrics = result
    if not isinstance(response, ToolResponse) or response.text != "found":
        problems.append(f"its first item is {response!r}, not the tool's ToolResponse(text='found')")
    if not isinstance(reward, (int, float)) or reward != 0.5:
        problems.append(f"its second item is {reward!r}, not the tool's reward 0.5")
    if tool_metrics != metrics:
        problems.append(f"its third item is {tool_metrics!r}, not the tool's metrics dict (we read error_type, status)")
    if (ok_tool.execute_kwargs or {}).get("agent_data") is not agent_data:
        problems.append(f"the tool's execute got {ok_tool.execute_kwargs!r}, not agent_data=<the trajectory's "
                        "agent_data> (McpTool and PythonTool key their per-trajectory state by it)")

    quiet = logging.getLogger(getattr(call_tool, "__module__", None) or "verl")
    level, quiet.level = quiet.level, logging.ERROR  # verl warns about the tool that raises: expected here
    try:
        failed = _run(call_tool(loop, FunctionCall(name="boom", arguments="{}"), {}, agent_data))
    finally:
        quiet.setLevel(level)
    text = getattr(failed[0], "text", None) if isinstance(failed, tuple) and failed else None
    if not (isinstance(failed, tuple) and len(failed) == 3) or not str(text).startswith("Error executing tool 'boom'"):
        problems.append(f"a tool that raises gives {failed!r}: we tell a tool's exception by a (ToolResponse, reward, "
                        "dict) whose text starts with \"Error executing tool '<name>'\"")
    return problems


# --- what a server manager returns, what a loop returns --------------------------------------------------------

def token_output_as_we_build_it(token_output) -> list[str]:
    """Built as our server managers build it (both call sites); read as our loops read it."""
    scripted = token_output(token_ids=[5, 6], log_probs=None, stop_reason="completed")
    engine = token_output(token_ids=[5], log_probs=[-0.5], stop_reason="length", num_preempted=0,
                          extra_fields={"finish_reason": "length"})
    problems = []
    if list(scripted.token_ids) != [5, 6] or scripted.log_probs is not None or scripted.stop_reason != "completed":
        problems.append(f"reads back {scripted!r} for token_ids=[5, 6], log_probs=None, stop_reason='completed'")
    if dict(engine.extra_fields) != {"finish_reason": "length"} or list(engine.log_probs) != [-0.5]:
        problems.append(f"reads back {engine!r}: extra_fields / log_probs changed")
    return problems


def agent_loop_output_as_we_build_it(agent_loop_output) -> list[str]:
    """Built as our loops build it (metrics as a plain dict); the trace writes into its extra_fields afterwards."""
    output = agent_loop_output(prompt_ids=[1, 2], response_ids=[3, 4], response_mask=[1, 0], response_logprobs=None,
                               num_turns=2, metrics={"generate_sequences": 0.25}, extra_fields={"turn_scores": []})
    problems = []
    if (list(output.response_ids), list(output.response_mask), output.num_turns) != ([3, 4], [1, 0], 2):
        problems.append(f"reads back {output!r}")
    if getattr(output.metrics, "generate_sequences", None) != 0.25:
        problems.append(f"metrics={{'generate_sequences': 0.25}} reads back as {output.metrics!r}")
    output.extra_fields["agent_metrics"] = {"num_turns": 2}  # trace.finalize adds its fields in place
    if output.extra_fields.get("agent_metrics") != {"num_turns": 2}:
        problems.append("extra_fields no longer takes new keys in place (the trace's metrics would be lost)")
    return problems


# --- verl.utils.tensordict_utils: the losses' and the SFT adapter's batch-level data ---------------------------

def _batch():
    import torch
    from tensordict import TensorDict

    return TensorDict({"loss_mask": torch.ones(2, 3)}, batch_size=[2])


def assign_non_tensor_reads_back_plain(assign_non_tensor) -> list[str]:
    """SRML assigns the step's span counts and reads them back with data[key], as plain ints."""
    data = _batch()
    assign_non_tensor(data, srml_think_tokens=3, srml_call_tokens=4)
    got = (data["srml_think_tokens"], data["srml_call_tokens"])
    if got != (3, 4) or not all(isinstance(v, int) for v in got):
        return [f"data[key] after assign_non_tensor(data, key=3, ...) gives {got!r}, not the plain ints (3, 4)"]
    return []


def get_unwraps_non_tensor(get) -> list[str]:
    """The SFT adapter reads the step's metrics dict with get(output, "metrics"): the dict, or None when absent."""
    from verl.utils.tensordict_utils import assign_non_tensor

    data = _batch()
    if get(data, "metrics") is not None:
        return [f"get(data, 'metrics') without metrics gives {get(data, 'metrics')!r}, not None"]
    assign_non_tensor(data, metrics={"loss": [1.0]})
    got = get(data, "metrics")
    if isinstance(got, dict) and got == {"loss": [1.0]}:  # type first: a tensordict wrapper's == raises on a dict
        return []
    return [f"get(data, 'metrics') gives {type(got).__name__}({got!r}), not the dict assigned"]


def get_non_tensor_data_defaults(get_non_tensor_data) -> list[str]:
    """The losses read pad_mode with get_non_tensor_data(data=, key="pad_mode", default=NO_PADDING)."""
    from verl.utils.tensordict_utils import assign_non_tensor

    data = _batch()
    problems = []
    if get_non_tensor_data(data=data, key="pad_mode", default="no_padding") != "no_padding":
        problems.append("without the key it does not return the default")
    assign_non_tensor(data, pad_mode="right")
    got = get_non_tensor_data(data=data, key="pad_mode", default="no_padding")
    if got != "right":
        problems.append(f"with pad_mode='right' assigned it gives {got!r}")
    return problems


def pad_mode_matches_config_strings(pad_mode) -> list[str]:
    """The config's data.pad_mode is a string ("no_padding"); the losses compare it with DatasetPadMode members."""
    if pad_mode.NO_PADDING != "no_padding" or pad_mode("no_padding") is not pad_mode.NO_PADDING:
        return [f"DatasetPadMode.NO_PADDING ({pad_mode.NO_PADDING!r}) no longer equals the config string "
                "'no_padding'"]
    return []


# --- verl.utils.rollout_trace.rollout_trace_op on SearchTool.execute -------------------------------------------

def rollout_trace_op_keeps_an_async_method(rollout_trace_op) -> list[str]:
    """Decorating an async tool method keeps it awaitable, keeps its signature, and (tracing off) returns its
    result unchanged."""

    class Tool:
        async def execute(self, instance_id: str, parameters: dict, **kwargs):
            return ("response", 0.0, {"status": "ok", "instance": instance_id})

    wrapped = rollout_trace_op(Tool.execute)
    problems = []
    if not inspect.iscoroutinefunction(wrapped):
        problems.append("the decorated method is no longer a coroutine function")
    if list(inspect.signature(wrapped).parameters) != ["self", "instance_id", "parameters", "kwargs"]:
        problems.append(f"the decorated method's signature is {inspect.signature(wrapped)}")
    result = _run(wrapped(Tool(), "i-1", {"q": 1}))
    if result != ("response", 0.0, {"status": "ok", "instance": "i-1"}):
        problems.append(f"the decorated method returns {result!r}, not the method's own result")
    return problems
