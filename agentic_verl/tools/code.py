"""`PythonTool`: verl's BaseTool that runs the model's Python in the project's sandbox (`agentic_verl/eval/sandbox/`).

The model calls `python` with `{"code": "..."}`; the code runs in a fresh sandboxed interpreter (no network, a
read-only root without /etc or /proc, writes only to its own /program and /tmp, its own uid, rlimits, a wall-clock
timeout). The observation is its stdout, stderr and exception (the traceback's last lines), each cut to
`max_output_chars` with a marker. Code execution is opt-in: the tool refuses to construct unless its config says
`allow_code_execution: true`.

    tools:
      - class_name: agentic_verl.tools.code.PythonTool
        config: {type: native, allow_code_execution: true, mode: stateless, timeout_s: 10}

Modes. `stateless`: every call is a fresh interpreter. `persistent`: state carries across one trajectory's calls by
replay - each call runs, in a fresh sandbox, the trajectory's earlier cells that completed without an exception
(output discarded) and then the new cell. No process outlives a call; a replayed cell repeats its side effects and
its time counts against the call's timeout. The trajectory is verl's `agent_data.request_id` (verl's ToolAgentLoop
creates and releases a tool instance around every call, so the instance id cannot carry state); without agent_data
the instance id is the key. The last `max_trajectories` trajectories are remembered.

A failure never raises: the observation says what happened and the metrics carry `status` = "ok" | "error" (the
code raised) | "timeout" | "killed" | "bad_arguments" | "sandbox_error", `output_truncated`, and the tool's running
counts of each kind (`failure_counts`, also on the tool object).

The one exception is fail-fast, as for SearchTool and McpTool: after `max_consecutive_sandbox_failures` calls in a
row that the sandbox itself could not run (status sandbox_error: it could not start or set up its isolation, or failed
inside; 0 = never), execute raises `SandboxFailFastError` on that call and every later one, and `raise_if_tripped()`
raises it too, so the `tool_agent_traced` loop stops the run instead of training on error observations. The model's
own outcomes (error, timeout, killed) are observations and reset the count; bad_arguments never reach the sandbox
and leave it as it is. The count lives on the tool object, which verl builds once per worker process.
"""

from __future__ import annotations

import asyncio
import logging
import math
import threading
import time
from collections import Counter, OrderedDict
from dataclasses import dataclass
from typing import Any
from uuid import uuid4

from verl.tools.base_tool import BaseTool
from verl.tools.schemas import OpenAIFunctionToolSchema, ToolResponse
from verl.utils.rollout_trace import rollout_trace_op

from agentic_verl.eval.sandbox import CodeExecutionNotAllowed, Limits, isolation
from agentic_verl.eval.sandbox.execute import CellRun, run_cells
from agentic_verl.fail_fast import ConsecutiveFailures, FailFastError, check_limit
from agentic_verl.tools.config import check_schema_keeps, settings_from_config

logger = logging.getLogger(__name__)
FAILURE_KINDS = ("timeout", "killed", "error", "output_truncated", "bad_arguments", "sandbox_error")
MODES = ("stateless", "persistent")


class SandboxFailFastError(FailFastError):
    """The code sandbox could not run the model's code too many times in a row."""


