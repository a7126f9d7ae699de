"""Prompt templates of the three methods, shared by data prep, SFT data generation and the agent loops.

No verl import: data-prep scripts use this module on machines without verl.

>>> rag_r1_prompt("Who wrote Hamlet", mode="sq").rstrip().endswith("Question: Who wrote Hamlet?")
True
>>> rag_r1_messages("Capital of France?")[0]["role"]
'user'
>>> bfcl_messages("Weather in Paris?", [{"name": "get_weather", "parameters": {}}])[0]["role"]
'system'
>>> gui_grounding_messages("Click the OK button")[0]["content"].startswith("<image>")
True
"""

from __future__ import annotations

import json
from collections.abc import Sequence

RAG_R1_MODES = ("sq", "mq")

_RAG_R1_TEMPLATE = (
    "Answer the given question. "
    "You must conduct reasoning inside <think> and </think> first every time you get new information. "
    "After reasoning, if you find you lack some knowledge, you can call a search engine by {search_syntax} "
    "and it will return the top searched results {per_query}between <information> and </information>. "
    "You can search as many times as you want{query_limit}. "
    "If you find no further external knowledge needed, you can directly provide the answer inside <answer> and "
    "</answer>, without detailed illustrations. For example, <answer> Beijing </answer>. Question: {question}\n"
)


def _number_word(n: int) -> str:
    return {1: "one", 2: "two", 3: "three", 4: "four", 5: "five"}.get(n, str(n))


def normalize_question(question: str) -> str:
    """Strip, and end with a question mark (as RAG-R1's data prep does)."""
    question = str(question).strip()
    return question if question.endswith("?") else question + "?"


def rag_r1_prompt(question: str, mode: str = "mq", max_queries: int = 3) -> str:
    """The RAG-R1 user instruction. `mode` "sq": one query per `<search>`; "mq": up to `max_queries`
    comma-separated queries per `<search>`, all retrieved together."""
    if mode not in RAG_R1_MODES:
        raise ValueError(f"unknown RAG-R1 mode {mode!r}; known: {', '.join(RAG_R1_MODES)}")
    if mode == "mq":
        syntax, per_query = "<search> query_1, query_2 </search>", "for each query "
        limit = f", using up to {_number_word(max_queries)} queries each time"
    else:
        syntax, per_query, limit = "<search> query </search>", "", ""
    return _RAG_R1_TEMPLATE.format(
        search_syntax=syntax, per_query=per_query, query_limit=limit, question=normalize_question(question)
    )


def rag_r1_messages(question: str, mode: str = "mq", max_queries: int = 3) -> list[dict]:
    """The dataset `prompt` column for RAG-R1: one user turn."""
    return [{"role": "user", "content": rag_r1_prompt(question, mode, max_queries)}]


_BFCL_INSTRUCTIONS = (
    "You are an expert in composing functions. You are given a question and a set of possible functions. "
    "Based on the question, you will need to make one or more function/tool calls to achieve the purpose. "
    "If none of the functions can be used, point it out. If the given question lacks the parameters required by "
    "the function, also point it out.\n\n"
    "First reason step by step inside <think> and </think>. Then, if you decide to invoke any of the function(s), "
    "write the calls in the format [func_name1(params_name1=params_value1, params_name2=params_value2...), "
    "func_name2(params)] and nothing else after the reasoning.\n\n"
)
_BFCL_FUNCTION_LIST = "Here is a list of functions in JSON format that you can invoke.\n{functions}\n"
BFCL_SYSTEM_TEMPLATE = _BFCL_INSTRUCTIONS + _BFCL_FUNCTION_LIST
# BFCL's multi-turn protocol, said to the model (BFCL's prompting system prompt says the same): a turn goes on while
# the model calls functions, and an answer without a call ends it.
BFCL_MULTI_TURN_BEHAVIOR = (
    "The conversation has several turns. In each turn, do your best to complete the user's request within that "
    "turn: keep calling functions, reading their results, until the request is fulfilled as well as you can. "
    "When you need no more function calls, answer without one; that ends the turn, and the next request follows.\n\n"
)
BFCL_MULTI_TURN_SYSTEM_TEMPLATE = _BFCL_INSTRUCTIONS + BFCL_MULTI_TURN_BEHAVIOR + _BFCL_FUNCTION_LIST
BFCL_ADDED_FUNCTIONS_TEMPLATE = "{functions}\nI have updated some more functions you can choose from. What about now?"


