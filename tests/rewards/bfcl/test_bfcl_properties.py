"""bfcl_ast / ast_match on any input: no exception, a well-formed verdict, score 0 or 1, bounded time.

Arbitrary unicode, call-shaped fragments in any order, pathological inputs (deep nesting, huge numbers,
unterminated literals, 100k-character outputs) and nonsense ground truths / function lists / categories.
"""

from __future__ import annotations

import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentic_verl.rewards.bfcl import AST_CATEGORIES, RELEVANCE_CATEGORIES, ast_match, bfcl_ast

FRAGMENTS = ["[", "]", "(", ")", "{", "}", "=", ",", ";", "'", '"', "`", "f", "g.h", "a", "b", "1", "-", "+", "~",
             "not ", "**", "*", "%", "1e999999", "10**10**10", "new ", "int[]", "ArrayList<>", "Arrays.asList(",
             "lambda x: x", "...", "True", "true", "None", "<think>", "</think>", "```", "```python\n", "\n", " ",
             "/*", "//", "=>", "->", "'x'", '"y"', "5L", "2.5f", "7n", "\\", "\u00e9", "\U0001f600", "9" * 400,
             "2**4000", "'ab' * 99", "(1, 2)"]  # fmt: skip
CATEGORIES = list(AST_CATEGORIES + RELEVANCE_CATEGORIES)

SCHEMA = [{"name": "f", "parameters": {"type": "dict", "required": ["a"], "properties": {
    "a": {"type": "integer"}, "b": {"type": "string"}, "c": {"type": "array", "items": {"type": "float"}},
    "d": {"type": "dict"}}}},
    {"name": "g.h", "parameters": {"type": "dict", "required": [], "properties": {"a": {"type": "any"}}}}]  # fmt: skip
ANSWER = [{"f": {"a": [1], "b": ["x", ""], "c": [[1.5], ""], "d": [{"k": [1]}, ""]}}]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=8),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4),
    max_leaves=20,
)
outputs = st.one_of(
    st.text(max_size=300),
    st.lists(st.sampled_from(FRAGMENTS), max_size=60).map("".join),
    st.builds(lambda n, s: s * n, st.integers(1, 20_000), st.sampled_from(["[", "(", "{", "'", "/*", "f(a=", "-"])),
)


def _well_formed(verdict: dict) -> None:
    assert set(verdict) >= {"valid", "error_type", "errors"}
    assert isinstance(verdict["valid"], bool) and isinstance(verdict["errors"], list)
    assert (verdict["error_type"] is None) == verdict["valid"]
    assert verdict["error_type"] is None or isinstance(verdict["error_type"], str)


def _score_ok(result: dict) -> None:
    assert math.isfinite(result["score"]) and result["score"] in (0.0, 1.0)
    assert (result["error_type"] is None) == (result["score"] == 1.0)
    assert result["error_type"] is None or result["error_type"].startswith("bfcl:")


SETTINGS = settings(max_examples=150, deadline=5000, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(output=outputs, category=st.sampled_from(CATEGORIES), language=st.sampled_from(["python", "java", "javascript"]))
def test_any_output_on_a_real_schema(output, category, language):
    _well_formed(ast_match(output, SCHEMA, ANSWER, category, language))
    _score_ok(bfcl_ast(output, ANSWER, {"functions": SCHEMA, "category": category, "language": language}))


@SETTINGS
@given(output=outputs, ground_truth=json_values, functions=json_values, category=st.one_of(
    st.sampled_from(CATEGORIES), st.text(max_size=10), st.none(), st.integers()))
def test_nonsense_ground_truth_and_functions(output, ground_truth, functions, category):
    _score_ok(bfcl_ast(output, ground_truth, {"functions": functions, "category": category}))
    _score_ok(bfcl_ast(output, ground_truth, functions))  # extra_info of any shape


@SETTINGS
@given(answer=json_values, schema_type=st.sampled_from(["integer", "string", "array", "dict", "tuple", "float",
                                                         "HashMap", "Set", "mystery", "any", "Bigint"]))
def test_well_shaped_but_odd_answers(answer, schema_type):
    # a structurally valid question whose options and declared types are anything
    functions = [{"name": "f", "parameters": {"required": ["a"], "properties": {"a": {"type": schema_type,
                                                                                       "items": {"type": "dict"}}}}}]
    possible = [{"f": {"a": [answer, ""]}}]
    for category in ("simple_python", "simple_java", "simple_javascript", "parallel"):
        for output in ("[f(a=1)]", "[f(a=[{'k': 1}])]", '[f(a="x")]', "[f(a={'k': [1]})]", "[f(a=new int[]{1})]"):
            _well_formed(ast_match(output, functions, possible, category))


python_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10) | st.binary(max_size=4),
    lambda children: st.lists(children, max_size=3) | st.tuples(children, children)
    | st.dictionaries(st.text(max_size=4) | st.integers(), children, max_size=3),
    max_leaves=12,
)
calls = st.lists(
    st.tuples(st.sampled_from(["f", "g.h", "other"]),
              st.dictionaries(st.sampled_from(["a", "b", "c", "d", "zz"]), python_values, max_size=4)),
    max_size=3,
).map(lambda items: "[" + ", ".join(f"{name}({', '.join(f'{k}={v!r}' for k, v in args.items())})"
                                    for name, args in items) + "]")  # fmt: skip


@SETTINGS
@given(output=calls, category=st.sampled_from(CATEGORIES))
def test_call_shaped_outputs_with_any_python_values(output, category):
    # well-formed call lists whose values are any Python literal: decoded and checked, never raising
    _well_formed(ast_match(output, SCHEMA, ANSWER, category))


def test_huge_output_is_bounded():
    # 10 MB of call-shaped text is refused by length, not parsed
    verdict = ast_match("[f(a=1)]" * 1_250_000, SCHEMA, ANSWER, "simple_python")
    assert verdict["error_type"] == "ast_decoder:decoder_failed"
