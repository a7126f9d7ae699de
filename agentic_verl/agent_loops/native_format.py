"""`format: native` for our BFCL loops (`function_call`, `bfcl_multi_turn`): the model's own tool-call format.

    format: prompting   BFCL's prompting mode (the default): the functions in our system prompt, calls written as
                        BFCL's Python list `[f(a=1)]`, read by our BFCL decoder (never executed)
    format: native      BFCL's FC mode: the functions as OpenAI tool schemas through the chat template
                        (`apply_chat_template(tools=...)`), calls written in the model family's own syntax
                        (Qwen: `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`), read by the verl
                        `ToolParser` named by `tool_parser` (hermes for Qwen; gpt-oss, qwen3_coder, glm, ...)

What a native output becomes (`read_native_output`), every output being hostile input: the calls the parser read,
or one failure kind of the trace taxonomy: `truncated_by_length` (the generation hit its limit), `parse_error` (the
parser raised, dropped a `<tool_call>` block it could not read, or read arguments that are not a JSON object; the
parser's own kind is kept as `native_failure`, `rewards.bfcl.native_calls.FAILURES`), `no_call` (no call at all).
A template that does not render the tools (SmolLM2's, for one) cannot carry this format: `check_tools_rendered`
refuses it before the first generation.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

from agentic_verl.rewards.bfcl.native_calls import NativeCalls, parse_native_calls

FORMATS = ("prompting", "native")
DEFAULT_TOOL_PARSER = "hermes"  # Qwen2.5 / Qwen3's `<tool_call>` JSON blocks


def check_format(loop: str, format: str, tool_parser: str) -> None:
    """A ValueError naming the known values for an unknown format or tool parser."""
    if format not in FORMATS:
        raise ValueError(f"unknown {loop} format {format!r}; known: {', '.join(FORMATS)}")
    if format == "native":
        from verl.experimental.agent_loop.tool_parser import ToolParser

        if tool_parser not in ToolParser._registry:
            raise ValueError(f"unknown {loop} tool_parser {tool_parser!r}; verl's ToolParser registry has "
                             f"{', '.join(ToolParser._registry)}")


@functools.lru_cache(maxsize=16)  # one per (parser, tokenizer) in a worker: verl's parsers keep no per-call state
def tool_parser(name: str, tokenizer):
    """verl's `ToolParser` registered as `name`, for `tokenizer` (a ValueError listing the registry otherwise)."""
    from verl.experimental.agent_loop.tool_parser import ToolParser

    if name not in ToolParser._registry:
        raise ValueError(f"unknown tool parser {name!r}; verl's registry has {', '.join(ToolParser._registry)}")
    return ToolParser.get_tool_parser(name, tokenizer)


def check_tools_rendered(tokenizer, prompt_ids: list[int], tools: list[dict], where: str) -> None:
    """A ValueError when the chat template left a tool out of the prompt: the model would be asked to call
    functions it was never shown (templates without tool support drop `tools=` without a word)."""
    text = tokenizer.decode(list(prompt_ids), skip_special_tokens=False)
    missing = [t["function"]["name"] for t in tools if f'"{t["function"]["name"]}"' not in text]
    if missing:
        raise ValueError(f"{where}: the tokenizer's chat template does not render tools (missing {missing[:5]}); "
                         "format: native needs a model whose template takes tools (Qwen2.5/Qwen3, Llama 3.x, ...): "
                         "use format: prompting")


@dataclass
class NativeOutput:
    """One native output as a loop reads it: `calls` in our decoder's form `[{name: {arg: value}}]` (None when
    there are none), the trace `failure` kind, and what the parser made of it (`parsed`)."""

    calls: list[dict] | None
    failure: str | None
    parsed: NativeCalls = field(default_factory=NativeCalls)

    def record(self) -> dict[str, Any]:
        """What the loop's extra_fields keep of it (the `bfcl_ast` reward scores native outputs from this)."""
        return {"native_failure": self.parsed.failure, "native_detail": self.parsed.detail,
                "content": self.parsed.content}


async def read_native_output(parser, token_ids: list[int], names: dict[str, str], hit_limit: bool) -> NativeOutput:
    """The calls in one generation's token ids, or its failure kind (module docstring); never raises."""
    if hit_limit:
        return NativeOutput(None, "truncated_by_length")
    parsed = await parse_native_calls(parser, token_ids, names)
    if parsed.failure is not None:
        return NativeOutput(None, "parse_error", parsed)
    if not parsed.calls:
        return NativeOutput(None, "no_call", parsed)
    return NativeOutput(parsed.calls, None, parsed)


def assistant_message(text: str, native: NativeOutput) -> dict:
    """The assistant message as verl's ToolAgentLoop keeps it: the text around the calls, and the calls as
    `tool_calls` (so the template renders the conversation as the model family expects)."""
    if not native.calls:
        return {"role": "assistant", "content": text}
    return {"role": "assistant", "content": native.parsed.content,
            "tool_calls": [{"type": "function", "function": {"name": name, "arguments": arguments}}
                           for call in native.calls for name, arguments in call.items()]}
