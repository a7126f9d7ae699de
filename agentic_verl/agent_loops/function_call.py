"""`function_call`: FunReason / BFCL function calling as a single-turn verl agent loop.

Prompt: BFCL's prompting format. When the sample's `extra_info.functions` (a list of function schemas, or its
JSON string, as in BFCL's question files) is present, the loop builds the system prompt from it
(`prompts.bfcl_system_prompt`) and keeps the row's user turn(s); otherwise `prompt` is used as is (data prep
already called `prompts.bfcl_messages`).

`system_prompt: row` (per run, per loop config or per sample in `extra_info.function_call`) keeps the row's own
prompt even when `functions` is present: for data that brings its own (e.g. shorter) function docs; the
functions still score the output.

Target: `<think>...</think>\\n\\n[func_a(p=v), func_b(...)]`. One generation; the generated token ids are the
response (mask 1). The loop classifies the output, it does not score it: the reward is BFCL's AST match in the
reward-function path (`reward_fns/bfcl_ast.py`, which reads extra_info `functions`, `category`, `language`).
Each decoded call is recorded as a tool call in the trace (`agent/num_tool_calls`), with no result: nothing is
executed. A policy that scores without calling (irrelevance questions) shows up as reward without tool calls.

`format: native` (agent_loops/native_format.py): BFCL's FC mode. The functions go to the chat template as OpenAI
tool schemas (`rewards.bfcl.native_calls.openai_tools`, a `.` in a name made `_`), the row's turns without our
system prompt; the output's calls are read by verl's `ToolParser` `tool_parser` (hermes for Qwen). The record keeps
the parser's verdict (`native_failure`, `native_detail`, `content`), which the `bfcl_ast` and `fc_format` rewards
score (verl merges extra_fields into extra_info): one reading of the output, by the parser the run names.

Failure categories (trace.py taxonomy):
- truncated_by_length: the generation hit its token limit before ending;
- parse_error: an unclosed `<think>`, or an attempted call (a parenthesis, `[` or `{`) that BFCL's decoder
  (ast-based, never executed) cannot decode, e.g. a JSON tool call instead of `[f(a=1)]`;
- no_call: nothing after the reasoning, or prose without a call (in BFCL's irrelevance categories that is the
  right answer: the metric says how often it happens, the reward says whether it was right);
- internal_error: our decoder raised something other than the model's format errors (`MODEL_FORMAT_ERRORS`), or
  returned something other than a call list: a bug in agentic_verl, not a format error of the model. Logged with
  its traceback (logger.exception) and counted apart, so that a decoder bug cannot pass for a policy that writes
  badly; the rollout goes on (the reward path decodes again). The reading is `function_call_protocol.py`.
The decoded calls and the verdict go to `extra_fields["function_call"]` (with `error`, the exception, for an
internal_error).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any
from uuid import uuid4

from verl.experimental.agent_loop.agent_loop import AgentLoopBase, AgentLoopOutput, register

from agentic_verl.agent_loops._common import (
    Trajectory,
    eos_token_ids,
    generate_single_turn,
    output_extra_fields,
    pop_config_kwargs,
    resolve_config,
)
from agentic_verl.agent_loops.function_call_protocol import (  # noqa: F401 (re-exported)
    MODEL_FORMAT_ERRORS,
    classify,
    classify_output,
)
from agentic_verl.agent_loops.native_format import (
    DEFAULT_TOOL_PARSER,
    check_format,
    check_tools_rendered,
    read_native_output,
    tool_parser,
)
from agentic_verl.agent_loops.prompts import bfcl_system_prompt
from agentic_verl.agent_loops.sampling_seeds import start_trajectory
from agentic_verl.agent_loops.trace import TrajectoryTrace
from agentic_verl.rewards.bfcl.native_calls import openai_tools
from agentic_verl.training.gigpo_anchors import ANCHORS_FIELD, START

NAME = "function_call"
LANGUAGES = ("python", "java", "javascript")
SYSTEM_PROMPTS = ("bfcl", "row")  # build BFCL's system prompt from extra_info.functions | keep the row's prompt


@dataclass
class FunctionCallConfig:
    max_tokens: int = 1024  # also bounded by rollout.response_length
    language: str = "python"  # default when extra_info has no `language`
    system_prompt: str = "bfcl"  # "bfcl": built from extra_info.functions; "row": the row's prompt as is
    format: str = "prompting"  # "prompting": BFCL's call list | "native": the chat template's tool calls
    tool_parser: str = DEFAULT_TOOL_PARSER  # native: verl's ToolParser registry name

    def __post_init__(self):
        check_format(NAME, self.format, self.tool_parser)
        if self.system_prompt not in SYSTEM_PROMPTS:
            raise ValueError(f"unknown function_call system_prompt {self.system_prompt!r}; "
                             f"known: {', '.join(SYSTEM_PROMPTS)}")
        if self.language not in LANGUAGES:
            raise ValueError(f"unknown function_call language {self.language!r}; known: {', '.join(LANGUAGES)}")
        if self.max_tokens < 1:
            raise ValueError(f"function_call max_tokens must be >= 1, got {self.max_tokens}")


def _function_docs(functions: Any) -> list[dict]:
    if isinstance(functions, str):
        functions = json.loads(functions)
    if hasattr(functions, "tolist"):  # a numpy array from parquet
        functions = functions.tolist()
    return list(functions)


def build_messages(raw_prompt: list[dict], functions: Any) -> list[dict]:
    """The BFCL system prompt from `functions` + the row's non-system turns; `raw_prompt` when no functions.

    >>> [m["role"] for m in build_messages([{"role": "system", "content": "old"}, {"role": "user", "content": "hi"}],
    ...                                    '[{"name": "f"}]')]
    ['system', 'user']
    """
    if functions is None:
        return list(raw_prompt)
    turns = [m for m in raw_prompt if m.get("role") != "system"]
    return [{"role": "system", "content": bfcl_system_prompt(_function_docs(functions))}, *turns]


def native_request(raw_prompt: list[dict], functions: Any, system_prompt: str) -> tuple[list[dict], list, dict]:
    """`format: native`: (messages, tools, {tool name: BFCL name}), as BFCL's FC handlers send a question: the
    functions as OpenAI tool schemas for the chat template and the row's turns without our prompting-mode system
    prompt (`system_prompt: row` keeps the row's prompt whole).

    >>> messages, tools, names = native_request([{"role": "system", "content": "old"}, {"role": "user",
    ...     "content": "hi"}], '[{"name": "math.add", "parameters": {"properties": {}}}]', "bfcl")
    >>> [m["role"] for m in messages], tools[0]["function"]["name"], names
    (['user'], 'math_add', {'math_add': 'math.add'})
    """
    if functions is None:
        raise ValueError("function_call format: native needs the sample's extra_info.functions (the tools the chat "
                         "template renders)")
    tools, names = openai_tools(_function_docs(functions))
    keep = system_prompt == "row"
    return [dict(m) for m in raw_prompt if keep or m.get("role") != "system"], tools, names


@register(NAME)
class FunctionCallAgentLoop(AgentLoopBase):
    def __init__(self, *args, **kwargs):
        self._loop_kwargs = pop_config_kwargs(FunctionCallConfig, kwargs)
        self.agent_name = str(kwargs.pop("name", NAME))
        kwargs.pop("tools", None)  # the functions are in the prompt, nothing is executed
        super().__init__(*args, **kwargs)
        self.response_length = int(self.rollout_config.response_length)
        self._eos_ids = eos_token_ids(self.tokenizer)

    async def run(self, sampling_params: dict[str, Any], **kwargs) -> AgentLoopOutput:
        sampling_params = start_trajectory(self.rollout_config, kwargs).params(sampling_params)  # before any await
        extra_info = kwargs.get("extra_info") or {}
        cfg = resolve_config(FunctionCallConfig, NAME, self.rollout_config, self._loop_kwargs, extra_info)
        language = str(extra_info.get("language") or cfg.language)
        request_id = uuid4().hex
        trace = TrajectoryTrace(request_id, agent_name=self.agent_name)
        names = None
        if cfg.format == "native":
            messages, tools, names = native_request(list(kwargs["raw_prompt"]), extra_info.get("functions"),
                                                    cfg.system_prompt)
            prompt_ids = await self.ct_build_initial_tokens(messages, tools=tools)
            check_tools_rendered(self.tokenizer, prompt_ids, tools, NAME)
        else:
            functions = extra_info.get("functions") if cfg.system_prompt == "bfcl" else None
            messages = build_messages(list(kwargs["raw_prompt"]), functions)
            prompt_ids = await self.ct_build_initial_tokens(messages)
        traj = Trajectory(prompt_ids, self.response_length)

        turn = await generate_single_turn(
            self.server_manager, self.tokenizer, request_id=request_id, prompt_ids=prompt_ids,
            sampling_params=sampling_params, max_tokens=min(cfg.max_tokens, self.response_length),
            eos_ids=self._eos_ids, traj=traj, trace=trace,
        )
        text, latency, server_fields = turn.text, turn.latency_s, turn.server_fields
        native_record: dict[str, Any] = {}
        if names is not None:
            native = await read_native_output(tool_parser(cfg.tool_parser, self.tokenizer), turn.token_ids, names, turn.hit_limit)
            calls, failure, error, native_record = native.calls, native.failure, None, native.record()
        else:
            calls, failure, error = classify_output(text, turn.hit_limit, language)
        if failure:
            trace.record_failure(failure)
        for call in calls or []:  # decoded, never executed: counted in the trace's num_tool_calls metric
            for name, arguments in call.items():
                trace.add_tool_call(name, arguments, "", 0.0)
        result = AgentLoopOutput(
            **traj.output_fields(),
            num_turns=2,
            metrics={"generate_sequences": latency},
            extra_fields=output_extra_fields(server_fields, NAME, {
                "calls": calls, "failure": failure, "has_think": "</think>" in text, "language": language,
                "format": cfg.format, **native_record, **({"error": error} if error else {}),
            }, **{ANCHORS_FIELD: [START]}),  # one turn, from the prompt: GiGPO's step group is the whole group
        )
        return trace.finalize(result, tokenizer=self.tokenizer, messages=None,
                              global_step=server_fields.get("global_steps"))
