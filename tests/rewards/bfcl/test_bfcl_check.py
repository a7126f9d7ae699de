"""ast_match(): BFCL's AST-category verdicts, table-driven (one comment per case)."""

from __future__ import annotations

import pytest

from agentic_verl.rewards.bfcl import ast_match

WEATHER = {
    "name": "get_weather",
    "parameters": {
        "type": "dict",
        "required": ["city"],
        "properties": {
            "city": {"type": "string"},
            "days": {"type": "integer"},
            "temp": {"type": "float"},
            "units": {"type": "array", "items": {"type": "string"}},
            "metric": {"type": "boolean"},
            "opts": {"type": "dict"},
            "spans": {"type": "array", "items": {"type": "dict"}},
            "pair": {"type": "tuple", "items": {"type": "integer"}},
        },
    },
}
TIME = {"name": "get_time", "parameters": {"type": "dict", "required": ["tz"], "properties": {"tz": {"type": "string"}}}}
ANSWER = [{"get_weather": {
    "city": ["San Francisco, CA", "SF"], "days": [3, ""], "temp": [20.5, ""], "units": [["C", "F"], ""],
    "metric": [True, ""], "opts": [{"lang": ["en", ""], "verbose": [False]}, ""], "spans": [[{"h": [1]}], ""],
    "pair": [[1, 2], ""],
}}]  # fmt: skip

SIMPLE = [
    # the gold answer
    ("[get_weather(city='San Francisco, CA')]", True, None),
    # strings compare lowercased without spaces and ,./-_*^
    ("[get_weather(city='san francisco ca')]", True, None),
    # any of the accepted values
    ("[get_weather(city='SF', days=3)]", True, None),
    # a wrong string value
    ("[get_weather(city='Paris')]", False, "value_error:string"),
    # a missing required parameter
    ("[get_weather(days=3)]", False, "simple_function_checker:missing_required"),
    # a parameter outside the schema
    ("[get_weather(city='SF', hourly=True)]", False, "simple_function_checker:unexpected_param"),
    # the wrong function name
    ("[get_time(tz='UTC')]", False, "simple_function_checker:wrong_func_name"),
    # two calls where one is expected
    ("[get_weather(city='SF'), get_weather(city='SF')]", False, "simple_function_checker:wrong_count"),
    # an int is accepted for a float parameter
    ("[get_weather(city='SF', temp=20.5)]", True, None),
    # a string where an int is declared
    ("[get_weather(city='SF', days='3')]", False, "type_error:simple"),
    # a bool is not an int
    ("[get_weather(city='SF', days=True)]", False, "type_error:simple"),
    # lists compare element-wise after standardising strings
    ("[get_weather(city='SF', units=['c', 'f'])]", True, None),
    # list order matters
    ("[get_weather(city='SF', units=['F', 'C'])]", False, "value_error:list/tuple"),
    # a list item of the wrong type: the "" option lets the nested type check pass (as in BFCL), the value fails
    ("[get_weather(city='SF', units=['C', 5])]", False, "value_error:list/tuple"),
    # dicts compare key by key; an optional key may be left out
    ("[get_weather(city='SF', opts={'verbose': False})]", True, None),
    # a dict missing a required key
    ("[get_weather(city='SF', opts={'lang': 'en'})]", False, "value_error:dict_key"),
    # a dict with a wrong value
    ("[get_weather(city='SF', opts={'verbose': True})]", False, "value_error:dict_value"),
    # a list of dicts
    ("[get_weather(city='SF', spans=[{'h': 1}])]", True, None),
    # a list of dicts of the wrong length
    ("[get_weather(city='SF', spans=[{'h': 1}, {'h': 1}])]", False, "value_error:list_dict_count"),
    # a tuple is accepted for a tuple parameter
    ("[get_weather(city='SF', pair=(1, 2))]", True, None),
    # an int too large for a float (BFCL raises OverflowError here) stays an int and fails the type check
    ("[get_weather(city='SF', temp=" + "9" * 400 + ")]", False, "type_error:simple"),
    # a boolean compared by value
    ("[get_weather(city='SF', metric=False)]", False, "value_error:others"),
    # not a call list at all
    ("The weather is nice.", False, "ast_decoder:decoder_failed"),
    # reasoning and a plain fence around the gold answer
    ("<think>SF</think>\n```\n[get_weather(city='SF')]\n```", True, None),
    # a fence with a language tag: the official decoder leaves `python` in the text and fails
    ("<think>SF</think>\n```python\n[get_weather(city='SF')]\n```", False, "ast_decoder:decoder_failed"),
    # a unary plus negates, as in the official decoder: +3 is -3
    ("[get_weather(city='SF', days=+3)]", False, "value_error:others"),
]


@pytest.mark.parametrize(("output", "valid", "error_type"), SIMPLE)
def test_simple(output, valid, error_type):
    verdict = ast_match(output, [WEATHER], ANSWER, "simple_python")
    assert (verdict["valid"], verdict["error_type"]) == (valid, error_type), verdict
    assert isinstance(verdict["errors"], list) and (verdict["errors"] == []) == valid


