"""Question-answering rewards: SQuAD/Search-R1 answer normalisation, EM, token F1, cover-EM.

The policy's answer is the last ``<answer>...</answer>`` of its own text; ``<information>`` blocks
(retrieved documents inserted by the environment) are removed first, so an answer tag quoted inside a
retrieved document never counts.

>>> normalize_answer("The  Eiffel-Tower!")
'eiffeltower'
>>> extract_answer("<think>t</think><answer> Beijing </answer>")
'Beijing'
>>> exact_match("the Beijing", {"target": ["beijing", "Peking"]})
1.0
>>> round(f1("Barack Obama", ["Obama"]), 3)
0.667
>>> qa_em("<answer>Paris</answer>", ["Paris"])
{'score': 1.0, 'error_type': None}
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Iterable, Mapping

from agentic_verl.rewards.registry import REWARDS

__all__ = [
    "NORMALIZERS",
    "cover_em",
    "exact_match",
    "extract_answer",
    "f1",
    "gold_answers",
    "normalize_answer",
    "qa_cover_em",
    "qa_em",
    "qa_f1",
    "strip_information",
]

_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")
# RAG-R1's eval normaliser first turns underscores and (ASCII and typographic) quotes into spaces.
_EVAL_SPACE_CHARS = str.maketrans({c: " " for c in "_'\"`\u2018\u2019\u201c\u201d"})
NORMALIZERS = ("squad", "rag_r1_eval")
"""`squad`: the SQuAD / Search-R1 training normaliser; `rag_r1_eval`: also maps `_` and quotes to spaces."""

# Keys under which a dict ground truth carries its answers (verl's Search-R1 parquet uses "target").
_GOLD_KEYS = ("target", "golden_answers", "answers", "answer", "ground_truth")
_MAX_GOLDS = 10_000


def normalize_answer(s: str, normalizer: str = "squad") -> str:
    """Lowercase, drop ASCII punctuation, drop the articles a/an/the, collapse whitespace.

    ``normalizer="rag_r1_eval"`` first turns underscores and quotes into spaces, so ``new_york`` and
    ``new york`` agree (RAG-R1's evaluation normaliser).

    >>> normalize_answer("An Apple, a day.")
    'apple day'
    >>> normalize_answer("New_York's"), normalize_answer("New_York's", normalizer="rag_r1_eval")
    ('newyorks', 'new york s')
    """
    if normalizer not in NORMALIZERS:
        raise ValueError(f"unknown normalizer {normalizer!r}; known: {', '.join(NORMALIZERS)}")
    text = str(s)
    if normalizer == "rag_r1_eval":
        text = text.translate(_EVAL_SPACE_CHARS)
    text = text.lower()
    text = "".join(ch for ch in text if ch not in _PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def gold_answers(ground_truth) -> list[str]:
    """The gold answers as a list of strings, whatever container they arrive in.

    Accepts a string, a list/tuple/set, a numpy array (verl parquet ground truths), a dict with one of
    the keys target/golden_answers/answers/answer/ground_truth, nested mixtures of those, and numbers
    (``1984`` -> ``"1984"``). ``None`` and anything else unusable give ``[]``.

    >>> import numpy as np
    >>> gold_answers({"target": np.array(["a", "b"])})
    ['a', 'b']
    """
    out: list[str] = []
    _collect_golds(ground_truth, out, depth=0)
    return out


def _collect_golds(value, out: list[str], depth: int) -> None:
    if value is None or depth > 8 or len(out) >= _MAX_GOLDS:
        return
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, bytes):
        out.append(value.decode("utf-8", errors="replace"))
    elif isinstance(value, bool):
        out.append(str(value))
    elif isinstance(value, (int, float)):
        out.append(str(value))
    elif isinstance(value, Mapping):
        for key in _GOLD_KEYS:
            if key in value:
                _collect_golds(value[key], out, depth + 1)
                return
    elif hasattr(value, "tolist") and not isinstance(value, (str, bytes)):  # numpy array or scalar
        try:
            listed = value.tolist()
        except Exception:
            return
        if listed is value:
            return
        _collect_golds(listed, out, depth + 1)
    elif isinstance(value, Iterable):
        try:
            for item in value:
                if len(out) >= _MAX_GOLDS:
                    break
                _collect_golds(item, out, depth + 1)
        except Exception:
            return


def exact_match(prediction: str | None, golds, normalizer: str = "squad") -> float:
    """1.0 if the normalised prediction equals any normalised gold answer, else 0.0.

    >>> exact_match("Paris.", ["paris", "Paris, France"])
    1.0
    """
    if prediction is None:
        return 0.0
    pred = normalize_answer(prediction, normalizer)
    return 1.0 if any(normalize_answer(g, normalizer) == pred for g in gold_answers(golds)) else 0.0


def cover_em(prediction: str | None, golds, normalizer: str = "squad") -> float:
    """1.0 if any normalised gold answer is a substring of the normalised prediction (Search-R1 "subem").

    Gold answers that normalise to the empty string are skipped (they would cover every prediction).

    >>> cover_em("it is Paris, France", "paris")
    1.0
    """
    if prediction is None:
        return 0.0
    pred = normalize_answer(prediction, normalizer)
    for gold in gold_answers(golds):
        normalized = normalize_answer(gold, normalizer)
        if normalized and normalized in pred:  # an empty gold ("the", "") would cover everything
            return 1.0
    return 0.0


def f1(prediction: str | None, golds, normalizer: str = "squad") -> float:
    """Token-level F1 between the normalised prediction and each gold answer; the maximum over golds.

    When a side normalises to no tokens, the score is 1.0 if both do and 0.0 otherwise (SQuAD v2).

    >>> f1("Paris France", ["Paris"])
    0.6666666666666666
    """
    if prediction is None:
        return 0.0
    pred_tokens = normalize_answer(prediction, normalizer).split()
    pred_counts = Counter(pred_tokens)
    best = 0.0
    for gold in gold_answers(golds):
        gold_tokens = normalize_answer(gold, normalizer).split()
        if not gold_tokens or not pred_tokens:
            score = float(gold_tokens == pred_tokens)
        else:
            same = sum((pred_counts & Counter(gold_tokens)).values())
            if same == 0:
                score = 0.0
            else:
                precision, recall = same / len(pred_tokens), same / len(gold_tokens)
                score = 2 * precision * recall / (precision + recall)
        best = max(best, score)
        if best == 1.0:
            break
    return best


def strip_information(text: str) -> str:
    """Remove ``<information>...</information>`` blocks, and everything after an unclosed ``<information>``.

    >>> strip_information("a<information>doc</information>b<information>cut")
    'ab'
    """
    parts: list[str] = []
    pos = 0
    while True:
        start = text.find("<information>", pos)
        if start < 0:
            parts.append(text[pos:])
            break
        parts.append(text[pos:start])
        end = text.find("</information>", start)
        if end < 0:
            break
        pos = end + len("</information>")
    return "".join(parts)


def extract_answer(text: str) -> str | None:
    """The stripped content of the policy's last complete ``<answer>...</answer>``, or None.

    Retrieved documents are removed first (see :func:`strip_information`). "Last" means the last
    ``</answer>`` and the nearest ``<answer>`` before it. Tags are matched exactly (lowercase).

    >>> extract_answer("<answer>a</answer><information><answer>b</answer></information>")
    'a'
    >>> extract_answer("<answer>unclosed") is None
    True
    """
    if not isinstance(text, str):
        return None
    policy_text = strip_information(text)
    end = policy_text.rfind("</answer>")
    if end < 0:
        return None
    start = policy_text.rfind("<answer>", 0, end)
    if start < 0:
        return None
    return policy_text[start + len("<answer>") : end].strip()


def _qa_reward(metric, solution_str, ground_truth, normalizer: str) -> dict:
    if normalizer not in NORMALIZERS:  # a config error, raised before looking at the model output
        raise ValueError(f"unknown normalizer {normalizer!r}; known: {', '.join(NORMALIZERS)}")
    golds = gold_answers(ground_truth)
    if not golds:
        return {"score": 0.0, "error_type": "qa:no_gold_answer"}
    answer = extract_answer(solution_str)
    if answer is None:
        return {"score": 0.0, "error_type": "qa:missing_answer"}
    score = float(metric(answer, golds, normalizer))
    if score >= 1.0:
        error_type = None
    elif score > 0.0:
        error_type = "qa:partial_match"
    else:
        error_type = "qa:wrong_answer"
    return {"score": score, "error_type": error_type}


@REWARDS.register("qa_em")
def qa_em(solution_str: str, ground_truth, extra_info: dict | None = None, *, normalizer: str = "squad", **kwargs):
    """Exact match of the last ``<answer>`` against any gold answer: score in {0, 1}.

    Error types: ``qa:missing_answer``, ``qa:wrong_answer``, ``qa:no_gold_answer``.

    >>> qa_em("<answer>the Beijing</answer>", {"target": ["Beijing"]})
    {'score': 1.0, 'error_type': None}
    >>> qa_em("Beijing", ["Beijing"])
    {'score': 0.0, 'error_type': 'qa:missing_answer'}
    """
    return _qa_reward(exact_match, solution_str, ground_truth, normalizer)


@REWARDS.register("qa_f1")
def qa_f1(solution_str: str, ground_truth, extra_info: dict | None = None, *, normalizer: str = "squad", **kwargs):
    """Token F1 of the last ``<answer>`` against the best gold answer: score in [0, 1].

    >>> qa_f1("<answer>Paris France</answer>", ["Paris"])["error_type"]
    'qa:partial_match'
    """
    return _qa_reward(f1, solution_str, ground_truth, normalizer)


@REWARDS.register("qa_cover_em")
def qa_cover_em(
    solution_str: str, ground_truth, extra_info: dict | None = None, *, normalizer: str = "squad", **kwargs
):
    """1 if a gold answer is contained in the last ``<answer>`` (after normalisation): score in {0, 1}.

    >>> qa_cover_em("<answer>Paris, France</answer>", ["France"])
    {'score': 1.0, 'error_type': None}
    """
    return _qa_reward(cover_em, solution_str, ground_truth, normalizer)
