"""Gold test: for every BFCL AST question in bfcl_eval's data, the output rendered from its possible answers
scores the maximum (1.0) — except questions no output can pass under BFCL's rules, which are detected from the
data (not listed by id) and must score 0."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "scripts" / "agreement"))

from _bfcl_cases import gold_output, load_questions  # noqa: E402

from agentic_verl.rewards.bfcl import AST_CATEGORIES, ast_match, bfcl_ast  # noqa: E402

QUESTIONS = load_questions(AST_CATEGORIES)


def unreachable(question: dict) -> str | None:
    """Why no output can pass this question under BFCL's semantics, or None."""
    schemas = {f["name"]: f["parameters"] for f in question["functions"]}
    java = question["category"] == "simple_java"
    for answer in question["possible_answer"]:
        (name, params), = answer.items()
        schema = schemas[name]
        for param in schema.get("required", []):
            if param not in params:
                return f"required {param!r} is not in the possible answer (unexpected_param if given)"
            if not [option for option in params[param] if option != ""]:
                return f"required {param!r} has no accepted value"
        for param, options in params.items():
            if param not in schema["properties"] and "" not in options:
                return f"{param!r} must be given but is not in the schema"
            declared = schema["properties"].get(param, {})
            if java and declared.get("type") in ("Array", "ArrayList") and declared["items"]["type"] == "any":
                if any(isinstance(o, list) and any(not isinstance(i, str) for i in o) for o in options):
                    return f"Java {param!r}: items of type any stay strings, the answer has non-strings"
            if java and declared.get("type") == "HashMap":
                if any(isinstance(o, dict) and any(not isinstance(v, list) for v in o.values()) for o in options):
                    return f"Java {param!r}: HashMap answer values are not option lists"
    return None


def test_every_category_is_covered():
    counts = {category: sum(q["category"] == category for q in QUESTIONS) for category in AST_CATEGORIES}
    assert all(count > 0 for count in counts.values()), counts
    assert sum(counts.values()) > 2400


@pytest.mark.parametrize("category", AST_CATEGORIES)
def test_gold_output_scores_the_maximum(category):
    failures, impossible = [], []
    for question in (q for q in QUESTIONS if q["category"] == category):
        extra = {"functions": question["functions"], "category": category}
        score = bfcl_ast(gold_output(question), question["possible_answer"], extra)
        reason = unreachable(question)
        if reason:
            impossible.append(question["id"])
            # Such a question cannot be passed, so the gold rendering must not pass it either.
            assert score["score"] == 0.0, (question["id"], reason)
        elif score["score"] != 1.0:
            failures.append((question["id"], score, gold_output(question)[:200]))
    assert not failures, failures[:5]
    assert len(impossible) <= 3, impossible  # a handful of data errors, not a loophole


def test_gold_with_every_optional_parameter_also_passes():
    # Giving each optional parameter its first accepted value is as good as leaving it out.
    for question in QUESTIONS[::7]:
        if unreachable(question):
            continue
        output = gold_output(question, omit_optional=False)
        verdict = ast_match(output, question["functions"], question["possible_answer"], question["category"])
        assert verdict["valid"], (question["id"], verdict, output[:200])
