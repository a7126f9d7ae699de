"""One generated BFCL multi-turn task: random states, a sampled chain of requests valid on them, the user turns
written from templates, the gold calls executed by bfcl-eval's executor, the verdict of its multi-turn checker.
Runs in `.venv-bfcl` (it drives the simulators, through `agentic_verl.bfcl_env`: `simulators` for instances on
private copies of bfcl-eval's records and its executor, `checker` for the verdict, `data` for the function docs).

A task is built from its own random source (`seed`, `index`, `attempt`), so the same arguments give the same task.
Kinds, as BFCL's categories:

- `base`: 2-5 user turns, 1-3 requests each;
- `long_context`: the same on bigger states, and the entry's id marks it long-context, so bfcl-eval's simulators pad
  the state further (more files, long file contents, extra cards, bookings, watchlist entries...);
- `miss_func`: a function first needed at turn k is withheld: turn k's request cannot be done (its gold is no
  call; the assistant says so), turn k+1 adds the function (`missed_function`, an empty user turn) and its gold is
  turn k's calls;
- `miss_param`: turn k's text leaves out a required argument of one request: its gold is no call (the assistant
  asks for it), turn k+1 gives it and its gold is turn k's calls.

Turn texts compose each request's words ("create a file named 'a.txt'") with openers and connectives. The gold
assistant messages (for SFT) are a short reasoning in `<think>` then the calls of a step, and a plain sentence that
ends each turn; a step's calls that need an earlier output of the same turn wait for the next step.
"""

from __future__ import annotations

import copy
import random
from dataclasses import dataclass, field
from typing import Any

from agentic_verl.bfcl_env.checker import check_call_strings
from agentic_verl.bfcl_env.data import function_docs
from agentic_verl.bfcl_env.protocol import format_output
from agentic_verl.bfcl_env.simulators import execute_steps, load_classes, method_owners, new_instances, private_records
from agentic_verl.data.bfcl_multi_turn import actions_files, actions_finance, actions_social, actions_vehicle
from agentic_verl.data.bfcl_multi_turn.core import CLASSES, KINDS, Action, Context, Missing, join_words
from agentic_verl.data.bfcl_multi_turn.states import STATELESS, initial_state

SAMPLERS = {
    "GorillaFileSystem": actions_files.SAMPLERS,
    "MessageAPI": actions_social.MESSAGE_SAMPLERS,
    "TwitterAPI": actions_social.TWITTER_SAMPLERS,
    "TicketAPI": actions_social.TICKET_SAMPLERS,
    "TradingBot": actions_finance.TRADING_SAMPLERS,
    "TravelAPI": actions_finance.TRAVEL_SAMPLERS,
    "VehicleControlAPI": actions_vehicle.VEHICLE_SAMPLERS,
    "MathAPI": actions_vehicle.MATH_SAMPLERS,
}
assert tuple(sorted(SAMPLERS)) == CLASSES, "core.CLASSES lists the classes that have samplers"
_OPENERS = [("", "."), ("Please ", "."), ("Could you ", "?"), ("I need you to ", "."), ("Now ", "."),
            ("Next, ", "."), ("I'd like you to ", "."), ("Go ahead and ", ".")]  # fmt: skip
_CONNECTIVES = [", then ", " and then ", ", and after that ", ". After that, "]


