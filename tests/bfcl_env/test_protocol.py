"""The pure parts of the BFCL environment (agentic_verl/bfcl_env/protocol.py): call strings built from literals
only, BFCL's output formatting, state as JSON, request validation. No server, no bfcl-eval."""

from __future__ import annotations

import ast
import doctest
import json
import re
from pathlib import Path

import pytest

from agentic_verl.bfcl_env import protocol
from agentic_verl.bfcl_env.protocol import (
    RequestError,
    format_output,
    keyword_call,
    parse_call_string,
    parse_calls,
    parse_classes,
    parse_json,
    render_call,
    render_parsed,
    to_jsonable,
)

PACKAGE = Path(protocol.__file__).resolve().parent


def test_docstring_examples():
    result = doctest.testmod(protocol)
    assert result.attempted > 0 and result.failed == 0


@pytest.mark.parametrize("arguments", [
    {"folder": "docs"},
    {"text": "it's \"quoted\"\n and \\ back", "n": -3, "x": 2.5, "flag": True, "none": None},
    {"nested": {"a": [1, {"b": "c"}], "unicode": "é\u2028\ud800"}, "empty": {}},
    {"from": 1, "class": "x"},  # Python keywords as keys
    {"file name": "a", "2x": 1},  # keys that are not identifiers
])
def test_render_call_reads_back_as_the_same_literals(arguments):
    text = render_call("f", arguments)
    call = ast.parse(text, mode="eval").body
    assert isinstance(call, ast.Call) and call.func.id == "f" and not call.args
    read_back = {}
    for kw in call.keywords:
        if kw.arg is None:
            read_back.update(ast.literal_eval(kw.value))
        else:
            read_back[kw.arg] = ast.literal_eval(kw.value)
    assert read_back == arguments


@pytest.mark.parametrize("name", ["a.b", "__import__('os').system", "f()", "", "class", "x y", "1f"])
def test_render_call_refuses_names_that_are_not_plain_identifiers(name):
    with pytest.raises(ValueError, match="not a function name"):
        render_call(name, {})


@pytest.mark.parametrize("text", [
    "f(x=__import__('os').system('true'))",  # a call inside an argument
    "f(x=open)",  # a name
    "os.system('true')",  # an attribute call
    "f(x=1)(y=2)",
    "f(*args)",
    "f(**{'a': 1})",
    "f(x=[i for i in range(3)])",
    "f(x=1); g()",
    "f(x=lambda: 1)",
    "1 + 2",
    "f(x=2**1000000)",  # an operation, not a literal: never computed
])
def test_parse_call_string_accepts_only_literal_arguments(text):
    with pytest.raises(ValueError):
        parse_call_string(text)


def test_parse_call_string_round_trips_ground_truth_forms():
    for text, expected in [
        ("cd(folder='document')", ("cd", [], {"folder": "document"})),
        ("sort('final_report.pdf')", ("sort", ["final_report.pdf"], {})),
        ("ls(a=True)", ("ls", [], {"a": True})),
        ("mean(numbers=[1.5, -2, 3])", ("mean", [], {"numbers": [1.5, -2, 3]})),
        ("f('a', b={'k': (1, 2)})", ("f", ["a"], {"b": {"k": (1, 2)}})),
    ]:
        parsed = parse_call_string(text)
        assert parsed == expected
        assert parse_call_string(render_parsed(*parsed)) == parsed


def test_keyword_call_names_positional_arguments_from_the_doc_order():
    order = {"diff": ["file_name1", "file_name2"]}
    assert keyword_call("diff('a', file_name2='b')", order) == {"name": "diff",
                                                               "arguments": {"file_name1": "a", "file_name2": "b"}}
    with pytest.raises(ValueError, match="cannot name its positional arguments"):
        keyword_call("diff('a', 'b', 'c')", order)
    with pytest.raises(ValueError, match="cannot name"):
        keyword_call("unknown('a')", order)


