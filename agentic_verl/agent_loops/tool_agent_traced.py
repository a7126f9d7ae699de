"""`tool_agent_traced`: verl's own `ToolAgentLoop` (OpenAI-style tools, hermes/qwen3_coder/... parsers, tool
config YAMLs), unchanged in behaviour, plus our per-trajectory trace (trace.py): turns, tool calls, failures.

Why a subclass and not plain `tool_agent`: verl's loop throws away what went wrong. It logs and then drops a
tool call the parser cannot decode, answers an unknown tool name or invalid JSON arguments with an error text,
and ignores the metrics dict a tool returns (our SearchTool reports `error_type` timeout / server_error /
bad_arguments there). No hook exposes any of it, so this loop overrides three of its steps, calls verl's code for
each, and records what happened:

- `_handle_generating_state`: one trace turn per generation; with the hermes parser, `<tool_call>` blocks that did
  not become tool calls count as parse_error; calls past `multi_turn.max_parallel_calls` (verl drops them) count
  as over_limit;
- `_call_tool`: one trace tool call per call, with its failure: unknown_tool, bad_arguments (invalid JSON or the
  tool's own verdict), timeout / tool_error (the tool's verdict or an exception verl caught);
- `run`: no_call when the trajectory never called a tool, truncated_by_length when it filled the response
  budget, then `trace.finalize`.

Fail-fast: verl's `_call_tool` turns any exception of a tool into an error observation, so a tool cannot stop the
run by raising. A tool that has a `raise_if_tripped()` (our SearchTool, McpTool and PythonTool: their server or
sandbox failed `max_consecutive_*` times in a row in this process) is asked after each of its calls and when a
trajectory starts and ends; it raises its fail-fast error, verl fails the sample, and once no sample is left the
run stops (as with the `rag_r1` loop). Below the limit each such failure is a counted `tool_error`.

Everything else (prompt building, token merging, masks, tool execution, truncation of tool responses) is verl's.
Use it by `agent_name: tool_agent_traced` (or rollout.agent.default_agent_loop) with the usual
`actor_rollout_ref.rollout.multi_turn.tool_config_path`, e.g. configs/tools/search_tool.yaml.
"""

from __future__ import annotations

import json
import time
from typing import Any
from uuid import uuid4

from verl.experimental.agent_loop.agent_loop import AgentLoopOutput, register
from verl.experimental.agent_loop.tool_agent_loop import AgentState, ToolAgentLoop

from agentic_verl.agent_loops.trace import TrajectoryTrace

NAME = "tool_agent_traced"
# error_type / status values our tools report in their metrics dict -> the trace taxonomy
_TOOL_FAILURES = {"timeout": "timeout", "server_error": "tool_error", "tool_error": "tool_error",
                  "bad_arguments": "bad_arguments",
                  # McpTool's server failures and PythonTool's sandbox failure: the tool's, counted as tool_error
                  # (PythonTool's "error" / "killed" are the model's code's outcome, not a tool failure)
                  "server_crashed": "tool_error", "connect_failed": "tool_error",
                  "too_many_connections": "tool_error", "sandbox_error": "tool_error"}


