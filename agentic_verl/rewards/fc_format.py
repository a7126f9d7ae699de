"""Format reward for FunReason's function-calling target: `<think>reasoning</think>\\n\\n[func(a=1), ...]`.

A response is **valid** when all of these hold (the first violation is the verdict):

1. It is a string (``fc_format:not_text``) that opens, after optional whitespace, with ``<think>``
   (``fc_format:missing_think``).
2. There is exactly one ``<think>`` and one ``</think>`` after it (``fc_format:unclosed_think``,
   ``fc_format:multiple_think``), with non-blank reasoning between them (``fc_format:empty_think``).
3. ``</think>`` is followed by exactly ``\\n\\n`` and then the output (``fc_format:separator``; SRML splits the
   target there); ``strict_separator=False`` accepts any whitespace. Nothing after it: ``fc_format:missing_output``.
4. The output is a call list that BFCL's decoder reads (``agentic_verl.rewards.bfcl.decode``; parsed, never
   executed): an attempted call that does not decode is ``fc_format:undecodable_call``; prose, or ``[]``, is
   ``fc_format:no_call`` when a call is required. ``require_call="auto"`` requires one unless
   ``extra_info["category"]`` is a relevance category where no call is right (``irrelevance``,
   ``live_irrelevance``); there a prose answer is well formed (whether a call was right is the AST reward's job).

Score: ``weight`` if valid, else 0.0. ``check_fc_format`` returns the verdict and the decoded calls; FCDR's
format check (``agentic_verl.data.fcdr``) uses it too.

A decoder that raises anything but its own failures (``DecodeError``, too deep, too big) has a bug: that is ours,
never the model's format failure. ``check_fc_format`` logs it with its traceback and answers
``fc_format:decoder_bug`` (``DECODER_BUG``); the reward lets it raise, so the reward wrappers count it as
``reward/fc_format/exceptions`` (agentic_verl.rewards.failures).

A `format: native` output (the `function_call` loop's record in extra_info says so) is checked by
``check_native_fc_format``: the same reasoning rules, then the calls verl's tool parser read in the loop.

>>> fc_format("<think>Add them.</think>\\n\\n[add(a=1, b=2)]")
{'score': 1.0, 'error_type': None, 'num_calls': 1.0}
>>> fc_format("[add(a=1, b=2)]")["error_type"]
'fc_format:missing_think'
>>> fc_format("<think>x</think> [add(a=1)]")["error_type"], fc_format("<think>x</think> [add(a=1)]",
...     strict_separator=False)["error_type"]
('fc_format:separator', None)
>>> fc_format("<think>none fits</think>\\n\\nI cannot help.", extra_info={"category": "irrelevance"})["score"]
1.0
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field

from agentic_verl.rewards.bfcl.decode import DecodeError, decode
from agentic_verl.rewards.bfcl.native_calls import NativeCalls, native_calls_of
from agentic_verl.rewards.registry import REWARDS

__all__ = ["DECODER_BUG", "FC_FORMAT_ERRORS", "NO_CALL_CATEGORIES", "FcFormatVerdict", "check_fc_format", "fc_format"]

logger = logging.getLogger(__name__)

FC_FORMAT_ERRORS = (
    "fc_format:not_text",
    "fc_format:missing_think",
    "fc_format:unclosed_think",
    "fc_format:multiple_think",
    "fc_format:empty_think",
    "fc_format:separator",
    "fc_format:missing_output",
    "fc_format:undecodable_call",
    "fc_format:no_call",
)
"""Every verdict on the model's text :func:`check_fc_format` can return."""
DECODER_BUG = "fc_format:decoder_bug"
"""The verdict when the decoder itself failed (a bug of ours, logged), not the model's text."""

NO_CALL_CATEGORIES = ("irrelevance", "live_irrelevance")  # BFCL categories where no call is the right answer
REQUIRE_CALL = ("auto", True, False)
_OPEN, _CLOSE = "<think>", "</think>"
_ATTEMPTED_CALL = re.compile(r"^\W*[\[{]|\(")  # a bracket first, or a parenthesis anywhere: meant as a call


@dataclass(frozen=True)
class FcFormatVerdict:
    error_type: str | None  # None when valid
    reasoning: str | None = None  # the text inside <think>, when it could be read
    output: str | None = None  # the text after the separator
    calls: list[dict] = field(default_factory=list)  # decoded calls ([] for a prose answer)


def check_fc_format(text, language: str = "python", *, require_call: bool = True,
                    strict_separator: bool = True, raise_decoder_bugs: bool = False) -> FcFormatVerdict:
    """The format verdict of one response (rules in the module docstring); never raises on `text`. A decoder bug is
    `DECODER_BUG` (logged), or raises with `raise_decoder_bugs`.

    >>> v = check_fc_format("<think>t</think>\\n\\n[f(x='a')]")
    >>> v.error_type, v.reasoning, v.calls
    (None, 't', [{'f': {'x': 'a'}}])
    >>> check_fc_format("<think>t</think>\\n\\n[f(x=']", require_call=False).error_type
    'fc_format:undecodable_call'
    """
    think = _read_think(text)
    if think.error_type is not None:
        return think
    reasoning, rest = think.reasoning, think.output
    output = rest.strip()
    if not output:
        return FcFormatVerdict("fc_format:missing_output", reasoning)
    if strict_separator and not (rest.startswith("\n\n") and not rest[2:3].isspace()):
        return FcFormatVerdict("fc_format:separator", reasoning, output)
    try:
        calls = decode(output, language)
    except (DecodeError, RecursionError, MemoryError):  # the text is not a call list (or too deep / big to be one)
        calls = None
    except Exception:
        if raise_decoder_bugs:
            raise
        logger.exception("fc_format: the BFCL decoder raised on a response (a bug of ours; verdict %s)", DECODER_BUG)
        return FcFormatVerdict(DECODER_BUG, reasoning, output)
    if calls is None:
        if _ATTEMPTED_CALL.search(output):
            return FcFormatVerdict("fc_format:undecodable_call", reasoning, output)
        calls = []
    if not calls and require_call:
        return FcFormatVerdict("fc_format:no_call", reasoning, output)
    return FcFormatVerdict(None, reasoning, output, calls)


