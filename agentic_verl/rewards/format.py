"""Format reward for the RAG-R1 / Search-R1 tag protocol.

A response is the policy's text with the environment's ``<information>`` observations spliced in.
It is **valid** when all of the following hold (the first violation, scanning left to right, is the
verdict; ``format:missing_answer`` is reported at the end):

1. Tags are exactly ``<think>``, ``<search>``, ``<information>``, ``<answer>`` and their closing forms
   (lowercase, no attributes; other ``<...>`` text is plain text). Blocks do not nest
   (``format:nested_tag``), every block is closed (``format:unclosed_tag``), a closing tag closes the
   open block (``format:mismatched_tag``) and never appears alone (``format:unmatched_close``).
   Inside ``<information>`` nothing is parsed until ``</information>`` (documents may contain anything).
2. Outside blocks there is only whitespace (``format:text_outside_tags``), unless
   ``allow_text_outside_tags=True``.
3. The response is a sequence of turns ``[<think>] (<search> <information> | <answer>)``: with
   ``require_think`` (default) every turn opens with exactly one ``<think>`` (``format:missing_think``;
   two in a row: ``format:out_of_order``); every ``<search>`` is followed directly by an
   ``<information>`` (``format:search_without_information``) and every ``<information>`` directly
   follows a ``<search>`` (``format:information_without_search``: the policy wrote its own observation).
4. A search holds one query (``mode="single"``; commas are part of the query) or 1..``max_queries``
   comma-separated queries (``mode="multi"``): ``format:empty_search``, ``format:empty_query``
   (``a,,b``), ``format:too_many_queries``; at most ``max_searches`` searches if set
   (``format:too_many_searches``).
5. Exactly one ``<answer>``, non-empty (``format:empty_answer``), and it ends the response: afterwards
   only whitespace (``format:search_after_answer``, ``format:multiple_answers``,
   ``format:content_after_answer``, also for plain text). No answer at all: ``format:missing_answer``.

Score: ``weight`` if valid, else 0.0. The scan is linear in the response length.

>>> good = ("<think>need capital</think><search> capital of China </search>"
...         "<information>Doc 1: Beijing ...</information><think>found</think><answer> Beijing </answer>")
>>> format_reward(good)
{'score': 1.0, 'error_type': None, 'num_searches': 1.0, 'num_queries': 1.0}
>>> format_reward("<think>x</think><answer>a</answer><search>q</search>")["error_type"]
'format:search_after_answer'
>>> format_reward("<think>x</think><search>a, b, c, d</search>", mode="multi", max_queries=3)["error_type"]
'format:too_many_queries'
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from agentic_verl.rewards.registry import REWARDS

__all__ = ["FORMAT_ERRORS", "FormatVerdict", "check_format", "format_reward"]

TAGS = ("think", "search", "information", "answer")
_TAG_RE = re.compile(r"<(/?)(think|search|information|answer)>")
MODES = ("single", "multi")

FORMAT_ERRORS = (
    "format:not_text",
    "format:nested_tag",
    "format:unclosed_tag",
    "format:mismatched_tag",
    "format:unmatched_close",
    "format:text_outside_tags",
    "format:missing_think",
    "format:out_of_order",
    "format:search_without_information",
    "format:information_without_search",
    "format:empty_search",
    "format:empty_query",
    "format:too_many_queries",
    "format:too_many_searches",
    "format:empty_answer",
    "format:multiple_answers",
    "format:search_after_answer",
    "format:content_after_answer",
    "format:missing_answer",
)
"""Every verdict :func:`check_format` can return."""


@dataclass(frozen=True)
class FormatVerdict:
    error_type: str | None  # None when valid
    num_searches: int = 0
    num_queries: int = 0

    @property
    def valid(self) -> bool:
        return self.error_type is None


def _blocks(text: str):
    """Yield ("block", tag, content) and ("text", None, text) items, or ("error", code, None) once."""
    pos = 0
    open_tag: str | None = None
    open_end = 0
    for match in _TAG_RE.finditer(text):
        closing, tag = match.group(1) == "/", match.group(2)
        if open_tag == "information" and not (closing and tag == "information"):
            continue  # documents are opaque
        if open_tag is None:
            if closing:
                yield "error", "format:unmatched_close", None
                return
            between = text[pos : match.start()]
            if between.strip():
                yield "text", None, between
            open_tag, open_end = tag, match.end()
        elif closing and tag == open_tag:
            yield "block", open_tag, text[open_end : match.start()]
            open_tag, pos = None, match.end()
        elif closing:
            yield "error", "format:mismatched_tag", None
            return
        else:
            yield "error", "format:nested_tag", None
            return
    if open_tag is not None:
        yield "error", "format:unclosed_tag", None
        return
    tail = text[pos:]
    if tail.strip():
        yield "text", None, tail


def check_format(
    text: str,
    *,
    mode: str = "single",
    max_queries: int = 3,
    max_searches: int | None = None,
    require_think: bool = True,
    allow_text_outside_tags: bool = False,
) -> FormatVerdict:
    """Check ``text`` against the protocol described in the module docstring; never raises on ``text``."""
    if mode not in MODES:
        raise ValueError(f"unknown format mode {mode!r}; known: {', '.join(MODES)}")
    if isinstance(max_queries, bool) or not isinstance(max_queries, int) or max_queries < 1:
        raise ValueError(f"max_queries must be an integer >= 1, got {max_queries!r}")
    if max_searches is not None and (isinstance(max_searches, bool) or not isinstance(max_searches, int)):
        raise ValueError(f"max_searches must be an integer or None, got {max_searches!r}")
    if not isinstance(text, str):
        return FormatVerdict("format:not_text")
    searches = queries = 0
    answered = False
    prev: str | None = None  # previous block tag in this response ("think", "search", ...)
    think_in_turn = False

    def verdict(error: str | None) -> FormatVerdict:
        return FormatVerdict(error, searches, queries)

    for kind, tag, content in _blocks(text):
        if kind == "error":
            return verdict(tag)
        if kind == "text":
            if answered:
                return verdict("format:content_after_answer")
            if not allow_text_outside_tags:
                return verdict("format:text_outside_tags")
            continue
        if answered:
            if tag == "search":
                return verdict("format:search_after_answer")
            if tag == "answer":
                return verdict("format:multiple_answers")
            return verdict("format:content_after_answer")
        if tag == "information":
            if prev != "search":
                return verdict("format:information_without_search")
            think_in_turn = False
        elif prev == "search":
            return verdict("format:search_without_information")
        elif tag == "think":
            if think_in_turn:
                return verdict("format:out_of_order")
            think_in_turn = True
        else:  # search or answer: the action that ends a turn
            if require_think and not think_in_turn:
                return verdict("format:missing_think")
            if tag == "search":
                searches += 1
                error, n = _check_queries(content, mode, max_queries)
                queries += n
                if error:
                    return verdict(error)
                if max_searches is not None and searches > max_searches:
                    return verdict("format:too_many_searches")
            else:
                if not content.strip():
                    return verdict("format:empty_answer")
                answered = True
        prev = tag
    return verdict(None if answered else "format:missing_answer")


def _check_queries(content: str, mode: str, max_queries: int) -> tuple[str | None, int]:
    if not content.strip():
        return "format:empty_search", 0
    if mode == "single":
        return None, 1
    parts = content.split(",")
    if any(not part.strip() for part in parts):
        return "format:empty_query", sum(1 for part in parts if part.strip())
    if len(parts) > max_queries:
        return "format:too_many_queries", len(parts)
    return None, len(parts)


@REWARDS.register("format")
def format_reward(
    solution_str: str,
    ground_truth=None,
    extra_info: dict | None = None,
    *,
    weight: float = 1.0,
    mode: str = "single",
    max_queries: int = 3,
    max_searches: int | None = None,
    require_think: bool = True,
    allow_text_outside_tags: bool = False,
    **kwargs,
) -> dict:
    """``weight`` if ``solution_str`` follows the tag protocol, else 0.0; ``ground_truth`` is ignored.

    Also returns ``num_searches`` and ``num_queries`` counted up to the verdict (as floats, for logs).

    >>> format_reward("<think>x</think><answer>a</answer>", weight=0.5)["score"]
    0.5
    >>> format_reward("<answer>a</answer>")["error_type"]
    'format:missing_think'
    """
    if isinstance(weight, bool) or not isinstance(weight, (int, float)) or weight != weight:
        raise ValueError(f"format weight must be a number, got {weight!r}")
    verdict = check_format(
        solution_str,
        mode=mode,
        max_queries=max_queries,
        max_searches=max_searches,
        require_think=require_think,
        allow_text_outside_tags=allow_text_outside_tags,
    )
    return {
        "score": float(weight) if verdict.valid else 0.0,
        "error_type": verdict.error_type,
        "num_searches": float(verdict.num_searches),
        "num_queries": float(verdict.num_queries),
    }
