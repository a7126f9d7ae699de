"""The Search-R1 `/retrieve` wire protocol, shared by the server, the client and the tools.

Request:  {"queries": ["q1", ...], "topk": 3, "return_scores": true}
Response: {"result": [[{"document": {"id": "7", "contents": "Title\\ntext"}, "score": 12.3}, ...], ...]}
(one inner list per query, best first; without return_scores each entry is just the document).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Passage:
    """One retrieved passage. `contents` is "Title\\ntext" (the FlashRAG / Search-R1 corpus format)."""

    id: str
    contents: str
    score: float = 0.0

    @property
    def title(self) -> str:
        return self.contents.split("\n", 1)[0] if "\n" in self.contents else ""

    @property
    def text(self) -> str:
        return self.contents.split("\n", 1)[1] if "\n" in self.contents else self.contents


def is_valid_unicode(text: str) -> bool:
    """False for a string with a lone surrogate (what json.loads makes of a "\\ud800" escape in model output): no
    UTF-8 body can carry it, so the server could not even parse the request."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