@dataclass(frozen=True)
class PythonToolSettings:
    """The tool's `config` keys (besides verl's `type: native`)."""

    allow_code_execution: bool = False  # must be true: the tool runs model-written code on this machine
    name: str = "python"
    mode: str = "stateless"  # or "persistent" (replay; module docstring)
    timeout_s: float = 10.0  # wall clock per call, replayed cells included
    cpu_s: int = 0  # CPU seconds per call; 0 = ceil(timeout_s)
    memory_mb: int = 1024  # address space
    max_processes: int = 64  # processes and threads of the call's own uid
    max_output_chars: int = 4000  # kept per stream (stdout, stderr)
    traceback_lines: int = 12
    max_code_chars: int = 20000  # longer code is refused as bad_arguments
    max_concurrency: int = 4  # sandboxes running at once in this process
    max_cells: int = 32  # persistent: remembered cells per trajectory (the oldest go first)
    max_trajectories: int = 1024  # persistent: trajectories remembered
    allow_reduced_isolation: bool = False  # run even where the full sandbox cannot start (reduced isolation)
    max_consecutive_sandbox_failures: int = 32  # stop the run after this many sandbox_error calls in a row; 0 = never

    @classmethod
    def from_config(cls, config: dict) -> PythonToolSettings:
        settings = settings_from_config(cls, config, "python tool")
        if settings.allow_code_execution is not True:
            raise CodeExecutionNotAllowed(
                "agentic_verl.tools.code.PythonTool runs the Python code the model writes, on this machine, in the "
                "sandbox of agentic_verl/eval/sandbox (namespaces, its own uid, rlimits; needs root). Untrusted "
                "models can write harmful code: set `allow_code_execution: true` in the tool's config (the "
                "tool_config_path YAML) to allow it, ideally inside a container or VM without network.")
        if settings.mode not in MODES:
            raise ValueError(f"python tool config mode must be one of {MODES}, got {settings.mode!r}")
        for key in ("memory_mb", "max_processes", "max_output_chars", "traceback_lines", "max_code_chars",
                    "max_concurrency", "max_cells", "max_trajectories"):
            value = getattr(settings, key)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"python tool config {key} must be a positive integer, got {value!r}")
        if not isinstance(settings.timeout_s, (int, float)) or not 0 < settings.timeout_s <= 3600:
            raise ValueError(f"python tool config timeout_s must be in (0, 3600], got {settings.timeout_s!r}")
        check_limit(settings.max_consecutive_sandbox_failures, "python tool config max_consecutive_sandbox_failures")
        settings.limits()  # the sandbox checks its own limits
        return settings

    def limits(self) -> Limits:
        cpu_s = self.cpu_s or max(1, math.ceil(self.timeout_s))
        return Limits(timeout_s=float(self.timeout_s), cpu_s=cpu_s, memory_mb=self.memory_mb,
                      max_processes=self.max_processes)


def python_tool_schema(settings: PythonToolSettings) -> OpenAIFunctionToolSchema:
    """The one definition of the tool's schema."""
    state = ("Variables, functions and imports from your earlier successful calls in this conversation are kept."
             if settings.mode == "persistent" else "Every call starts a fresh interpreter: nothing is kept.")
    return OpenAIFunctionToolSchema.model_validate({
        "type": "function",
        "function": {
            "name": settings.name,
            "description": f"Run Python 3 code and see what it prints (stdout, stderr and any exception). No network, "
                           f"no files outside its folder, {settings.timeout_s:g} s per call. {state} Use print() to "
                           "see values.",
            "parameters": {
                "type": "object",
                "properties": {"code": {"type": "string", "description": "the Python code to run"}},
                "required": ["code"],
            },
        },
    })