def _read_think(text) -> FcFormatVerdict:
    """Rules 1-2: the verdict on the reasoning block; when valid, `output` holds everything after `</think>`."""
    if not isinstance(text, str):
        return FcFormatVerdict("fc_format:not_text")
    body = text.lstrip()
    if not body.startswith(_OPEN):
        return FcFormatVerdict("fc_format:missing_think")
    end = body.find(_CLOSE)
    if end < 0:
        return FcFormatVerdict("fc_format:unclosed_think")
    if body.count(_OPEN) != 1 or body.count(_CLOSE) != 1:
        return FcFormatVerdict("fc_format:multiple_think")
    reasoning = body[len(_OPEN):end].strip()
    if not reasoning:
        return FcFormatVerdict("fc_format:empty_think")
    return FcFormatVerdict(None, reasoning, body[end + len(_CLOSE):])


def check_native_fc_format(text, native: NativeCalls, *, require_call: bool = True) -> FcFormatVerdict:
    """The format verdict of a `format: native` response: rules 1-2 on its text, then the calls the function_call
    loop's tool parser read (`native`) stand for rules 3-4: a block the parser failed on is
    ``fc_format:undecodable_call``, no call where one is required ``fc_format:no_call`` (the chat template's own
    syntax follows `</think>`, so there is no separator rule).

    >>> check_native_fc_format("<think>t</think>\\n\\n<tool_call>...", NativeCalls(calls=[{"f": {}}])).error_type
    >>> check_native_fc_format("<think>t</think>", NativeCalls(failure="unparsed_call")).error_type
    'fc_format:undecodable_call'
    """
    think = _read_think(text)
    if think.error_type is not None:
        return think
    output = think.output.strip()
    if native.failure is not None:
        return FcFormatVerdict("fc_format:undecodable_call", think.reasoning, output)
    if not native.calls and require_call:
        return FcFormatVerdict("fc_format:no_call", think.reasoning, output)
    return FcFormatVerdict(None, think.reasoning, output, list(native.calls))


@REWARDS.register("fc_format")
def fc_format(solution_str, ground_truth=None, extra_info: dict | None = None, *, weight: float = 1.0,
              require_call="auto", strict_separator: bool = True, language: str | None = None, **kwargs) -> dict:
    """``weight`` if ``solution_str`` has FunReason's format, else 0.0; ``ground_truth`` is ignored.

    Options (YAML kwargs next to the name):
    - weight (float, default 1.0): the score of a well-formed response.
    - require_call ("auto" | true | false, default "auto"): whether the output must be a call list; "auto" asks
      for one unless extra_info's `category` is irrelevance / live_irrelevance.
    - strict_separator (bool, default true): exactly "\\n\\n" between `</think>` and the output.
    - language (str, default None): the call syntax (python | java | javascript) for rows whose extra_info has
      no `language`; else python.
    Also returns ``num_calls`` (decoded calls, as a float for logs). A decoder bug raises (counted by the reward
    wrappers as ``reward/fc_format/exceptions``), never a 0 that reads as the model's format failure.
    """
    if isinstance(weight, bool) or not isinstance(weight, (int, float)) or weight != weight:
        raise ValueError(f"fc_format weight must be a number, got {weight!r}")
    if require_call not in REQUIRE_CALL:
        raise ValueError(f"fc_format require_call must be one of {REQUIRE_CALL}, got {require_call!r}")
    info = extra_info if isinstance(extra_info, dict) else {}
    category, row_language = info.get("category"), info.get("language")  # anything a row holds (arrays too)
    if require_call == "auto":
        require_call = not (isinstance(category, str) and category in NO_CALL_CATEGORIES)
    row_language = row_language if isinstance(row_language, str) and row_language else None
    native = native_calls_of(info)
    if native is not None:  # the function_call loop read a native output (format: native) with verl's ToolParser
        verdict = check_native_fc_format(solution_str, native, require_call=bool(require_call))
        return {"score": float(weight) if verdict.error_type is None else 0.0, "error_type": verdict.error_type,
                "num_calls": float(len(verdict.calls))}
    verdict = check_fc_format(solution_str, row_language or language or "python",
                              require_call=bool(require_call), strict_separator=bool(strict_separator),
                              raise_decoder_bugs=True)
    return {"score": float(weight) if verdict.error_type is None else 0.0, "error_type": verdict.error_type,
            "num_calls": float(len(verdict.calls))}