@register(NAME)
class TracedToolAgentLoop(ToolAgentLoop):
    def __init__(self, *args, **kwargs):
        self.agent_name = str(kwargs.pop("name", NAME))
        super().__init__(*args, **kwargs)
        self.trace: TrajectoryTrace | None = None  # verl builds one loop object per trajectory

    async def run(self, sampling_params: dict[str, Any], **kwargs) -> AgentLoopOutput:
        self._raise_if_a_tool_tripped()  # tripped earlier in this process: stop every sample
        self.trace = TrajectoryTrace(uuid4().hex, agent_name=self.agent_name)
        output = await super().run(sampling_params, **kwargs)
        if not output.response_mask and output.response_ids:
            # verl takes `prompt_ids[-len(response_mask):]` as the response: with nothing generated (an empty first
            # generation) that is `[-0:]`, the whole prompt, as response ids with an empty mask
            output.response_ids = []
        self._raise_if_a_tool_tripped()  # a server died meanwhile: not a sample to train on
        if not self.trace.tool_calls:
            self.trace.record_failure("no_call")
        if len(output.response_mask) >= self.response_length:
            self.trace.record_failure("truncated_by_length")
        return self.trace.finalize(output, tokenizer=self.tokenizer,
                                   global_step=output.extra_fields.get("global_steps"))

    async def _handle_generating_state(self, agent_data, sampling_params: dict[str, Any],
                                       ignore_termination: bool = False) -> AgentState:
        agent_data.tool_calls = []  # the previous turn's calls were executed; verl sets them again when it parses
        started = time.perf_counter()
        state = await super()._handle_generating_state(agent_data, sampling_params, ignore_termination)
        self.trace.add_turn(len(agent_data.response_ids), 0, time.perf_counter() - started)
        # verl stops before parsing on these conditions (same order as ToolAgentLoop._handle_generating_state)
        stopped_early = (
            (not ignore_termination and len(agent_data.response_mask) >= self.response_length)
            or (self.max_assistant_turns and agent_data.assistant_turns >= self.max_assistant_turns)
            or (self.max_user_turns and agent_data.user_turns >= self.max_user_turns)
        )
        if self.tool_parser_name == "hermes" and not stopped_early:
            text = self.tokenizer.decode(agent_data.response_ids, skip_special_tokens=False)
            lost = text.count(self.tool_parser.tool_call_start_token) - len(agent_data.tool_calls)
            for _ in range(max(0, lost)):
                self.trace.record_failure("parse_error")
        # verl executes the first max_parallel_calls calls of a turn and drops the rest without a word
        for _ in range(max(0, len(agent_data.tool_calls or []) - int(self.max_parallel_calls))):
            self.trace.record_failure("over_limit")
        return state

    async def _handle_processing_tools_state(self, agent_data) -> AgentState:
        before = len(agent_data.response_mask)
        state = await super()._handle_processing_tools_state(agent_data)
        if self.trace.turns:
            self.trace.turns[-1].observation_tokens += max(0, len(agent_data.response_mask) - before)
        return state

    async def _call_tool(self, tool_call, tools_kwargs: dict[str, Any], agent_data):
        started = time.perf_counter()
        response, reward, result = await super()._call_tool(tool_call, tools_kwargs, agent_data)
        latency = time.perf_counter() - started
        try:
            arguments = json.loads(tool_call.arguments)
        except (json.JSONDecodeError, TypeError):
            arguments = tool_call.arguments
        self.trace.add_tool_call(tool_call.name, arguments, response.text or "", latency,
                                 failure=self._failure(tool_call, arguments, response, result, agent_data),
                                 queries=_num_queries(arguments))
        self._raise_if_a_tool_tripped()
        return response, reward, result

    def _raise_if_a_tool_tripped(self) -> None:
        """Re-raise a tool's fail-fast error (verl's `_call_tool` swallowed it into an observation)."""
        for tool in self.tools.values():
            check = getattr(tool, "raise_if_tripped", None)
            if callable(check):
                check()

    def _failure(self, tool_call, arguments, response, result, agent_data) -> str | None:
        active = getattr(agent_data, "_active_tools", self.tools)
        if tool_call.name not in active:
            return "unknown_tool"
        if isinstance(arguments, str):  # verl could not parse the arguments as JSON
            return "bad_arguments"
        if isinstance(result, dict):
            verdict = result.get("error_type") or result.get("status")
            if verdict in _TOOL_FAILURES:
                return _TOOL_FAILURES[verdict]
        text = response.text or ""
        if text.startswith(f"Error executing tool '{tool_call.name}'"):  # verl caught an exception in the tool
            return "tool_error"
        return None


def _num_queries(arguments: Any) -> int:
    """Searches count in the trace's search metrics: `query_list` (our SearchTool) or a single `query`."""
    if isinstance(arguments, dict):
        if isinstance(arguments.get("query_list"), list):
            return len(arguments["query_list"])
        if isinstance(arguments.get("query"), str):
            return 1
    return 0
