"""Native (chat-template) tool calls as BFCL scores them: BFCL's function docs as OpenAI tool schemas, a verl
`ToolParser`'s calls as decoded calls `[{name: {param: value}}]`, and the official checker's verdict on them.

    tools, names = openai_tools(hinted_functions(question["functions"], category))
    text = tokenizer.apply_chat_template(messages, tools=tools, add_generation_prompt=True, tokenize=False)
    parsed = await parse_native_calls(ToolParser.get_tool_parser("hermes", tokenizer), output_ids, names)
    result = native_match(parsed, question["functions"], question["possible_answer"], category)

`openai_tools` follows bfcl-eval's `convert_to_tool` for OpenAI-style FC handlers (`GORILLA_TO_OPENAPI` types,
`parameters.type = "object"`, a float parameter said in words, `.` in a name made `_`); `names` maps a tool name
back to BFCL's, which the checker compares with (BFCL's FC checker makes the expected name's dots underscores,
the same thing from the other side).

Every output is hostile input: a parser that raises, a `<tool_call>` block the parser drops (broken JSON, a number
too long for `json`), arguments that are not a JSON object, are a failure with its kind (`FAILURES`), never an
exception. Like a server's tool parser (vLLM's hermes answers a broken block with no tool calls at all), an output
with a failure has no calls: an AST question fails with `fc:<kind>`, an irrelevance question passes (BFCL: no call
decoded), a relevance question fails. An output with no call and no failure (plain text) is BFCL's
`ast_decoder:decoder_failed`.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field

from agentic_verl.rewards.bfcl.check import verdict
from agentic_verl.rewards.bfcl.match import _bad_question, checked_calls_verdict, language_of, relevance_verdict

# bfcl-eval's GORILLA_TO_OPENAPI (constants/type_mappings.py); an unknown type becomes "string", as there
OPENAPI_TYPES = {"integer": "integer", "number": "number", "float": "number", "string": "string",
                 "boolean": "boolean", "bool": "boolean", "array": "array", "list": "array", "dict": "object",
                 "object": "object", "tuple": "array", "any": "string", "byte": "integer", "short": "integer",
                 "long": "integer", "double": "number", "char": "string", "ArrayList": "array",
                 "Array": "array", "HashMap": "object", "Hashtable": "object", "Queue": "array",
                 "Stack": "array", "Any": "string", "String": "string", "Bigint": "integer"}  # fmt: skip
FAILURES = {
    "parser_error": "the tool parser raised on the output",
    "unparsed_call": "a tool-call block the parser could not read (broken JSON, a value json cannot hold)",
    "arguments_not_object": "a call whose arguments are not a JSON object",
    "nameless_call": "a call whose name is empty",
}


@dataclass
class NativeCalls:
    """What a parser made of one output: the calls (BFCL's decoded form), the text around them, and the failure
    kind (a key of FAILURES) with its detail, None when the output read cleanly."""

    calls: list[dict] = field(default_factory=list)
    content: str = ""
    failure: str | None = None
    detail: str = ""


def openai_tools(functions: list[dict]) -> tuple[list[dict], dict[str, str]]:
    """BFCL function docs -> (`[{"type": "function", "function": schema}]`, {tool name: BFCL name})."""
    tools, names = [], {}
    for function in copy.deepcopy(functions):
        name = function["name"].replace(".", "_")
        names[name] = function["name"]
        parameters = function.get("parameters") or {}
        parameters["type"] = "object"
        parameters["properties"] = _openai_properties(parameters.get("properties") or {})
        tools.append({"type": "function", "function": {**function, "name": name, "parameters": parameters}})
    return tools, names


def _openai_properties(properties: dict) -> dict:
    """bfcl-eval's `_cast_to_openai_type`: every property (and nested properties / items) typed the OpenAPI way."""
    for value in properties.values():
        declared = value.get("type")
        if declared == "float":
            value["format"] = "float"
            value["description"] = value.get("description", "") + " This is a float type value."
        value["type"] = OPENAPI_TYPES.get(declared, "string") if isinstance(declared, str) else "string"
        if value["type"] in ("array", "object"):
            if isinstance(value.get("properties"), dict):
                value["properties"] = _openai_properties(value["properties"])
            elif isinstance(value.get("items"), dict):
                value["items"] = _openai_properties({"items": value["items"]})["items"]
    return properties


async def parse_native_calls(parser, response_ids: list[int], names: dict[str, str] | None = None) -> NativeCalls:
    """`parser` (a verl ToolParser) on one output's token ids; never raises."""
    try:
        content, function_calls = await parser.extract_tool_calls(list(response_ids))
    except Exception as exc:  # the parser is third-party code on hostile text
        return NativeCalls(failure="parser_error", detail=f"{type(exc).__name__}: {exc}"[:500])
    start = getattr(parser, "tool_call_start_token", None)
    if start:  # hermes and its kind drop a block they cannot read without a word: count the markers
        text = parser.tokenizer.decode(list(response_ids), skip_special_tokens=False)
        lost = text.count(start) - len(function_calls)
        if lost > 0:
            return NativeCalls(content=content, failure="unparsed_call", detail=f"{lost} {start} block(s) unread")
    calls = []
    for call in function_calls:
        if not call.name:  # hermes reads `{"name": "", ...}` as a call; no executor or checker can take it
            return NativeCalls(content=content, failure="nameless_call", detail="a call with name ''")
        try:
            arguments = json.loads(call.arguments)
        except (ValueError, TypeError, RecursionError) as exc:
            arguments, why = None, f"{type(exc).__name__}: {exc}"[:200]
        else:
            why = f"arguments are {type(arguments).__name__}"
        if not isinstance(arguments, dict):
            return NativeCalls(content=content, failure="arguments_not_object", detail=f"{call.name}: {why}")
        calls.append({(names or {}).get(call.name, call.name): arguments})
    return NativeCalls(calls=calls, content=content)


def native_match(parsed: NativeCalls, functions: list[dict], possible_answer: list[dict] | None,
                 category: str) -> dict:
    """The verdict `{"valid", "error_type", "errors"}` of `ast_match` for native calls: BFCL's checker
    (`check_calls`) on the decoded calls, BFCL's relevance rules, and the failures of the module docstring."""
    if "relevance" in category:  # covers irrelevance too
        return relevance_verdict(category, bool(parsed.calls) and parsed.failure is None)
    problem = _bad_question(functions, possible_answer)
    if problem:
        return verdict("bfcl:bad_ground_truth", problem)
    if parsed.failure is not None:
        return verdict(f"fc:{parsed.failure}", f"{FAILURES[parsed.failure]}: {parsed.detail}")
    if not parsed.calls:
        return verdict("ast_decoder:decoder_failed", "No tool call in the output.")
    return checked_calls_verdict(parsed.calls, functions, possible_answer, category, language_of(category))


def native_calls_of(info: dict) -> NativeCalls | None:
    """The calls the `function_call` loop read from a `format: native` output (its extra_fields record, which
    verl's reward manager merges into extra_info), None for a prompting-mode output. A row that says native
    without the loop's record is a ValueError: the reward cannot read native calls from text alone."""
    record = info.get("function_call")
    if not isinstance(record, dict) or record.get("format") != "native":
        return None
    if "native_failure" not in record:
        raise ValueError("extra_info.function_call.format is 'native' but the sample has no record of the "
                         "function_call loop (agent_name: function_call reads native outputs for this reward)")
    return NativeCalls(calls=list(record.get("calls") or []), content=str(record.get("content") or ""),
                       failure=record["native_failure"], detail=str(record.get("native_detail") or ""))