def test_missing_optional_without_empty_option():
    # a parameter in the possible answer without "" must be given
    answer = [{"get_weather": {"city": ["SF"], "days": [3]}}]
    verdict = ast_match("[get_weather(city='SF')]", [WEATHER], answer, "simple_python")
    assert verdict["error_type"] == "simple_function_checker:missing_optional"


def test_nested_type_check_without_an_empty_option():
    # with "" not among the options, an item of the wrong type fails the nested type check
    answer = [{"get_weather": {"city": ["SF"], "units": [["C", "F"]]}}]
    verdict = ast_match("[get_weather(city='SF', units=['C', 5])]", [WEATHER], answer, "simple_python")
    assert verdict["error_type"] == "type_error:nested"


def test_unknown_declared_type_is_a_verdict():
    # BFCL raises KeyError on a type it does not map; we answer with bfcl:unsupported_type
    functions = [{"name": "f", "parameters": {"required": ["a"], "properties": {"a": {"type": "mystery"}}}}]
    verdict = ast_match("[f(a=1)]", functions, [{"f": {"a": [1]}}], "simple_python")
    assert (verdict["valid"], verdict["error_type"]) == (False, "bfcl:unsupported_type")


def test_variable_name_where_a_dict_is_declared():
    # BFCL accepts a string (a variable name) where the possible answers are strings, whatever the declared type
    answer = [{"get_weather": {"city": ["SF"], "opts": ["my_opts"]}}]
    assert ast_match("[get_weather(city='SF', opts=my_opts)]", [WEATHER], answer, "simple_python")["valid"]


MULTIPLE = [
    # the expected function among several
    ("[get_time(tz='UTC')]", True, None),
    # another function of the list
    ("[get_weather(city='SF')]", False, "simple_function_checker:wrong_func_name"),
    # one call too many
    ("[get_time(tz='UTC'), get_time(tz='UTC')]", False, "multiple_function_checker:wrong_count"),
]


@pytest.mark.parametrize(("output", "valid", "error_type"), MULTIPLE)
def test_multiple(output, valid, error_type):
    verdict = ast_match(output, [WEATHER, TIME], [{"get_time": {"tz": ["UTC"]}}], "multiple")
    assert (verdict["valid"], verdict["error_type"]) == (valid, error_type)


PARALLEL_ANSWER = [{"get_time": {"tz": ["UTC"]}}, {"get_weather": {"city": ["SF"]}}]
PARALLEL = [
    # the calls in answer order
    ("[get_time(tz='UTC'), get_weather(city='SF')]", True, None),
    # any order
    ("[get_weather(city='SF'), get_time(tz='UTC')]", True, None),
    # a dropped call
    ("[get_time(tz='UTC')]", False, "parallel_function_checker_no_order:wrong_count"),
    # the same call twice cannot cover both answers
    ("[get_time(tz='UTC'), get_time(tz='UTC')]", False, "parallel_function_checker_no_order:cannot_find_match"),
    # one wrong value
    ("[get_time(tz='CET'), get_weather(city='SF')]", False, "parallel_function_checker_no_order:cannot_find_match"),
]


@pytest.mark.parametrize(("output", "valid", "error_type"), PARALLEL)
@pytest.mark.parametrize("category", ["parallel", "parallel_multiple", "live_parallel", "live_parallel_multiple"])
def test_parallel(output, valid, error_type, category):
    verdict = ast_match(output, [WEATHER, TIME], PARALLEL_ANSWER, category)
    assert (verdict["valid"], verdict["error_type"]) == (valid, error_type)


def test_parallel_matching_is_greedy_unless_asked_for_a_one_to_one_matching():
    # Answer 0 accepts tz UTC or CET, answer 1 only UTC. The output [UTC, CET] has a valid assignment
    # (answer 0 <- CET, answer 1 <- UTC); BFCL's greedy matcher gives call UTC to answer 0 first and then finds
    # nothing for answer 1. By default we give BFCL's verdict; optimal_parallel_matching finds the assignment.
    answer = [{"get_time": {"tz": ["UTC", "CET"]}}, {"get_time": {"tz": ["UTC"]}}]
    output = "[get_time(tz='UTC'), get_time(tz='CET')]"
    verdict = ast_match(output, [TIME], answer, "parallel")
    assert verdict["error_type"] == "parallel_function_checker_no_order:cannot_find_match"
    assert ast_match(output, [TIME], answer, "parallel", optimal_parallel_matching=True)["valid"]
    # the calls in the order greedy matching needs pass either way
    assert ast_match("[get_time(tz='CET'), get_time(tz='UTC')]", [TIME], answer, "parallel")["valid"]


WEATHER_DAYS = [{"get_weather": {"city": ["SF"], "days": [3, ""], "metric": [True, ""]}}]
LENIENT_OPTIONS = [
    # a fence with a language tag: rejected by default (as officially), unwrapped with accept_code_fences
    ("```python\n[get_weather(city='SF')]\n```", "accept_code_fences"),
    # a unary plus: negated by default (as officially), kept with python_unary_operators
    ("[get_weather(city='SF', days=+3)]", "python_unary_operators"),
    # `not False` is -False == 0 by default (as officially), True with python_unary_operators
    ("[get_weather(city='SF', metric=not False)]", "python_unary_operators"),
]