def bfcl_system_prompt(functions: Sequence[dict]) -> str:
    """BFCL-style prompting system prompt with the function list as JSON, plus FunReason's
    `<think>...</think>` then `[calls]` target format."""
    return BFCL_SYSTEM_TEMPLATE.format(functions=_functions_json(functions))


def bfcl_messages(question: str | list[dict], functions: Sequence[dict]) -> list[dict]:
    """System prompt with the functions + the user question (a string, or BFCL's list of user turns)."""
    turns = [{"role": "user", "content": question}] if isinstance(question, str) else list(question)
    return [{"role": "system", "content": bfcl_system_prompt(functions)}, *turns]


def bfcl_multi_turn_system_prompt(functions: Sequence[dict]) -> str:
    """The system prompt of BFCL's multi-turn protocol: `bfcl_system_prompt` + how turns end."""
    return BFCL_MULTI_TURN_SYSTEM_TEMPLATE.format(functions=_functions_json(functions))


def bfcl_multi_turn_messages(first_turn: list[dict], functions: Sequence[dict]) -> list[dict]:
    """The `prompt` of a `bfcl_multi_turn` row: the system prompt with the functions available at turn 0 (the
    withheld ones left out), then turn 0's messages. A system message of the turn itself is kept after ours, in
    the same system message, as BFCL's prompting handlers do."""
    turn = [dict(m) for m in first_turn]
    system = bfcl_multi_turn_system_prompt(functions)
    if turn and turn[0].get("role") == "system":
        return [{"role": "system", "content": system + "\n\n" + str(turn[0]["content"])}, *turn[1:]]
    return [{"role": "system", "content": system}, *turn]


ADDED_FUNCTIONS_FORMATS = ("json", "python")


def bfcl_added_functions_message(functions: Sequence[dict], doc_format: str = "json") -> dict:
    """The user message of a turn that adds withheld functions (BFCL's miss_func): their docs, then BFCL's sentence
    asking to go on. `doc_format` "json": as in our system prompt; "python": the Python list as BFCL's prompting
    handler prints it (`DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_PROMPTING`, what `eval bfcl --prompt bfcl` uses).

    >>> bfcl_added_functions_message([{"name": "mv"}], "python")["content"].splitlines()[0]
    "[{'name': 'mv'}]"
    """
    if doc_format == "json":
        docs = _functions_json(functions)
    elif doc_format == "python":
        docs = str(list(functions))
    else:
        raise ValueError(f"unknown added-functions format {doc_format!r}; known: {', '.join(ADDED_FUNCTIONS_FORMATS)}")
    return {"role": "user", "content": BFCL_ADDED_FUNCTIONS_TEMPLATE.format(functions=docs)}


def _functions_json(functions: Sequence[dict]) -> str:
    return json.dumps(list(functions), indent=4, ensure_ascii=False)


def funreason_target(reasoning: str, calls: str) -> str:
    """The FunReason SFT target: `<think>reasoning</think>\\n\\n[calls]` (SRML splits it at `</think>\\n\\n`)."""
    return f"<think>{reasoning.strip()}</think>\n\n{calls.strip()}"


GUI_GROUNDING_TEMPLATE = (
    "<image>\nYou are a GUI agent. The screenshot above is {width}x{height} pixels. "
    "Output exactly one action that performs the instruction, as pyautogui.click(x=<x>, y=<y>) with pixel "
    "coordinates in this screenshot.\nInstruction: {instruction}"
)


def gui_grounding_prompt(instruction: str, width: int | None = None, height: int | None = None) -> str:
    """The user turn for one-click grounding. `<image>` is verl's placeholder for the row's `images[0]`;
    width/height (of the image the model sees, i.e. after smart_resize) are stated when given."""
    text = GUI_GROUNDING_TEMPLATE.format(width=width or "W", height=height or "H", instruction=instruction.strip())
    if width is None or height is None:
        text = text.replace(" The screenshot above is WxH pixels.", "")
    return text


def gui_grounding_messages(instruction: str, width: int | None = None, height: int | None = None) -> list[dict]:
    return [{"role": "user", "content": gui_grounding_prompt(instruction, width, height)}]
