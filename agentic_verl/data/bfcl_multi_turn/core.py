"""The pieces a generated task is made of: calls, actions (the calls one request needs, with its words), and the
sampling context the per-class action samplers read. Standard library only (it runs in `.venv-bfcl`).

A call's text is BFCL's ground-truth form, `name(arg=literal, ...)`, written from Python literals with `repr` by the
environment server's `protocol.render_call` (every value checked to read back as the same literal), so bfcl-eval's
executor (which evaluates these strings) never sees anything but a call of a simulator method with literal
arguments.

>>> render_call("mv", {"source": "notes.txt", "destination": "archive"})
"mv(source='notes.txt', destination='archive')"
>>> render_call("lockDoors", {"unlock": False, "door": ["driver"]})
"lockDoors(unlock=False, door=['driver'])"
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agentic_verl.bfcl_env.data import MULTI_TURN_CATEGORIES
from agentic_verl.bfcl_env.protocol import SERVED_CLASSES, render_call

KINDS = MULTI_TURN_CATEGORIES  # a task of each of BFCL's four multi-turn categories
CLASSES = tuple(sorted(SERVED_CLASSES))  # bfcl-eval's multi-turn simulator classes, each with its request samplers


@dataclass
class Call:
    name: str
    args: dict[str, Any]
    new_step: bool = False  # its arguments come from an output earlier in the same turn: it waits for that output

    @property
    def text(self) -> str:
        return render_call(self.name, self.args)


@dataclass
class Missing:
    """How a request reads with one required argument left out (BFCL's miss_param): the request without it, the
    assistant's question for it, and the user's next turn that gives it."""

    say: str
    ask: str
    supply: str


@dataclass
class Action:
    """One request of a user turn: the words (`say`, an imperative phrase such as "create a file named 'a.txt'")
    and the calls that fulfil it, in order."""

    say: str
    calls: list[Call]
    missing: Missing | None = None
    remember: Callable[[Context, list[Any]], None] | None = None  # records what the calls made (ids, tokens...)


@dataclass
class Context:
    """What a sampler sees: the task's random source, the live simulator instances (after every accepted action),
    whether the task is long-context, and facts the conversation has established (ids the calls returned, which
    credentials the user has given)."""

    rng: random.Random
    instances: dict[str, Any]
    long_context: bool
    facts: dict[str, Any] = field(default_factory=dict)

    def fact_list(self, key: str) -> list:
        return self.facts.setdefault(key, [])


Sampler = Callable[[Context], "Action | None"]


def asks(say: str, name: str, when: Callable[[Context], Any] | None = None) -> Sampler:
    """A sampler for a request that takes one call without arguments (a status query): always valid, or only when
    `when(ctx)` is true (e.g. once the user is logged in)."""

    def sampler(ctx: Context) -> Action | None:
        return Action(say, [Call(name, {})]) if when is None or when(ctx) else None

    sampler.__name__ = name
    return sampler


def choose(ctx: Context, items: list, when: Callable[[Context], Any] | None = None):
    """One of `items` at random, or None (drawing nothing) when there is none or `when(ctx)` is false."""
    return ctx.rng.choice(items) if items and (when is None or when(ctx)) else None


def remember_id(key: str, field: str) -> Callable[[Context, list[Any]], None]:
    """An `Action.remember` that records `field` of the last call's result (the id a booking, order, post or ticket
    got) under `facts[key]`, for later requests to refer to."""

    def remember(ctx: Context, results: list[Any]) -> None:
        ctx.fact_list(key).append(results[-1][field])

    return remember


def quoted(value: Any) -> str:
    return f"'{value}'"


def join_words(items: list[str], last: str = "and") -> str:
    """'a', 'a and b', 'a, b and c'."""
    items = [str(item) for item in items]
    if len(items) <= 1:
        return "".join(items)
    return f"{', '.join(items[:-1])} {last} {items[-1]}"


def money(value: float) -> str:
    """A dollar amount as the user writes it: `$1250` or `$99.5`."""
    return f"${int(value)}" if float(value).is_integer() else f"${value}"
