"""`McpTool`: one tool of any MCP server as a verl BaseTool.

    tools:
      - class_name: agentic_verl.tools.mcp.McpTool
        config:
          type: native
          server: {command: [npx, -y, "@modelcontextprotocol/server-memory"]}  # or {url: http://host/mcp}
          tool: create_entities
          session: per_trajectory   # or shared (one connection per worker, for stateless servers)
          timeout_s: 30

With no `tool_schema` in the entry (verl passes None), the schema is read from the server's `tools/list` here, in
`__init__`, before the tool exists for verl; with one, the server is still asked once, so a missing server, binary or
tool is an error when the tools are built, not at the first call of a run. `agentic-verl tools mcp-yaml -- CMD...`
writes the entries for every tool a server lists.

Sessions: verl's ToolAgentLoop calls create/execute/release around every single call, with a new instance_id each
time, so "per trajectory" is keyed by the `agent_data` verl passes to execute (one trajectory) when present, else by
instance_id; an agent_data-keyed connection closes when verl frees that trajectory's AgentData, an instance-keyed
one at release. The connections live in agentic_verl.tools.mcp_pool, one pool per server: the entries of one
server share a trajectory's connection (one session, whatever tool is called), and at most `max_connections` are
live at once (past it a call waits up to `connection_wait_s`). A crashed server (connection closed) is counted and
a fresh one started at the next call.

Never an exception out of execute: the observation says what went wrong and the metrics carry `status` and
`error_type` = "tool_error" (the server's isError, shown as it reports it) | "timeout" | "server_crashed" |
"connect_failed" | "too_many_connections" | "bad_arguments"; `counters` keeps the per-process totals (and
`restarts`). The one exception is fail-fast, as for SearchTool: after `max_consecutive_failures` starts that
failed or crashes in a row of one server in this process (any answer, even an isError, resets the count; 0 =
never), execute raises `McpFailFastError` on that call and every later one, and `raise_if_tripped()` raises it
too; the `tool_agent_traced` loop asks it after each call and fails the trajectory, so a dead server stops the
run with the reason instead of training on error observations.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
import weakref
from collections import Counter
from dataclasses import dataclass
from typing import Any
from uuid import uuid4

from verl.tools.base_tool import BaseTool
from verl.tools.schemas import OpenAIFunctionToolSchema, ToolResponse
from verl.utils.rollout_trace import rollout_trace_op

from agentic_verl.fail_fast import ConsecutiveFailures, FailFastError, check_limit
from agentic_verl.tools.config import settings_from_config
from agentic_verl.tools.mcp_pool import server_connections
from agentic_verl.tools.mcp_results import McpCallError, call_arguments, result_text
from agentic_verl.tools.mcp_schema import full_tool_schema
from agentic_verl.tools.mcp_session import McpServerSpec, list_server_tools

__all__ = ["MCP_FAILURES", "McpFailFastError", "McpSettings", "McpTool"]
logger = logging.getLogger(__name__)


class McpFailFastError(FailFastError):
    """An MCP server failed to start or crashed too many times in a row."""


MCP_FAILURES = ConsecutiveFailures(McpFailFastError)  # per server (its command or URL), for this process


@dataclass(frozen=True)
class McpSettings:
    """The tool's `config` keys (besides verl's `type: native`)."""

    server: dict
    tool: str
    session: str = "per_trajectory"  # or "shared"
    timeout_s: float = 30.0  # per call
    connect_timeout_s: float = 30.0  # start + initialize of a server
    max_argument_chars: int = 100_000  # the call's JSON arguments
    max_observation_chars: int = 10_000
    max_consecutive_failures: int = 32  # stop the run after this many failed starts / crashes in a row; 0 = never
    max_connections: int = 64  # live connections to the server per worker process; 0 = no cap
    connection_wait_s: float = 300.0  # how long a call waits for a free connection past the cap

    @classmethod
    def from_config(cls, config: dict) -> McpSettings:
        missing = sorted({"server", "tool"} - set(config))
        if missing:
            raise ValueError(f"mcp tool config needs {missing}")
        settings = settings_from_config(cls, config, "mcp tool")
        if settings.session not in ("per_trajectory", "shared"):
            raise ValueError(f"mcp tool config session must be per_trajectory or shared, got {settings.session!r}")
        check_limit(settings.max_consecutive_failures, "mcp tool config max_consecutive_failures")
        check_limit(settings.max_connections, "mcp tool config max_connections")
        for key in ("timeout_s", "connect_timeout_s", "connection_wait_s", "max_argument_chars",
                    "max_observation_chars"):
            if not isinstance(getattr(settings, key), int | float) or getattr(settings, key) <= 0:
                raise ValueError(f"mcp tool config {key} must be positive, got {getattr(settings, key)!r}")
        return settings


_LISTINGS: dict[McpServerSpec, dict] = {}  # one tools/list per server and process, however many entries name it
_LISTINGS_LOCK = threading.Lock()


def _server_tools(spec: McpServerSpec, timeout_s: float) -> dict:
    with _LISTINGS_LOCK:
        if spec not in _LISTINGS:
            _LISTINGS[spec] = {tool.name: tool for tool in list_server_tools(spec, timeout_s)}
        return _LISTINGS[spec]


class McpTool(BaseTool):
    def __init__(self, config: dict, tool_schema: OpenAIFunctionToolSchema | None = None):
        self.settings = McpSettings.from_config(dict(config))
        self.spec = McpServerSpec.from_config(dict(self.settings.server))
        listed = _server_tools(self.spec, self.settings.connect_timeout_s)
        if self.settings.tool not in listed:
            raise ValueError(f"MCP server {self.spec.describe()!r} has no tool {self.settings.tool!r}; "
                             f"it lists {sorted(listed)}")
        full = full_tool_schema(listed[self.settings.tool])  # every key kept (mcp_schema)
        if tool_schema is None:  # verl passes None when the YAML entry has no tool_schema
            tool_schema = full
        elif _parameters(tool_schema) != _parameters(full):  # verl's YAML schema model dropped keys, or it is old
            logger.warning("mcp tool %s: the tool_schema in the YAML differs from the server's (verl keeps only "
                           "type/description/enum per parameter); leave tool_schema out to send the server's",
                           self.settings.tool)
        super().__init__(config, tool_schema)
        self.counters: Counter[str] = Counter()
        self.connections = server_connections(self.spec, self.settings.max_connections,
                                              self.settings.connection_wait_s, self.settings.connect_timeout_s)
        self._server_key = repr(self.spec)  # the fail-fast key: one streak per server, whatever tool failed

    async def create(self, instance_id: str | None = None, **kwargs) -> tuple[str, ToolResponse]:
        return instance_id or str(uuid4()), ToolResponse()

    @rollout_trace_op
    async def execute(self, instance_id: str, parameters: Any, **kwargs) -> tuple[ToolResponse, float, dict]:
        self.raise_if_tripped()  # the server failed too often earlier in this process: stop, do not observe
        started = time.perf_counter()
        try:
            arguments = call_arguments(parameters, self.settings.max_argument_chars)
            result = await self._call(instance_id, _trajectory_key(kwargs.get("agent_data")), arguments)
            kind = "tool_error" if result.is_error else None
            text = result_text(result, self.settings.max_observation_chars)
        except McpCallError as exc:
            kind, text = exc.kind, exc.observation
        except Exception as exc:  # anything else the SDK raises: counted, shown, never out of the loop
            logger.warning("mcp tool %s: unexpected %s: %s", self.name, type(exc).__name__, exc)
            kind, text = "server_crashed", f"Error: the tool {self.name} failed: {type(exc).__name__}: {exc}"
        self.counters[kind or "ok"] += 1
        self._count_for_fail_fast(kind, text)  # raises McpFailFastError at the limit
        metrics = {"status": kind or "ok", "error_type": kind, "restarts": self.counters["restarts"],
                   "latency_s": round(time.perf_counter() - started, 6)}
        return ToolResponse(text=text), 0.0, metrics

    async def release(self, instance_id: str, **kwargs) -> None:
        await self.connections.release_instance(instance_id)

    def raise_if_tripped(self) -> None:
        """Raise McpFailFastError if this tool's server reached the fail-fast limit in this process."""
        MCP_FAILURES.raise_if_tripped(self._server_key)

    def _count_for_fail_fast(self, kind: str | None, detail: str) -> None:
        """The server's streak: a start that failed or a crash counts, any answer resets; raises at the limit."""
        if kind in _SERVER_DOWN:
            MCP_FAILURES.failed(self._server_key, self.settings.max_consecutive_failures,
                                lambda count: _fail_fast_message(self.spec, self.settings, count, detail))
        elif kind in (None, "tool_error"):  # the server answered
            MCP_FAILURES.reset(self._server_key)

    async def _call(self, instance_id: str, trajectory: Any, arguments: dict):
        from mcp.shared.exceptions import MCPError
        from mcp.types import CONNECTION_CLOSED, REQUEST_TIMEOUT

        conn, restarted = await self.connections.connection(self.settings.session == "shared", instance_id,
                                                            trajectory)
        self.counters["restarts"] += restarted
        try:
            # the SDK's own timeout cancels the request on the server; the outer one bounds everything else
            return await asyncio.wait_for(
                conn.session.call_tool(self.settings.tool, arguments, read_timeout_seconds=self.settings.timeout_s),
                self.settings.timeout_s + 5.0)
        except (asyncio.TimeoutError, TimeoutError) as exc:
            raise McpCallError("timeout", f"Error: the tool {self.name} did not answer within "
                                          f"{self.settings.timeout_s:g}s.") from exc
        except MCPError as exc:
            if exc.code == REQUEST_TIMEOUT:
                raise McpCallError("timeout", f"Error: the tool {self.name} did not answer within "
                                              f"{self.settings.timeout_s:g}s.") from exc
            if exc.code == CONNECTION_CLOSED:
                conn.dead = True  # the next call starts a fresh server and counts the restart
                raise McpCallError("server_crashed", f"Error: the {self.name} server exited during the call "
                                                     "(it is restarted at the next call; its state is lost).") from exc
            # a protocol error the server answered (unknown tool, invalid params): shown as it reports it
            raise McpCallError("tool_error", f"Error: {exc.error.message}") from exc


_SERVER_DOWN = ("connect_failed", "server_crashed")  # failures that count toward the fail-fast streak


def _fail_fast_message(spec: McpServerSpec, settings: McpSettings, count: int, detail: str) -> str:
    return (f"mcp tool fail-fast: the MCP server {spec.describe()!r} failed to start or crashed {count} times in a "
            f"row in this process (last: {detail}); training on error observations teaches the policy nothing. "
            f"Run the server's command by hand to see why, fix it and resume; max_consecutive_failures="
            f"{settings.max_consecutive_failures} in the tool's config (the tool_config_path YAML) sets the limit "
            "(0 = never stop).")


def _parameters(schema: OpenAIFunctionToolSchema) -> dict:
    return schema.model_dump(exclude_unset=True, exclude_none=True)["function"].get("parameters", {})


def _trajectory_key(agent_data: Any) -> Any:
    """verl's AgentData (one per trajectory) when it can key a WeakKeyDictionary, else None (key by instance_id)."""
    if agent_data is None:
        return None
    try:
        weakref.ref(agent_data)
        hash(agent_data)
    except TypeError:
        return None
    return agent_data
