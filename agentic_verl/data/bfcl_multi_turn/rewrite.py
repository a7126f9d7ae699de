"""Optional: a judge model rewrites the templated user turns into freer wording (`--endpoint`).

Each non-empty user turn is sent once (temperature 0; `JudgeClient` caches replies on disk, so a rerun sends
nothing) with `PROMPT`. A rewrite is kept only when it still carries every value the request depends on, written
as in the template (`required_literals`: quoted values, numbers, upper-case codes and capitalised names after a
sentence's first word) and adds no quoted value of its own; otherwise the template's text stays and the turn is
counted under `rewrites_rejected`. The gold calls never change: the values they use are exactly the ones kept.

>>> required_literals("Please send Celia the message 'Vendor audit approved' and buy 3 shares of MSFT at $12.5.")
["'Vendor audit approved'", '3', '12.5', 'Celia', 'MSFT']
>>> accept("Delete the file 'a.txt'.", "Could you remove 'a.txt' for me?")
True
>>> accept("Delete the file 'a.txt'.", "Could you remove the file for me?")
False
"""

from __future__ import annotations

import asyncio
import re

PROMPT = ("Rewrite the following request that a user sends to an assistant, so that it reads as a person would "
          "write it. Keep every quoted value, name, number, ID and code exactly as written, keep the order of the "
          "steps, and add nothing new. Reply with the rewritten request only.\n\nRequest: {text}")
_QUOTED = re.compile(r"'[^']*'")
_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?")
_WORD = re.compile(r"[A-Za-z][\w.]*")


def required_literals(text: str) -> list[str]:
    """The values a rewrite of `text` must keep, written as they are."""
    quoted = _QUOTED.findall(text)
    rest = _QUOTED.sub(" ", text)
    numbers = [n.rstrip(".") for n in _NUMBER.findall(rest)]
    names = []
    for sentence in re.split(r"(?<=[.?!])\s+", rest):
        words = _WORD.findall(sentence)[1:]  # a sentence's first word is capitalised anyway
        names += [w.rstrip(".") for w in words if w[0].isupper() and w != "I" and w.rstrip(".") not in names]
    return quoted + numbers + names


def accept(template: str, rewrite: str) -> bool:
    rewrite = rewrite.strip()
    if not rewrite or "\n" in rewrite or len(rewrite) > 3 * len(template) + 40:
        return False
    if set(_QUOTED.findall(rewrite)) - set(_QUOTED.findall(template)):
        return False
    return all(literal in rewrite for literal in required_literals(template))


async def rewrite_entries(entries: list[dict], judge, max_tokens: int = 512) -> dict:
    """Rewrite the user turns of `entries` in place; returns {"rewrites_kept", "rewrites_rejected"}."""
    slots = [(entry, turn, message) for entry in entries for turn in entry["question"] for message in turn]

    async def one(message: dict) -> bool:
        reply = await judge.chat([{"role": "user", "content": PROMPT.format(text=message["content"])}],
                                 max_tokens=max_tokens, temperature=0.0)
        if accept(message["content"], reply):
            message["content"] = reply.strip()
            return True
        return False

    kept = await asyncio.gather(*(one(message) for _, _, message in slots))
    return {"rewrites_kept": sum(kept), "rewrites_rejected": len(kept) - sum(kept)}
