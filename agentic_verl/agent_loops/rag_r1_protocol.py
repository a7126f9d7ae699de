"""The RAG-R1 / Search-R1 tag protocol's text rules, without verl: what the `rag_r1` loop acts on and what data
tools (SFT sample cutting) must read exactly the same way.

- generation stops at `STOP_TAGS`; the first complete `<search>`/`<answer>` block of a turn is its action;
- `<search>` content: sq keeps it whole, mq splits on commas (first `max_queries`);
- a turn with no complete block is `parse_error` when a tag fragment is there, else `no_call`.

Retrieved text is escaped with `agentic_verl.retrieval.formatting.escape_protocol_tags`.
"""

from __future__ import annotations

import re

STOP_TAGS = ("</search>", "</answer>")
_ACTION_RE = re.compile(r"<(search|answer)>(.*?)</\1>", re.DOTALL)
_TAG_FRAGMENT_RE = re.compile(r"</?(search|answer)>")


def parse_action(text: str) -> tuple[str | None, str]:
    """("search" | "answer", stripped content) for the first complete block, else (None, "").

    >>> parse_action("<think>x</think><search> a, b </search>")
    ('search', 'a, b')
    >>> parse_action("<answer> Paris")
    (None, '')
    """
    match = _ACTION_RE.search(text)
    return (match.group(1), match.group(2).strip()) if match else (None, "")


def split_queries(content: str, mode: str, max_queries: int) -> list[str]:
    """The queries of one `<search>`: sq keeps the content whole; mq splits on commas and keeps `max_queries`.

    >>> split_queries(" a , b,, c, d ", "mq", 3)
    ['a', 'b', 'c']
    >>> split_queries("a, b", "sq", 3)
    ['a, b']
    """
    if mode == "sq":
        return [content.strip()] if content.strip() else []
    return [q.strip() for q in content.split(",") if q.strip()][:max_queries]


def no_action_failure(text: str, hit_limit: bool) -> str:
    """The failure category of a turn without a complete block.

    >>> no_action_failure("<search> unclosed", False), no_action_failure("just text", False)
    ('parse_error', 'no_call')
    """
    if hit_limit:
        return "truncated_by_length"
    return "parse_error" if _TAG_FRAGMENT_RE.search(text) else "no_call"