class Rejected(Exception):
    """This attempt gave no usable task (the reason is counted; the caller tries the next attempt)."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


@dataclass
class Turn:
    text: str | None  # None: a turn whose message is the added functions (miss_func)
    actions: list[Action] = field(default_factory=list)  # executed at this turn (the gold)
    outputs: list[list[str]] = field(default_factory=list)  # per action, each call's output as BFCL shows it
    answer: str = "done"  # "done" | "ask" | "cannot": how the assistant ends the turn
    missing: Missing | None = None  # "ask": what it asks for
    unable: Action | None = None  # "cannot": the request that needs the withheld function


def entry_id(seed: int, index: int, kind: str) -> str:
    """`gen{seed}_multi_turn_{kind}_{index}`: BFCL reads the category (and so long context) from the id."""
    return f"gen{seed}_multi_turn_{kind}_{index}"


def _weighted(rng: random.Random, pairs):
    weights, items = zip(*pairs, strict=True)
    return rng.choices(items, weights=weights)[0]


def is_failure(result: Any) -> bool:
    """A result that says the call did not do what it was asked (the simulators answer errors in several forms)."""
    if isinstance(result, dict):
        flags = ("booking_status", "insurance_status", "cancel_status", "authentication_status", "success",
                 "verification_status")
        return "error" in result or any(result.get(flag) is False for flag in flags)
    if isinstance(result, list) and result:
        first = result[0]
        return (isinstance(first, dict) and "error" in first) or (isinstance(first, str) and first.startswith("Error"))
    return False


def sample_action(ctx: Context, classes: list[str], owners: dict[str, str], tries: int = 40):
    """(action, raw results) of one request valid on the live state, executed on it; None if none was found."""
    for _ in range(tries):
        sampler = _weighted(ctx.rng, SAMPLERS[ctx.rng.choice(classes)])
        action = sampler(ctx)
        if action is None:
            continue
        trial = copy.deepcopy(ctx.instances)
        try:
            results = [getattr(trial[owners[call.name]], call.name)(**copy.deepcopy(call.args))
                       for call in action.calls]
        except Exception:  # noqa: BLE001 - a simulator that raises on these arguments: not a valid request
            continue
        if any(is_failure(result) for result in results):
            continue
        ctx.instances = trial
        if action.remember is not None:
            action.remember(ctx, results)
        return action, results
    return None


def _choose_classes(rng: random.Random, pool: list[str]) -> list[str]:
    """One class (40%) or two, from `pool`; a stateless class (MathAPI) only beside a stateful one, unless the pool
    has nothing else."""
    stateful = [name for name in pool if name not in STATELESS] or list(pool)
    if len(pool) == 1 or rng.random() < 0.4:
        return [rng.choice(stateful)]
    first = rng.choice(stateful)
    return [first, rng.choice([name for name in pool if name != first])]


def compose(rng: random.Random, says: list[str]) -> str:
    """One user turn from its requests' words, in order."""
    body = says[0]
    for say in says[1:]:
        body += rng.choice(_CONNECTIVES) + say
    opener, end = rng.choice(_OPENERS)
    if opener.lower().startswith("go ahead") and body.startswith("go "):
        opener, end = "", "."
    text = opener + body
    return text[0].upper() + text[1:] + end


def _sample_turns(ctx: Context, classes: list[str], n_turns: int) -> list[Turn]:
    owners = method_owners(classes)
    turns = []
    for _ in range(n_turns):
        turn = Turn(text=None)
        for _ in range(ctx.rng.choice([1, 1, 2, 2, 3])):
            found = sample_action(ctx, classes, owners)
            if found is not None:
                turn.actions.append(found[0])
                # formatted now: a result can be a live attribute of the state, which later requests change
                turn.outputs.append([format_output(result) for result in found[1]])
        if not turn.actions:
            raise Rejected("no_valid_request")
        turn.text = compose(ctx.rng, [action.say for action in turn.actions])
        turns.append(turn)
    return turns


def _withhold_function(rng: random.Random, turns: list[Turn]) -> tuple[list[Turn], str]:
    """miss_func: a function first used at turn k is withheld until the turn inserted after k."""
    seen, candidates = set(), []
    for k, turn in enumerate(turns):
        names = [call.name for action in turn.actions for call in action.calls]
        candidates += [(k, name) for name in dict.fromkeys(names) if name not in seen]
        seen.update(names)
    if not candidates:
        raise Rejected("no_function_to_withhold")
    k, name = rng.choice(candidates)
    unable = next(action for action in turns[k].actions if any(call.name == name for call in action.calls))
    asked = Turn(turns[k].text, answer="cannot", unable=unable)
    added = Turn(None, turns[k].actions, turns[k].outputs)
    return [*turns[:k], asked, added, *turns[k + 1:]], name


def _withhold_argument(rng: random.Random, turns: list[Turn]) -> list[Turn]:
    """miss_param: one request of turn k is worded without a required argument; the inserted turn gives it."""
    candidates = [(k, i) for k, turn in enumerate(turns) for i, action in enumerate(turn.actions) if action.missing]
    if not candidates:
        raise Rejected("no_argument_to_withhold")
    k, i = rng.choice(candidates)
    says = [action.missing.say if j == i else action.say for j, action in enumerate(turns[k].actions)]
    missing = turns[k].actions[i].missing
    asked = Turn(compose(rng, says), answer="ask", missing=missing)
    given = Turn(missing.supply, turns[k].actions, turns[k].outputs)
    return [*turns[:k], asked, given, *turns[k + 1:]]


def _steps(turn: Turn) -> list[list[tuple[Action, int]]]:
    """The turn's calls grouped into steps: a call that needs an earlier output of the turn starts a new step."""
    steps: list[list[tuple[Action, int]]] = []
    for action in turn.actions:
        for i, call in enumerate(action.calls):
            if not steps or call.new_step:
                steps.append([])
            steps[-1].append((action, i))
    return steps