def test_format_output_follows_bfcl():
    class Obj:
        def __repr__(self):
            return "<obj>"

    assert format_output("text") == "text"
    assert format_output({"a": 1, "b": [1, 2]}) == json.dumps({"a": 1, "b": [1, 2]})
    assert format_output({"o": Obj()}) == "{'o': <obj>}"  # a dict that does not serialise: str()
    assert format_output(None) == "None" and format_output(7) == "7" and format_output([1]) == "[1]"
    assert format_output(True) == "True"


def test_to_jsonable_drops_back_references_and_keeps_data():
    class Node:
        def __init__(self, name, parent=None):
            self.name, self.parent, self.contents, self._private = name, parent, {}, "hidden"

    root = Node("/")
    child = Node("docs", root)
    root.contents["docs"] = child
    child.contents["loop"] = root  # a cycle through a dict
    state = to_jsonable(root)
    assert state == {"name": "/", "parent": None, "contents": {"docs": {"name": "docs", "contents": {}}}}
    json.dumps(state, allow_nan=False)
    assert to_jsonable({"x": float("nan"), "y": {2}, "z": (1, "a")}) == {"x": "nan", "y": [2], "z": [1, "a"]}


@pytest.mark.parametrize("body, status", [
    (b"", 400), (b"{", 400), (b"\xff\xfe", 400), (b'{"x": NaN}', 400), (b'{"x": Infinity}', 400),
    (b"[" * 100_000 + b"]" * 100_000, 400),
])
def test_parse_json_refuses_unreadable_bodies(body, status):
    with pytest.raises(RequestError) as caught:
        parse_json(body)
    assert caught.value.status == status


def test_parse_calls_and_classes_say_what_is_wrong():
    assert parse_calls([{"name": "cd", "arguments": {"folder": "x"}}, {"name": "pwd"}]) == [
        ("cd", {"folder": "x"}), ("pwd", {})]
    for bad, where in [({"name": "cd"}, "calls"), ([{"arguments": {}}], "calls[0].name"),
                       ([{"name": "cd", "arguments": ["x"]}], "calls[0].arguments"), (["cd"], "calls[0]")]:
        with pytest.raises(RequestError, match=rf"^{re.escape(where)}:") as caught:
            parse_calls(bad)
        assert caught.value.status == 422
    with pytest.raises(RequestError, match="limit is 2"):
        parse_calls([{"name": "pwd"}] * 3, max_calls=2)
    with pytest.raises(RequestError, match=r"unknown class\(es\) \['FileSystem'\]"):
        parse_classes(["GorillaFileSystem", "FileSystem"])
    with pytest.raises(RequestError, match="each class once"):
        parse_classes(["MathAPI", "MathAPI"])


def test_the_pure_modules_import_no_bfcl_eval_and_the_server_modules_nothing_outside_its_venv():
    """protocol/venv/process/client run in the main venv (no bfcl-eval import); the server side runs in .venv-bfcl,
    which has the standard library, bfcl-eval and this package's standard-library modules only."""
    import sys

    allowed_in_venv = set(sys.stdlib_module_names) | {"bfcl_eval", "agentic_verl"}
    for module, rule in [("protocol", "pure"), ("venv", "pure"), ("process", "pure"), ("client", "pure"),
                         ("simulators", "venv"), ("sessions", "venv"), ("checker", "venv"), ("server", "venv")]:
        tree = ast.parse((PACKAGE / f"{module}.py").read_text())
        names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        names |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
        tops = {name.split(".")[0] for name in names}
        if rule == "pure":
            assert "bfcl_eval" not in tops, module
        else:
            assert tops <= allowed_in_venv, (module, tops - allowed_in_venv)
            ours = {name for name in names if name.startswith("agentic_verl")}
            assert ours <= {"agentic_verl.bfcl_env", "agentic_verl.bfcl_env.protocol", "agentic_verl.bfcl_env.sessions",
                            "agentic_verl.bfcl_env.simulators", "agentic_verl.bfcl_env.checker",
                            "agentic_verl.retrieval.auth"}, (module, ours)
