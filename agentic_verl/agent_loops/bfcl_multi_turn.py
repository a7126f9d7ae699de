"""`bfcl_multi_turn`: BFCL's multi-turn function-calling protocol as a verl agent loop, against the BFCL
environment server (`agentic-verl serve bfcl-env`, bfcl-eval's own API simulators behind `BfclEnvClient`).

The protocol is bfcl-eval's multi-turn inference in prompting mode (its base handler), token in, token out:

    for each user turn k of extra_info.question:
        turn k > 0: its user message(s) are appended (a turn that adds withheld functions, BFCL's miss_func, has
        none: its message is the added docs, `prompts.bfcl_added_functions_message`, as JSON or, with
        `added_functions_format="python"`, as BFCL's prompting handler prints them)
        step: the policy generates one assistant message (ended by EOS); its text after `</think>` is decoded with
              our BFCL decoder (never executed); a text that does not decode, or decodes to no call, ends the turn;
              otherwise the calls go to the session (`execute`), one tool message per output, and the policy
              generates again (a call whose arguments cannot travel as JSON, e.g. bytes, counts as undecodable)
        more than `max_steps_per_turn` executed steps in one turn (BFCL's MAXIMUM_STEP_LIMIT, 20) force-quit the
        whole trajectory, as BFCL does (its runner then fails the entry)

    prompt (system + turn 0) | step | tool outputs | step | user turn 1 | step | ...
    response_mask            |  1   |      0       |  1   |      0      |  1   |

`format: native` (`agent_loops/native_format.py`) is BFCL's FC mode instead: the row's prompt is not used; turn 0's
messages with the functions available at turn 0 as OpenAI tool schemas, rendered by the chat template
(`tools=`, a template that drops them is refused); each step's calls are read by verl's `ToolParser` `tool_parser`
(hermes for Qwen) from its token ids, a block it cannot read (or a call without a name, or arguments that are not an
object) ends the turn as parse_error; the assistant message keeps its calls as `tool_calls` (as verl's
ToolAgentLoop does) and the outputs come back as `tool` messages. A miss_func turn is BFCL FC's user message with the
added functions' docs as JSON before it ("I have updated some more functions ..."): BFCL re-renders the tool list
instead, which would rewrite the system prompt's tokens the policy already saw; the added names become callable.

- The row's `prompt` is the system prompt with the functions available at turn 0 plus turn 0's messages
  (`prompts.bfcl_multi_turn_messages`); a withheld function's doc (`"name": "<name>"`) in it is an error.
- Policy tokens are kept exactly as the server returned them, with their logprobs. Tool outputs and later user
  turns are tokenised by verl's Continuous Token builder (the chat template's own rendering of `tool` / `user`
  messages, with the model family's boundary handling, e.g. Qwen's `\\n` after `<|im_end|>`): mask 0, logprob 0.0.
  A builder that would remove policy tokens at a boundary is refused.
- Stop: EOS only (no stop strings). A step that ends without EOS (its `max_tokens_per_step`, or the response
  budget, ran out) ends the trajectory: the conversation cannot go on from half a message.
- Budget: `rollout.response_length` tokens in all (policy + observations); once used up the trajectory ends.
- The environment session is created from the entry (`initial_config`, `involved_classes`, `long_context`) before
  the first generation and closed on every path (errors and cancellation included; a close that fails is logged).
- Model output never raises here: every call the decoder gives is executed as BFCL executes it, through the
  client (`BfclEnvClient.execute`: a non-finite number is BFCL's `name 'inf' is not defined` error output, a step
  with more calls than one request carries goes in several requests, all run in order; unknown functions, bad
  arguments, NUL and control characters: the simulators' error outputs), and a huge integer that has no decimal
  form (BFCL's decoder fails on it too) or a value JSON cannot carry makes the step undecodable. Tool outputs reach
  the tokenizer as valid text (a lone surrogate a model's escape put into an output becomes U+FFFD).
- A failing environment (`BfclEnvError`: server down, timeout, 5xx, a malformed answer; or any other exception of
  the client) ends the trajectory with `terminated="env_error"` and the reason in `env_failure`, counted in the
  trace (`timeout` when the server did not answer in time, else `tool_error`, one per call of the step): it is no
  model behaviour to learn from, and the `bfcl_multi_turn` reward raises on it (counted as a reward exception).
  Failures in a row, per server, are counted (`ENV_FAILURES`, agentic_verl.fail_fast); at
  `max_consecutive_env_failures` (default 32; 0 = never) the loop raises `BfclEnvFailFastError`, which stops the
  run: the server is gone.

Output `extra_fields["bfcl_multi_turn"]` (verl's reward manager merges extra_fields into the reward's extra_info):
`model_calls[turn][step]` = the decoded calls of every executed step (`{"name", "arguments"}` dicts, what the
environment ran; steps that ended a turn are not in it, as in BFCL's evaluation), `responses[turn][step]` = the
text of every generated step, the turn-ending ones included (BFCL's result files keep these; `eval bfcl` writes
them), `turns` (per turn: `steps`
generated, `calls`, `decode_failures`, `env_errors`, `end`), `terminated` (None, "step_limit", "max_tokens",
"response_budget", "env_error"), `env_failure` (the environment's failure, else None), `num_turns` of the entry,
and the environment's `env_url` / `env_api_key_env` /
`env_timeout_s`, so the `bfcl_multi_turn` reward checks on the same server. Failures (trace.py taxonomy):
parse_error (an attempted call that does not decode), unknown_tool / tool_error (the environment answered an
error), truncated_by_length, timeout / tool_error (the environment failed); a plain answer that ends a turn is the
protocol, not a failure.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
import weakref
from dataclasses import dataclass
from typing import Any
from uuid import uuid4

from verl.experimental.agent_loop.agent_loop import AgentLoopBase, AgentLoopOutput, register

from agentic_verl.agent_loops._common import (
    Trajectory,
    eos_token_ids,
    merge_server_extra_fields,
    output_extra_fields,
    pop_config_kwargs,
    resolve_config,
    server_logprobs,
)
from agentic_verl.agent_loops.function_call_protocol import classify
from agentic_verl.agent_loops.native_format import (
    DEFAULT_TOOL_PARSER,
    assistant_message,
    check_format,
    check_tools_rendered,
    read_native_output,
    tool_parser,
)
from agentic_verl.agent_loops.prompts import ADDED_FUNCTIONS_FORMATS, bfcl_added_functions_message
from agentic_verl.agent_loops.sampling_seeds import TrajectorySeeds, start_trajectory
from agentic_verl.agent_loops.trace import TrajectoryTrace
from agentic_verl.fail_fast import ConsecutiveFailures, FailFastError, check_limit
from agentic_verl.rewards.bfcl import multi_turn as bfcl_mt_reward
from agentic_verl.rewards.bfcl.multi_turn_entry import BfclEntry, parse_entry
from agentic_verl.rewards.bfcl.native_calls import openai_tools
from agentic_verl.training.gigpo_anchors import ANCHORS_FIELD, START, anchor_digest

logger = logging.getLogger(__name__)

NAME = "bfcl_multi_turn"
ENV_ERROR_PREFIX = "Error during execution"  # how BFCL's executor answers a call that failed
ENV_ERROR = bfcl_mt_reward.ENV_ERROR  # `terminated` of a trajectory whose environment failed
_SURROGATE = re.compile("[\ud800-\udfff]")  # code points with no UTF-8 form (a str may hold them; text may not)


class BfclEnvFailFastError(FailFastError):
    """The BFCL environment server failed too many requests in a row."""


ENV_FAILURES = ConsecutiveFailures(BfclEnvFailFastError)  # per environment server URL, for this process


@dataclass
class BfclMultiTurnConfig:
    env_url: str = ""  # the BFCL environment server (`agentic-verl serve bfcl-env`); required
    env_api_key_env: str | None = None  # the variable holding the server's token, for a server beyond loopback
    env_timeout_s: float = 30.0
    max_steps_per_turn: int = 20  # BFCL's MAXIMUM_STEP_LIMIT: more executed steps in a turn force-quit
    max_tokens_per_step: int = 1024  # one assistant message; also bounded by what is left of response_length
    added_functions_format: str = "json"  # miss_func's added docs: "json" (as the system prompt) | "python" (BFCL's)
    max_consecutive_env_failures: int = 32  # stop the run after this many failed requests in a row; 0 = never
    format: str = "prompting"  # "prompting": BFCL's call lists | "native": the chat template's tool calls (FC mode)
    tool_parser: str = DEFAULT_TOOL_PARSER  # native: verl's ToolParser registry name

    def __post_init__(self):
        check_format(NAME, self.format, self.tool_parser)
        if not self.env_url:
            raise ValueError("bfcl_multi_turn needs env_url, the BFCL environment server (`agentic-verl serve "
                             "bfcl-env`): +actor_rollout_ref.rollout.custom.bfcl_multi_turn.env_url=http://127.0.0.1:PORT")
        if int(self.max_steps_per_turn) < 1 or int(self.max_tokens_per_step) < 1:
            raise ValueError(f"bfcl_multi_turn max_steps_per_turn and max_tokens_per_step must be >= 1, got "
                             f"{self.max_steps_per_turn}, {self.max_tokens_per_step}")
        if not float(self.env_timeout_s) > 0:
            raise ValueError(f"bfcl_multi_turn env_timeout_s must be > 0, got {self.env_timeout_s}")
        check_limit(self.max_consecutive_env_failures, "bfcl_multi_turn max_consecutive_env_failures")
        if self.added_functions_format not in ADDED_FUNCTIONS_FORMATS:
            raise ValueError(f"bfcl_multi_turn added_functions_format must be one of {ADDED_FUNCTIONS_FORMATS}, got "
                             f"{self.added_functions_format!r}")


# -- the environment client -----------------------------------------------------------------------
_CLIENTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # event loop -> {settings: client}


def env_client(cfg: BfclMultiTurnConfig):
    """One client per server setting and event loop, shared by the trajectories of a worker (verl makes a loop
    object per sample, all on the worker's event loop)."""
    clients = _CLIENTS.setdefault(asyncio.get_running_loop(), {})
    key = (cfg.env_url, cfg.env_api_key_env, float(cfg.env_timeout_s))
    if key not in clients:
        clients[key] = bfcl_mt_reward.new_env_client(*key)
    return clients[key]


# -- pieces of the protocol -----------------------------------------------------------------------
def executable_calls(decoded: list[dict]) -> list[dict] | None:
    """Our decoder's `[{name: {arg: value}}]` as the environment's `[{"name", "arguments"}]`; None when an argument
    value cannot travel as JSON (bytes, complex numbers: decodable Python literals no simulator takes)."""
    calls = [{"name": name, "arguments": arguments} for call in decoded for name, arguments in call.items()]
    try:
        json.dumps(calls)  # an int of more than 4,300 digits has no decimal form: BFCL's decoder fails on it too
    except (TypeError, ValueError, RecursionError):
        return None
    return calls


def observation_text(output: str) -> str:
    """A tool output as text the tokenizer takes: a lone surrogate (a model's `"\\ud800"` echoed by a simulator)
    becomes U+FFFD.

    >>> observation_text("no such file: '\\ud800'") == "no such file: '\\ufffd'"
    True
    """
    return _SURROGATE.sub("\ufffd", output)


def _env_failure_message(cfg: BfclMultiTurnConfig, count: int, detail: str) -> str:
    return (f"bfcl_multi_turn fail-fast: {count} requests in a row to the BFCL environment server at {cfg.env_url} "
            f"failed in this process (last: {detail}); it looks down. Check it (curl {cfg.env_url.rstrip('/')}"
            f"/health), restart it and resume; rollout.custom.bfcl_multi_turn.max_consecutive_env_failures="
            f"{count} sets the limit (0 = never stop).")


def _env_failed(cfg: BfclMultiTurnConfig, entry_id: str, what: str, exc: Exception) -> str:
    """Log and count an environment failure (raises BfclEnvFailFastError at the limit); returns its description."""
    detail = f"{what}: {type(exc).__name__}: {exc}"[:2000]
    logger.warning("bfcl_multi_turn %s: the environment failed, the trajectory ends (%s)", entry_id, detail)
    ENV_FAILURES.failed(cfg.env_url, int(cfg.max_consecutive_env_failures),
                        lambda count: _env_failure_message(cfg, count, detail))
    return detail


def _env_failure_kind(exc: Exception) -> str:
    return "timeout" if getattr(exc, "timed_out", False) else "tool_error"


def check_withheld_docs_absent(messages: list[dict], entry: BfclEntry) -> None:
    """A withheld function's doc in the prompt would give the model what BFCL's miss_func hides from it."""
    text = "\n".join(str(m.get("content", "")) for m in messages)
    leaked = sorted(name for name in entry.withheld_names() if json.dumps({"name": name})[1:-1] in text)
    if leaked:
        raise ValueError(f"{entry.id}: the row's prompt documents {leaked}, which extra_info.missed_function withholds "
                         f"until a later turn; build the prompt with prompts.bfcl_multi_turn_messages(question[0], "
                         f"entry.functions_at_start())")


def turn_messages(entry: BfclEntry, turn: int, added_functions_format: str = "json") -> list[dict]:
    """The messages that open turn `turn` > 0: its user message(s), or the docs it adds."""
    added = entry.added_functions(turn)
    if added:
        return [bfcl_added_functions_message(added, added_functions_format)]
    return [dict(m) for m in entry.question[turn]]


@dataclass
class _NativeTools:
    """`format: native`: the tools the chat template rendered at the start (they stay: re-rendering the system
    prompt with a miss_func turn's additions would rewrite tokens the policy already saw), the parser, and the
    names it may read (turn 0's and every added function's)."""

    tools: list[dict]
    names: dict[str, str]
    parser: Any

    def add(self, functions: list[dict]) -> None:
        self.names.update(openai_tools(functions)[1])


@dataclass
class _TurnStats:
    steps: int = 0
    calls: int = 0
    decode_failures: int = 0
    env_errors: int = 0
    end: str | None = None  # "no_call", "parse_error", or the trajectory's termination

    def as_dict(self) -> dict:
        return dict(self.__dict__)


@register(NAME)
class BfclMultiTurnAgentLoop(AgentLoopBase):
    def __init__(self, *args, **kwargs):
        self._loop_kwargs = pop_config_kwargs(BfclMultiTurnConfig, kwargs)
        self.agent_name = str(kwargs.pop("name", NAME))
        kwargs.pop("tools", None)  # the functions are in the prompt; the environment server executes them
        super().__init__(*args, **kwargs)
        self.response_length = int(self.rollout_config.response_length)
        self.prompt_length = int(self.rollout_config.prompt_length)
        self._eos_ids = eos_token_ids(self.tokenizer)

    async def run(self, sampling_params: dict[str, Any], **kwargs) -> AgentLoopOutput:
        seeds = start_trajectory(self.rollout_config, kwargs)  # before any await: batch order names the sample
        extra_info = kwargs.get("extra_info") or {}
        cfg = resolve_config(BfclMultiTurnConfig, NAME, self.rollout_config, self._loop_kwargs, extra_info)
        entry = parse_entry(extra_info)
        native = None
        if cfg.format == "native":  # BFCL's FC mode: turn 0's messages, the functions as the template's tools
            messages = [dict(m) for m in entry.question[0]]
            tools, names = openai_tools(entry.functions_at_start())
            native = _NativeTools(tools, names, tool_parser(cfg.tool_parser, self.tokenizer))
        else:
            messages = [dict(m) for m in kwargs["raw_prompt"]]
            check_withheld_docs_absent(messages, entry)
        prompt_ids = await self.loop.run_in_executor(None, lambda: self.continuous_token_builder.build_initial_tokens(
            messages, tools=native.tools if native else None))
        if native:
            check_tools_rendered(self.tokenizer, prompt_ids, native.tools, f"{NAME} {entry.id}")
        if len(prompt_ids) > self.prompt_length:  # verl would cut the system prompt's function docs off
            raise ValueError(f"{entry.id}: the prompt has {len(prompt_ids)} tokens, more than rollout.prompt_length="
                             f"{self.prompt_length}; raise data.max_prompt_length")

        client = env_client(cfg)
        ENV_FAILURES.raise_if_tripped(cfg.env_url)
        try:
            session_id = await client.create_session(initial_config=entry.initial_config,
                                                     involved_classes=entry.involved_classes,
                                                     long_context=entry.long_context)
        except Exception as exc:  # server down, 5xx, a config the simulators refuse: no trajectory to run
            detail = _env_failed(cfg, entry.id, "create_session", exc)
            return self._env_failed_output(cfg, entry, prompt_ids, detail, _env_failure_kind(exc))
        ENV_FAILURES.reset(cfg.env_url)
        try:
            output = await self._run_session(client, session_id, cfg, entry, messages, prompt_ids, sampling_params,
                                            seeds, native)
        except BaseException:  # errors and cancellation: close, and let the original exception through
            await self._close(client, session_id, entry, shield=True)
            raise
        await self._close(client, session_id, entry)
        return output

    @staticmethod
    async def _close(client, session_id: str, entry: BfclEntry, shield: bool = False) -> None:
        """Close the session; a failure is logged (the server closes idle sessions itself), never raised: the
        trajectory is done."""
        try:
            await (asyncio.shield(client.close(session_id)) if shield else client.close(session_id))
        except asyncio.CancelledError:
            if not shield:
                raise
            logger.warning("bfcl_multi_turn: closing session %s of %s was cancelled", session_id, entry.id)
        except Exception as exc:
            logger.warning("bfcl_multi_turn: closing session %s of %s failed: %r", session_id, entry.id, exc)

    def _env_failed_output(self, cfg: BfclMultiTurnConfig, entry: BfclEntry, prompt_ids: list[int], detail: str,
                           kind: str) -> AgentLoopOutput:
        """A trajectory without a session: no response, `terminated="env_error"`."""
        trace = TrajectoryTrace(uuid4().hex, agent_name=self.agent_name)
        trace.record_failure(kind)
        return self._output(trace, Trajectory(prompt_ids, self.response_length), cfg, entry, {}, [], [], [],
                            ENV_ERROR, detail, chat_turns=1,
                            timing={"generate_sequences": 0.0, "tool_calls": 0.0})

    # -- tokens ---------------------------------------------------------------------------------------
    async def _append_context(self, traj: Trajectory, messages: list[dict], new: list[dict],
                              tools: list[dict] | None = None) -> int:
        """Append `new` messages (tool outputs, a user turn) as observation tokens; returns how many were added."""
        previous = list(messages)
        messages.extend(new)
        runtime = traj.prompt_ids + traj.response_ids
        merge = await self.loop.run_in_executor(
            None, lambda: self.continuous_token_builder.merge_context_tokens(previous, messages, runtime, tools=tools))
        keep = len(runtime) - merge.removed_prefix_token_count
        if merge.token_ids[:keep] != runtime[:keep]:
            raise ValueError("the chat template's boundary handling changed earlier tokens of the trajectory")
        traj.drop_observation_tail(merge.removed_prefix_token_count)
        added = merge.token_ids[keep:]
        traj.add_observation(added)
        return len(added)

    # -- the protocol ---------------------------------------------------------------------------------
    async def _run_session(self, client, session_id: str, cfg: BfclMultiTurnConfig, entry: BfclEntry,
                           messages: list[dict], prompt_ids: list[int], sampling_params: dict,
                           seeds: TrajectorySeeds, native: _NativeTools | None = None) -> AgentLoopOutput:
        request_id = uuid4().hex
        trace = TrajectoryTrace(request_id, agent_name=self.agent_name)
        traj = Trajectory(prompt_ids, self.response_length)
        known_names = {doc["name"] for doc in entry.function}
        server_fields: dict[str, Any] = {}
        timing = {"generate_sequences": 0.0, "tool_calls": 0.0}
        model_calls: list[list[list[dict]]] = []
        responses: list[list[str]] = []  # every step's text, the turn-ending ones included (BFCL's result layout)
        turns: list[_TurnStats] = []
        terminated: str | None = None
        env_failure: str | None = None
        chat_turns = 1  # verl's num_turns: the first user message, then every assistant, tool group and user turn
        # GiGPO's anchor state of each step: the environment's history (turns opened, calls and their outputs);
        # BFCL's simulators are deterministic, so the same history from the same entry is the same state
        history: list = []
        anchors: list[str] = []
        tools = native.tools if native else None
        stop_ids = list(getattr(native.parser, "stop_token_ids", None) or []) if native else []
        if stop_ids:  # a parser that ends a call on its own token (gpt-oss), as verl's ToolAgentLoop asks for it
            sampling_params = {**sampling_params, "stop_token_ids": sorted(
                set(sampling_params.get("stop_token_ids") or []) | set(stop_ids))}

        for turn_index in range(entry.num_turns):
            if turn_index > 0:
                history.append(["turn", turn_index])
                if native:
                    native.add(entry.added_functions(turn_index))
                added = await self._append_context(traj, messages, turn_messages(
                    entry, turn_index, "json" if native else cfg.added_functions_format), tools)
                trace.turns[-1].observation_tokens += added  # the user turn follows the previous step
                chat_turns += 1
            stats, executed, texts = _TurnStats(), [], []
            turns.append(stats)
            model_calls.append(executed)
            responses.append(texts)
            while terminated is None and stats.end is None:
                max_tokens = min(int(cfg.max_tokens_per_step), traj.remaining)
                if max_tokens <= 0:
                    terminated = "response_budget"
                    break
                anchor = anchor_digest(history) if history else START
                started = time.perf_counter()
                output = await self.server_manager.generate(
                    request_id=request_id, prompt_ids=traj.prompt_ids + traj.response_ids,
                    sampling_params=seeds.params({**sampling_params, "max_tokens": max_tokens}))
                latency = time.perf_counter() - started
                timing["generate_sequences"] += latency
                merge_server_extra_fields(server_fields, output)
                generated = list(output.token_ids)
                traj.add_policy(generated, server_logprobs(output))
                if generated:  # one anchor per run of policy tokens (an empty generation adds none)
                    anchors.append(anchor)
                step = trace.add_turn(len(generated), 0, latency, stop_reason=output.stop_reason)
                text = self.tokenizer.decode(generated, skip_special_tokens=True)
                texts.append(text)
                stats.steps += 1
                chat_turns += 1
                if not generated or generated[-1] not in self._eos_ids:
                    messages.append({"role": "assistant", "content": text})
                    terminated = "response_budget" if traj.remaining <= 0 else "max_tokens"
                    trace.record_failure("truncated_by_length")
                    break

                if native:
                    read = await read_native_output(native.parser, generated, native.names, hit_limit=False)
                    decoded, failure = read.calls, read.failure
                    messages.append(assistant_message(text, read))
                else:
                    decoded, failure = classify(text, False)
                    messages.append({"role": "assistant", "content": text})
                calls = executable_calls(decoded) if decoded else None
                if calls is None:  # the turn ends: an answer, an empty call list, or an attempt that does not decode
                    failure = failure or "parse_error"
                    if failure == "parse_error":
                        stats.decode_failures += 1
                        trace.record_failure("parse_error")
                    stats.end = failure
                    break

                started = time.perf_counter()
                try:
                    outputs = await client.execute(session_id, calls)
                    if not isinstance(outputs, list) or len(outputs) != len(calls):
                        raise ValueError(f"the environment answered {len(calls)} calls with "
                                         f"{str(outputs)[:300]}")
                except Exception as exc:  # the environment failed (not the model): the trajectory ends
                    env_failure = _env_failed(cfg, entry.id, f"execute {len(calls)} calls", exc)
                    kind = _env_failure_kind(exc)
                    for call in calls:
                        trace.add_tool_call(call["name"], call["arguments"], env_failure, 0.0, failure=kind)
                    terminated = ENV_ERROR
                    break
                ENV_FAILURES.reset(cfg.env_url)
                tool_latency = time.perf_counter() - started
                timing["tool_calls"] += tool_latency
                executed.append(calls)
                history.append([calls, [str(result) for result in outputs]])
                stats.calls += len(calls)
                for call, result in zip(calls, outputs, strict=True):
                    error = str(result).startswith(ENV_ERROR_PREFIX)
                    stats.env_errors += error
                    failure = None if not error else "tool_error" if call["name"] in known_names else "unknown_tool"
                    trace.add_tool_call(call["name"], call["arguments"], str(result), tool_latency / len(calls),
                                        failure=failure)
                tool_messages = [{"role": "tool", "name": call["name"], "content": observation_text(str(result))}
                                 for call, result in zip(calls, outputs, strict=True)]
                step.observation_tokens = await self._append_context(traj, messages, tool_messages, tools)
                chat_turns += 1
                if len(executed) > cfg.max_steps_per_turn:
                    terminated = "step_limit"
                elif traj.remaining <= 0:
                    terminated = "response_budget"
            if terminated:
                stats.end = terminated
                if terminated == "response_budget" and not trace.failures["truncated_by_length"]:
                    trace.record_failure("truncated_by_length")
                break

        return self._output(trace, traj, cfg, entry, server_fields, model_calls, responses, turns, terminated,
                            env_failure, chat_turns=chat_turns, timing=timing, anchors=anchors)

    def _output(self, trace: TrajectoryTrace, traj: Trajectory, cfg: BfclMultiTurnConfig, entry: BfclEntry,
                server_fields: dict, model_calls: list, responses: list, turns: list[_TurnStats],
                terminated: str | None, env_failure: str | None, *, chat_turns: int, timing: dict,
                anchors: list[str] | None = None) -> AgentLoopOutput:
        result = AgentLoopOutput(
            **traj.output_fields(),
            num_turns=chat_turns,
            metrics=timing,
            extra_fields=output_extra_fields(server_fields, NAME, {
                "id": entry.id,
                "format": cfg.format,
                "model_calls": model_calls,
                "responses": responses,
                "turns": [stats.as_dict() for stats in turns],
                "terminated": terminated,
                "env_failure": env_failure,
                "num_turns": entry.num_turns,
                "env_url": cfg.env_url,
                "env_api_key_env": cfg.env_api_key_env,
                "env_timeout_s": float(cfg.env_timeout_s),
            }, **{ANCHORS_FIELD: list(anchors or [])}),
        )
        return trace.finalize(result, tokenizer=self.tokenizer, global_step=server_fields.get("global_steps"))