class PythonTool(BaseTool):
    def __init__(self, config: dict, tool_schema: OpenAIFunctionToolSchema | None = None):
        self.settings = PythonToolSettings.from_config(dict(config))
        check_schema_keeps(tool_schema, "code")
        # a sandbox that cannot start is an error now, before a run, not an observation later
        self.plan = isolation(allow_reduced=bool(self.settings.allow_reduced_isolation))
        super().__init__(config, tool_schema)
        self.failure_counts: Counter[str] = Counter()
        self._cells: OrderedDict[str, list[str]] = OrderedDict()  # persistent mode: trajectory -> completed cells
        # a thread semaphore, not asyncio's: the tool may serve several event loops (one per worker or test)
        self._slots = threading.BoundedSemaphore(self.settings.max_concurrency)
        self._sandbox_failures = ConsecutiveFailures(SandboxFailFastError)  # one streak: this process's sandbox

    def get_openai_tool_schema(self) -> OpenAIFunctionToolSchema:
        return getattr(self, "tool_schema", None) or python_tool_schema(self.settings)

    async def create(self, instance_id: str | None = None, **kwargs) -> tuple[str, ToolResponse]:
        return instance_id or str(uuid4()), ToolResponse()

    @rollout_trace_op
    async def execute(self, instance_id: str, parameters: dict[str, Any], **kwargs) -> tuple[ToolResponse, float, dict]:
        self.raise_if_tripped()  # the sandbox failed too often earlier in this process: stop, do not observe
        response, reward, metrics = await self._execute(instance_id, parameters, kwargs)
        self._count_for_fail_fast(metrics["status"], response.text or "")  # raises SandboxFailFastError at the limit
        return response, reward, metrics

    def raise_if_tripped(self) -> None:
        """Raise SandboxFailFastError if this tool's sandbox reached the fail-fast limit in this process."""
        self._sandbox_failures.raise_if_tripped(_SANDBOX)

    def _count_for_fail_fast(self, status: str, detail: str) -> None:
        """The sandbox's streak: a sandbox_error counts, a call the sandbox ran (whatever the code did) resets."""
        if status == "sandbox_error":
            limit = self.settings.max_consecutive_sandbox_failures
            self._sandbox_failures.failed(_SANDBOX, limit, lambda count: _fail_fast_message(limit, count, detail))
        elif status != "bad_arguments":  # bad arguments never reached the sandbox
            self._sandbox_failures.reset(_SANDBOX)

    async def _execute(self, instance_id: str, parameters: Any, kwargs: dict) -> tuple[ToolResponse, float, dict]:
        started = time.perf_counter()
        try:
            code = self._check_arguments(parameters)
            if code is None:
                return self._finish("bad_arguments", self._bad_arguments_text(parameters), False, started)
            key = self._trajectory_key(instance_id, kwargs)
            replay = list(self._cells.get(key, ())) if self.settings.mode == "persistent" else []
            run = await asyncio.to_thread(self._run, replay, code)
            if self.settings.mode == "persistent" and run.status == "completed" and not run.exception:
                self._remember(key, code)
            status = _status(run)
            return self._finish(status, format_observation(run, self.settings), run.truncated, started, run)
        except Exception as exc:  # noqa: BLE001 - never out of execute: the sandbox's own failure is an observation
            logger.exception("python tool: unexpected failure")
            return self._finish("sandbox_error", f"Sandbox error: {type(exc).__name__}: {exc}", False, started)

    def _run(self, replay: list[str], code: str) -> CellRun:
        with self._slots:
            return run_cells(replay, code, self.settings.limits(), self.plan, self.settings.max_output_chars,
                             self.settings.traceback_lines)

    async def release(self, instance_id: str, **kwargs) -> None:
        pass  # persistent state is per trajectory, not per instance (module docstring)

    def forget(self, trajectory: str) -> None:
        """Drop a trajectory's remembered cells (persistent mode)."""
        self._cells.pop(trajectory, None)

    def _check_arguments(self, parameters: Any) -> str | None:
        if not isinstance(parameters, dict):
            return None
        code = parameters.get("code")
        if not isinstance(code, str) or not code.strip() or len(code) > self.settings.max_code_chars:
            return None
        return code

    def _bad_arguments_text(self, parameters: Any) -> str:
        s = self.settings
        if not isinstance(parameters, dict):
            why = f"the arguments must be a JSON object, got {type(parameters).__name__}"
        elif not isinstance(parameters.get("code"), str):
            code = parameters.get("code")
            why = f"code must be a string, got {'nothing' if code is None else type(code).__name__}"
        elif not parameters["code"].strip():
            why = "code is empty"
        else:
            why = f"code is {len(parameters['code'])} characters long; at most {s.max_code_chars}"
        return f'Python error (bad arguments): {why}. Call {s.name} with {{"code": "print(1 + 1)"}}.'

    def _trajectory_key(self, instance_id: str, kwargs: dict) -> str:
        request_id = getattr(kwargs.get("agent_data"), "request_id", None)
        return str(request_id) if request_id is not None else str(instance_id)

    def _remember(self, key: str, code: str) -> None:
        cells = self._cells.setdefault(key, [])
        self._cells.move_to_end(key)
        cells.append(code)
        del cells[:-self.settings.max_cells]
        while len(self._cells) > self.settings.max_trajectories:
            self._cells.popitem(last=False)

    def _finish(self, status: str, text: str, truncated: bool, started: float,
                run: CellRun | None = None) -> tuple[ToolResponse, float, dict]:
        if status != "ok":
            self.failure_counts[status] += 1
        if truncated:
            self.failure_counts["output_truncated"] += 1
        metrics = {"status": status, "error_type": None if status == "ok" else status, "output_truncated": truncated,
                   "latency_s": round(time.perf_counter() - started, 6),
                   "sandbox_s": run.seconds if run else 0.0,
                   "failure_counts": {kind: self.failure_counts[kind] for kind in FAILURE_KINDS}}
        return ToolResponse(text=text), 0.0, metrics


