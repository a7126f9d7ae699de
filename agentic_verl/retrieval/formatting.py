"""How retrieved passages are shown to the model (the Search-R1 tool observation format).

>>> from agentic_verl.retrieval.protocol import Passage
>>> print(format_passages([Passage("1", "Hamlet\\nA tragedy by Shakespeare."), Passage("2", "no title line")]))
Doc 1 (Title: Hamlet) A tragedy by Shakespeare.
Doc 2 (Title: ) no title line
"""

from __future__ import annotations

from collections.abc import Iterable

from agentic_verl.retrieval.protocol import Passage


def format_passages(passages: Iterable[Passage]) -> str:
    """`Doc i (Title: t) text` lines, numbered from 1, one per passage."""
    return "\n".join(f"Doc {i} (Title: {p.title}) {p.text}" for i, p in enumerate(passages, start=1))