@pytest.mark.parametrize(("output", "option"), LENIENT_OPTIONS)
def test_lenient_options_accept_what_the_official_checker_rejects(output, option):
    assert not ast_match(output, [WEATHER], WEATHER_DAYS, "simple_python")["valid"]
    assert ast_match(output, [WEATHER], WEATHER_DAYS, "simple_python", **{option: True})["valid"]


RELEVANCE = [
    # irrelevance: a refusal decodes to no call
    ("irrelevance", "I can't do that with these tools.", True),
    # irrelevance: an empty list is no call
    ("live_irrelevance", "[]", True),
    # irrelevance: any decodable call fails, valid or not
    ("irrelevance", "[get_time(tz='nowhere')]", False),
    # irrelevance: text around a call makes it undecodable, so it passes (as in BFCL)
    ("irrelevance", "Calling [get_time(tz='UTC')]", True),
    # relevance: one decodable call is enough, whatever its arguments
    ("live_relevance", "[get_time(tz='nowhere')]", True),
    # relevance: no call
    ("live_relevance", "I don't know.", False),
    # relevance: an empty list is not a call
    ("live_relevance", "[]", False),
]


@pytest.mark.parametrize(("category", "output", "valid"), RELEVANCE)
def test_relevance(category, output, valid):
    assert ast_match(output, [TIME], None, category)["valid"] is valid


JAVA_FN = {"name": "Svc.run", "parameters": {"type": "dict", "required": ["n"], "properties": {
    "n": {"type": "long"}, "flag": {"type": "boolean"}, "ids": {"type": "ArrayList", "items": {"type": "integer"}},
    "name": {"type": "String"}}}}  # fmt: skip
JAVA_ANSWER = [{"Svc.run": {"n": [5], "flag": [True, ""], "ids": [[1, 2], ""], "name": ["job", ""]}}]
JAVA = [
    # a long needs its L suffix
    ("[Svc.run(n=5L)]", True, None),
    # without it the text stays a string and fails the type check
    ("[Svc.run(n=5)]", False, "type_error:simple"),
    # booleans are Java literals
    ("[Svc.run(n=5L, flag=true)]", True, None),
    # an ArrayList from Arrays.asList
    ("[Svc.run(n=5L, ids=new ArrayList<>(Arrays.asList(1, 2)))]", True, None),
    # a Java string literal
    ('[Svc.run(n=5L, name="JOB")]', True, None),
]


@pytest.mark.parametrize(("output", "valid", "error_type"), JAVA)
def test_java(output, valid, error_type):
    verdict = ast_match(output, [JAVA_FN], JAVA_ANSWER, "simple_java")
    assert (verdict["valid"], verdict["error_type"]) == (valid, error_type), verdict


JS_FN = {"name": "draw", "parameters": {"type": "dict", "required": ["pts"], "properties": {
    "pts": {"type": "array", "items": {"type": "float"}}, "label": {"type": "String"}, "big": {"type": "Bigint"},
    "style": {"type": "dict"}}}}  # fmt: skip
JS_ANSWER = [{"draw": {"pts": [[1.0, 2.5]], "label": ["a b", ""], "big": [7, ""], "style": [{"color": ["red"]}, ""]}}]
JS = [
    # an array of floats (ints accepted by value)
    ("[draw(pts=[1, 2.5])]", True, None),
    # a string in single quotes
    ("[draw(pts=[1, 2.5], label='A B')]", True, None),
    # a BigInt literal
    ("[draw(pts=[1, 2.5], big=7n)]", True, None),
    # a plain number is not a BigInt
    ("[draw(pts=[1, 2.5], big=7)]", False, "type_error:simple"),
    # an object literal for a dict parameter
    ("[draw(pts=[1, 2.5], style={color: 'red'})]", True, None),
    # wrong array values
    ("[draw(pts=[2.5, 1])]", False, "value_error:list/tuple"),
]


@pytest.mark.parametrize(("output", "valid", "error_type"), JS)
def test_javascript(output, valid, error_type):
    verdict = ast_match(output, [JS_FN], JS_ANSWER, "simple_javascript")
    assert (verdict["valid"], verdict["error_type"]) == (valid, error_type), verdict


@pytest.mark.parametrize(
    ("functions", "answer"),
    [
        # no functions
        ([], ANSWER),
        # an answer that is not a list of {name: {param: [options]}}
        ([WEATHER], {"get_weather": {}}),
        # option lists that are not lists
        ([WEATHER], [{"get_weather": {"city": "SF"}}]),
        # the answer names a function that is not in the list
        ([TIME], [{"get_weather": {"city": ["SF"]}}]),
    ],
)
def test_bad_questions_are_a_verdict_not_an_exception(functions, answer):
    verdict = ast_match("[get_weather(city='SF')]", functions, answer, "multiple")
    assert verdict["valid"] is False and verdict["error_type"].startswith(("bfcl:", "simple_function_checker:"))
