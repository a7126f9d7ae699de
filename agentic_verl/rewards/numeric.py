"""Numeric answer exact match: the last ``<answer>...</answer>`` read as a number, equal to the gold number.

The ReTool-style arithmetic task (agentic_verl/demo/retool_task.py, recipes/retool/) scores this way: the policy
computes with a code tool and writes the result as ``<answer>N</answer>``. The answer is found with
`agentic_verl.rewards.qa.extract_answer` (the QA rewards' rule: the last complete tag pair) and compared as a number,
not with the QA text normaliser: SQuAD normalisation drops the minus sign (``-5`` would equal ``5``) and keeps
``40 626`` apart from ``40626``. Thousands separators (``,``, ``_``, spaces) are dropped, and ``12.0`` equals ``12``.
A number is at most `MAX_DIGITS` digits long, so a hostile answer cannot make the comparison slow.

>>> numeric_em("I ran it. <answer>40,626</answer>", "40626")
{'score': 1.0, 'error_type': None}
>>> numeric_em("<answer>forty</answer>", "40")
{'score': 0.0, 'error_type': 'numeric:not_a_number'}
>>> numeric_em("40626", 40626)
{'score': 0.0, 'error_type': 'numeric:missing_answer'}
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

from agentic_verl.rewards.qa import extract_answer, gold_answers
from agentic_verl.rewards.registry import REWARDS

__all__ = ["ERROR_TYPES", "MAX_DIGITS", "numeric_em", "parse_number"]

MAX_DIGITS = 64
_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)")
_SEPARATORS = str.maketrans("", "", ",_ \u00a0\u202f")
ERROR_TYPES = ("numeric:missing_answer", "numeric:not_a_number", "numeric:wrong_answer", "numeric:no_gold_answer")


def parse_number(text) -> Decimal | None:
    """The number `text` spells (separators dropped, at most MAX_DIGITS digits), or None.

    >>> parse_number(" 1,234 "), parse_number("-7.50"), parse_number("1e3"), parse_number("12 apples")
    (Decimal('1234'), Decimal('-7.5'), None, None)
    """
    if not isinstance(text, str):
        return None
    compact = text.strip().translate(_SEPARATORS)
    if len(compact) > MAX_DIGITS + 2 or not _NUMBER.fullmatch(compact):
        return None
    try:
        return Decimal(compact).normalize()
    except InvalidOperation:
        return None


@REWARDS.register("numeric_em")
def numeric_em(solution_str: str, ground_truth, extra_info: dict | None = None, **kwargs) -> dict:
    """1.0 when the last ``<answer>`` is a number equal to a gold answer's number, else 0.0.

    Error types: ``numeric:missing_answer`` (no complete ``<answer>`` pair), ``numeric:not_a_number``,
    ``numeric:wrong_answer``, ``numeric:no_gold_answer`` (the ground truth holds no number).

    >>> numeric_em("<answer>-5</answer>", ["5"])
    {'score': 0.0, 'error_type': 'numeric:wrong_answer'}
    """
    golds = [g for g in (parse_number(str(x)) for x in gold_answers(ground_truth)) if g is not None]
    if not golds:
        return {"score": 0.0, "error_type": "numeric:no_gold_answer"}
    answer = extract_answer(solution_str)
    if answer is None:
        return {"score": 0.0, "error_type": "numeric:missing_answer"}
    value = parse_number(answer)
    if value is None:
        return {"score": 0.0, "error_type": "numeric:not_a_number"}
    if any(value == gold for gold in golds):
        return {"score": 1.0, "error_type": None}
    return {"score": 0.0, "error_type": "numeric:wrong_answer"}
