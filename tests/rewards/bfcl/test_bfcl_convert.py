"""Java / JavaScript type conversion of argument source text, table-driven (one comment per case)."""

from __future__ import annotations

import pytest

from agentic_verl.rewards.bfcl.convert import UnsupportedType, java_value, js_value

JAVA = [
    # integers, with a sign
    ("-42", "integer", None, -42),
    # a long needs its suffix
    ("7L", "long", None, 7),
    # a long without the suffix stays text
    ("7", "long", None, "7"),
    # a float needs f/F
    ("3e2F", "float", None, 300.0),
    # a double must not have it
    ("1.5f", "double", None, "1.5f"),
    # booleans are lowercase
    ("true", "boolean", None, True),
    # True is not a Java boolean
    ("True", "boolean", None, "True"),
    # String and any are kept as text
    ('"x"', "String", None, '"x"'),
    # an array with an initializer, items converted by their type
    ("new int[]{1,2}", "Array", "integer", [1, 2]),
    # String items keep their quotes (BFCL's behaviour)
    ('new String[]{"a","b"}', "Array", "String", ['"a"', '"b"']),
    # ArrayList from Arrays.asList strips String quotes
    ('new ArrayList<>(Arrays.asList("a", "b"))', "ArrayList", "String", ["a", "b"]),
    # ArrayList built with add() calls
    ("new ArrayList<Long>() {{ add(1L); add(2L); }}", "ArrayList", "long", [1, 2]),
    # an empty ArrayList
    ("new ArrayList<>()", "ArrayList", "integer", []),
    # a HashMap with puts
    ('new HashMap<String, Object>() {{ put("k", 1); put("s", "v"); }}', "HashMap", None, {"k": 1, "s": "v"}),
    # a HashMap as BFCL's extraction renders it (body dropped) is empty
    ("new HashMap<String,Object>()", "HashMap", None, {}),
    # a variable name where a collection is declared stays text
    ("myList", "ArrayList", "String", "myList"),
]


@pytest.mark.parametrize(("text", "java_type", "item_type", "expected"), JAVA)
def test_java(text, java_type, item_type, expected):
    assert java_value(text, java_type, item_type) == expected


JS = [
    # double- or single-quoted strings lose their quotes
    ("'a'", "String", None, "a"),
    # unquoted text is kept
    ("name", "String", None, "name"),
    # integers
    ("-3", "integer", None, -3),
    # floats without exponent
    ("2.5", "float", None, 2.5),
    # an exponent is not accepted (stays text)
    ("1e3", "float", None, "1e3"),
    # BigInt literals
    ("10n", "Bigint", None, 10),
    # an array of typed items
    ("[1, 2]", "array", "float", [1.0, 2.0]),
    # new Array(...)
    ("new Array(1, 2)", "array", "integer", [1, 2]),
    # a 2-D array
    ("[[1, 2], [3, 4]]", "array", "array", [[1, 2], [3, 4]]),
    # an object literal
    ("{a: 1, 'b': 'x', c: [1, 2]}", "dict", None, {"a": 1, "b": "x", "c": [1, 2]}),
    # an empty object
    ("{}", "dict", None, {}),
    # a variable name where an object is declared stays text
    ("opts", "dict", None, "opts"),
]


@pytest.mark.parametrize(("text", "js_type", "item_type", "expected"), JS)
def test_javascript(text, js_type, item_type, expected):
    assert js_value(text, js_type, item_type) == expected


@pytest.mark.parametrize(("convert", "type_name"), [(java_value, "Set"), (java_value, "Queue"), (js_value, "Map")])
def test_types_bfcl_does_not_convert(convert, type_name):
    # BFCL raises on these; we raise a ValueError subclass that the checker turns into a verdict
    with pytest.raises(UnsupportedType):
        convert("x", type_name)