def _step_text(step: list[tuple[Action, int]]) -> str:
    """The assistant message of one step: why (per request it advances), then its calls."""
    reasons, seen = [], []
    for action, _ in step:
        if any(action is other for other in seen):
            continue
        seen.append(action)
        indices = [j for other, j in step if other is action]
        names = join_words(list(dict.fromkeys(action.calls[j].name for j in indices)))
        first = indices[0] == 0
        reasons.append(f"The user asks: {action.say}. That takes {names}." if first
                       else f"With that result I can go on with {names}.")
    calls = ", ".join(action.calls[i].text for action, i in step)
    return f"<think>{' '.join(reasons)}</think>\n\n[{calls}]"


def _answer_text(turn: Turn) -> str:
    if turn.answer == "ask":
        return f"<think>The request leaves out something I need before I can act.</think>\n\n{turn.missing.ask}"
    if turn.answer == "cannot":
        say = turn.unable.say
        return (f"<think>The user asks: {say}. None of the functions available to me does that.</think>\n\n"
                f"None of the functions I have can do this part of your request: {say}. I have not started on "
                "the request.")
    done = "; ".join(action.say for action in turn.actions)
    return f"<think>Everything asked in this turn is done.</think>\n\nDone. The request was: {done}."


def build_task(seed: int, index: int, kind: str, attempt: int = 0, classes: list[str] | None = None) -> dict:
    """{"entry", "trajectory"} of one task (see the module docstring) on `classes` (default: all); Rejected when
    this attempt gives none."""
    if kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r}; known: {', '.join(KINDS)}")
    pool = sorted(classes or SAMPLERS)
    if not pool or set(pool) - set(SAMPLERS):
        raise ValueError(f"classes must be among {', '.join(sorted(SAMPLERS))}; got {classes}")
    rng = random.Random(f"bfcl-multi-turn/{seed}/{index}/{attempt}")
    classes = _choose_classes(rng, pool)
    # what the live run writes into bfcl-eval's module data (the long-context weather) stays with this task
    with private_records(classes):
        return _build(rng, seed, index, kind, classes)


def _build(rng: random.Random, seed: int, index: int, kind: str, classes: list[str]) -> dict:
    long_context = kind == "long_context"
    initial_config = {name: initial_state(name, rng, big=long_context) for name in classes if name not in STATELESS}
    ctx = Context(rng, new_instances(load_classes(), initial_config, classes, long_context), long_context)
    if "TravelAPI" in initial_config:
        ctx.facts["travel_cards"] = sorted(initial_config["TravelAPI"]["credit_card_list"])
    turns = _sample_turns(ctx, classes, rng.randint(2, 4) if kind.startswith("miss") else rng.randint(2, 5))
    missed = {}
    if kind == "miss_func":
        turns, name = _withhold_function(rng, turns)
        missed = {str(next(k for k, turn in enumerate(turns) if turn.text is None)): [name]}
    elif kind == "miss_param":
        turns = _withhold_argument(rng, turns)

    task_id = entry_id(seed, index, kind)
    owners = method_owners(classes)
    calls = [call for turn in turns for action in turn.actions for call in action.calls]
    entry = {"id": task_id,
             "question": [[{"role": "user", "content": turn.text}] if turn.text is not None else [] for turn in turns],
             "initial_config": initial_config, "involved_classes": classes,
             "path": list(dict.fromkeys(f"{owners[call.name]}.{call.name}" for call in calls)),
             "function": function_docs(classes),
             "ground_truth": [[call.text for action in turn.actions for call in action.calls] for turn in turns],
             "long_context": long_context}
    if missed:
        entry["missed_function"] = missed
    step_calls = [[[action.calls[i] for action, i in step] for step in _steps(turn)] for turn in turns]
    steps = [[[call.text for call in step] for step in turn] for turn in step_calls]
    outputs = execute_steps(entry, steps, long_context)
    live = [[output for outputs_of_action in turn.outputs for output in outputs_of_action] for turn in turns]
    if [[output for step in turn for output in step] for turn in outputs] != live:
        raise Rejected("executor_disagrees_with_live_run")  # a simulator whose outputs depend on more than the calls
    if any(o.startswith("Error during execution") for turn in outputs for step in turn for o in step):
        raise Rejected("gold_call_raises")
    verdict = check_call_strings(entry, steps)
    if not verdict["valid"]:
        raise Rejected(f"checker_rejects_gold:{verdict['error_type']}")
    assistant = [[_step_text(step) for step in _steps(turn)] + [_answer_text(turn)] for turn in turns]
    if any("(" in turn[-1] for turn in assistant):  # a turn-ending answer must not read as an attempted call
        raise Rejected("answer_looks_like_a_call")
    trajectory = {"id": task_id, "kind": kind, "steps": steps, "outputs": outputs, "assistant": assistant,
                  "calls": [[[{"name": c.name, "arguments": c.args} for c in step] for step in turn]
                            for turn in step_calls]}
    return {"entry": entry, "trajectory": trajectory}