_SANDBOX = "sandbox"  # the fail-fast key: the tool object has one sandbox plan


def _fail_fast_message(limit: int, count: int, detail: str) -> str:
    return (f"python tool fail-fast: the code sandbox could not run {count} calls in a row in this process (last: "
            f"{detail[-500:]}); the model's own errors, timeouts and kills do not count, so the sandbox itself is "
            "broken here and training on its error observations teaches the policy nothing. Check it with "
            "`python -c 'from agentic_verl.eval.sandbox import detect_isolation; print(detect_isolation().describe())'` "
            "(it needs root in the host's user namespace, e.g. a container run as root, free disk under the temp "
            f"folder and free file descriptors), fix it and resume; max_consecutive_sandbox_failures={limit} in the "
            "tool's config (the tool_config_path YAML) sets the limit (0 = never stop).")


def _status(run: CellRun) -> str:
    if run.status == "completed":
        return "error" if run.exception else "ok"
    if run.status == "replay_error":
        return "error"
    return run.status  # timeout | killed | sandbox_error


def _cut(text: str, total: int) -> str:
    if total <= len(text):
        return text
    return f"{text}\n...[output truncated: first {len(text)} of {total} characters shown]"


def format_observation(run: CellRun, settings: PythonToolSettings) -> str:
    """What the model sees: its output, then what went wrong, if anything."""
    limit = settings.max_output_chars
    parts = []
    if run.stdout_total:
        parts.append(_cut(run.stdout, run.stdout_total).rstrip("\n"))
    if run.stderr_total:
        parts.append("[stderr]\n" + _cut(run.stderr, run.stderr_total).rstrip("\n"))
    if run.exception:
        parts.append(run.exception[-limit:].rstrip())
    if run.status == "replay_error":
        parts.append("[state lost] an earlier cell failed when replayed:\n" + run.replay_error[-limit:].rstrip())
    elif run.status == "timeout":
        parts.append(f"[timeout] the code ran past {settings.timeout_s:g} s (or its CPU seconds) and was stopped. "
                     f"Output before it stopped:\n{_raw_output(run)}")
    elif run.status == "killed":
        parts.append(f"[killed] the code ended before it finished (a signal, os._exit or the "
                     f"{settings.memory_mb} MiB memory limit). Output before it ended:\n{_raw_output(run)}")
    elif run.status == "sandbox_error":
        parts.append(f"[sandbox error] the code could not be run: {run.detail[-limit:]}")
    return "\n".join(parts).rstrip() or "(no output; use print() to see values)"


def _raw_output(run: CellRun) -> str:
    return run.detail.partition("\n")[2] or "(none)"
