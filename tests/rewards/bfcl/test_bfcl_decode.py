"""decode(): model text -> [{name: {param: value}}], table-driven (one comment per case)."""

from __future__ import annotations

import math

import pytest

from agentic_verl.rewards.bfcl import DecodeError, _javascript, decode
from agentic_verl.rewards.bfcl.decode import bracketed

PYTHON_CASES = [
    # the plain prompting format: a list of keyword calls
    ("[f(a=1, b='x')]", [{"f": {"a": 1, "b": "x"}}]),
    # several calls keep their order
    ('[f(a=1), g(b="y")]', [{"f": {"a": 1}}, {"g": {"b": "y"}}]),
    # brackets are added when missing, as BFCL does
    ("f(a=1)", [{"f": {"a": 1}}]),
    # dotted names are joined
    ("[math.hypot(x=4, y=5)]", [{"math.hypot": {"x": 4, "y": 5}}]),
    # a plain code fence is stripped
    ("```\n[f(a=1)]\n```", [{"f": {"a": 1}}]),
    # reasoning before the last </think> is dropped
    ("<think>maybe [g(a=2)]</think>\n\n[f(a=1)]", [{"f": {"a": 1}}]),
    # negative numbers
    ("[f(a=-5, b=-2.5)]", [{"f": {"a": -5, "b": -2.5}}]),
    # every unary operator negates, as in BFCL's decoder: +5 is -5, not True is -1, ~5 is -5
    ("[f(a=+5, b=not True, c=~5)]", [{"f": {"a": -5, "b": -1, "c": -5}}]),
    # inside arithmetic, operators keep Python's meaning (BFCL evaluates the expression)
    ("[f(a=+5 + 1)]", [{"f": {"a": 6}}]),
    # %-formatting of literals, as BFCL's eval would give
    ("[f(a='%s-%d' % ('v', 5))]", [{"f": {"a": "v-5"}}]),
    # literal arithmetic is folded without executing anything
    ("[f(a=2*3, b='a'+'b', c=2**10)]", [{"f": {"a": 6, "b": "ab", "c": 1024}}]),
    # lists, dicts, tuples and nested structures
    ("[f(a=[1, [2]], b={'k': (1, 2)})]", [{"f": {"a": [1, [2]], "b": {"k": (1, 2)}}}]),
    # a bare name is its identifier text (a variable)
    ("[f(a=my_var, b=true)]", [{"f": {"a": "my_var", "b": "true"}}]),
    # a call with keywords as a value becomes a nested call dict
    ("[f(a=g(x=1))]", [{"f": {"a": {"g": {"x": 1}}}}]),
    # a call without keywords as a value is its source text
    ("[f(a=len(x))]", [{"f": {"a": "len(x)"}}]),
    # a subscript is its source text
    ("[f(a=x[0])]", [{"f": {"a": "x[0]"}}]),
    # positional arguments are ignored, **kwargs lands under None (as in BFCL)
    ("[f(1, a=2, **kw)]", [{"f": {"a": 2, None: "kw"}}]),
    # an Ellipsis is the string "..."
    ("[f(a=...)]", [{"f": {"a": "..."}}]),
    # an empty list decodes to no calls
    ("[]", []),
    # a float literal too large for a float is inf, never evaluated as anything else
    ("[f(a=1e999999)]", [{"f": {"a": math.inf}}]),
]

PYTHON_FAILURES = [
    # plain text is not a call list
    "I cannot help with that.",
    # an element that is not a call
    "[f(a=1), 5]",
    # a lambda value (BFCL fails too)
    "[f(a=lambda x: x)]",
    # a set value (unsupported syntax in BFCL)
    "[f(a={1, 2})]",
    # a huge power is refused instead of computed
    "[f(a=10**10**10)]",
    # %-formatting with a variable width could allocate gigabytes
    "[f(a='%*d' % (10**9, 1))]",
    # so could a huge literal width
    "[f(a='%999999999d' % 1)]",
    # a sequence repeated past the size limit
    "[f(a='x' * 10**9)]",
    # arithmetic on names would need eval; refused
    "[f(a=x + 1)]",
    # unary operator on a non-literal (BFCL fails too)
    "[f(a=-x)]",
    # dict unpacking is not a value
    "[f(a={**d})]",
    # unbalanced brackets
    "[f(a=1]",
    # deeply nested brackets hit the parser's limit
    "[f(a=" + "[" * 500 + "]" * 500 + ")]",
    # a quoted call list: brackets are added first, so it is a list holding a string (as in BFCL)
    "'[f(a=1)]'",
    # not a string at all
    None,
]


@pytest.mark.parametrize(("text", "expected"), PYTHON_CASES)
def test_python_decoding(text, expected):
    assert decode(text) == expected


@pytest.mark.parametrize("text", PYTHON_FAILURES)
def test_python_decode_failures(text):
    with pytest.raises(DecodeError):
        decode(text)


def test_tree_sitter_recovery_approximates_the_official_error_recovery():
    # BFCL accepts these through tree-sitter's error recovery; tree_sitter_recovery mimics it for the benchmark
    assert decode("[[f(a=1, b=2)]]", "java", tree_sitter_recovery=True) == [{"f": {"a": "1", "b": "2"}}]
    assert decode("[f(**opts, a=1)]", "javascript", tree_sitter_recovery=True) == [{"f": {"a": "1"}}]


def test_lenient_options_unwrap_fences_and_keep_unary_meaning():
    # By default a ```python fence is undecodable (as in BFCL); the lenient options read it as Python would.
    with pytest.raises(DecodeError):
        decode("```python\n[f(a=1)]\n```")
    text = "<think>x</think>```python\n[f(a=+5, b=not True, c=~5)]\n```"
    expected = [{"f": {"a": 5, "b": False, "c": -6}}]
    assert decode(text, accept_code_fences=True, python_unary_operators=True) == expected


@pytest.mark.parametrize(
    "text",
    [
        # texts without a parenthesis are decided without the parser: an empty list ...
        "[]", "[ \n ]", "",
        # ... or no call; these must give what the parser gives
        "Sorry, I can't.", "[a, b]", "[1]", "[] + []", "[\x00]", "['x']",
        # with a comment, a line continuation or other whitespace the parser decides
        "[ # nothing\n]", "[\\\n]", "[\x0c]",
    ],
)
def test_text_without_a_call_decodes_as_the_parser_would(text):
    import ast

    try:
        tree = ast.parse(bracketed(text).strip().strip("'"), mode="eval")
        expected = [] if isinstance(tree.body, ast.List) and not tree.body.elts else DecodeError
    except (SyntaxError, ValueError):
        expected = DecodeError
    if expected is DecodeError:
        with pytest.raises(DecodeError):
            decode(text)
    else:
        assert decode(text) == expected


JAVA_CASES = [
    # string literals lose their quotes, numbers and booleans stay source text
    ('[A.b(x="s", n=5, t=true)]', [{"A.b": {"x": "s", "n": "5", "t": "true"}}]),
    # long/float suffixes and char literals are kept as written (converted by type later)
    ("[f(l=5L, f=1.5f, c='c')]", [{"f": {"l": "5L", "f": "1.5f", "c": "c"}}]),
    # array creation renders as `new T[]{...}` without spaces
    ("[f(a=new int[] {1, 2})]", [{"f": {"a": "new int[]{1,2}"}}]),
    # object creation keeps its arguments, a method call its source text
    ('[f(a=new ArrayList<>(Arrays.asList("a", "b")))]', [{"f": {"a": 'new ArrayList<>(Arrays.asList("a", "b"))'}}]),
    # an anonymous class body is dropped, as BFCL drops it
    ('[f(m=new HashMap<String, Object>() {{ put("k", 1); }})]', [{"f": {"m": "new HashMap<String,Object>()"}}]),
    # other expressions are their tokens without spaces
    ("[f(a=1 + 2, b=-5, c=x -> x)]", [{"f": {"a": "1+2", "b": "-5", "c": "x->x"}}]),
    # a bare identifier argument lands under None, other positional arguments are ignored
    ("[f(a=1, 2, k)]", [{"f": {"a": "1", None: "k"}}]),
    # no method call at all: {} (BFCL's format check rejects it)
    ("hello", {}),
]

JS_CASES = [
    # values are source text; matching quotes are trimmed
    ('[f(a="s", b=5, c=[1, 2])]', [{"f": {"a": "s", "b": "5", "c": "[1, 2]"}}]),
    # objects and template strings stay as written, with their spacing
    ("[f(o={k: 1, 'z': [1,2]}, t=`x`)]", [{"f": {"o": "{k: 1, 'z': [1,2]}", "t": "`x`"}}]),
    # a bare identifier or `true` lands under None
    ("[f(a=1, k)]", [{"f": {"a": "1", None: "k"}}]),
    # the first top-level call statement is the call
    ("[f(a=1); g(b=2)]", [{"f": {"a": "1"}}]),
    # two calls separated by a comma are a sequence, not a call: None
    ("[f(a=1), g(b=2)]", None),
]


@pytest.mark.parametrize(("text", "expected"), JAVA_CASES)
def test_java_decoding(text, expected):
    assert decode(text, "java") == expected


@pytest.mark.parametrize(("text", "expected"), JS_CASES)
def test_javascript_decoding(text, expected):
    assert decode(text, "javascript") == expected


@pytest.mark.parametrize(
    "source",
    [
        # taken by the regular-expression fast path ...
        "f(a=1)", "f()", "f(  )", "f(a=1,)", "a.b.c(x='y')", "f(a=-5, b=-5.5)", "f(a=1);", " f(a=1) ; ",
        "f(a = 'b' , c= 3 )", "f(a=$x, $b=1)", "f(in=1)", "f(a=in)", "f(a=x, b=y)",
        # ... or left to the parser, which must give the same answer
        "f(a=1,,)", "typeof(a=1)", "true(a=1)", "new(a=1)", "f(true=1)", "f(a=true)", "f(a=new)", "f(a=async)",
        "f(async=1)", "f(a=5n)", "f(a=1e5)", "f(a=1); g(b=2)", "f(a=1)\ng(b=2)", "f(a=1, a=2)", "f(a='x\\'y')",
        "f(a=b c)", "f(a=.5)", "f(a=1.)", "f(a=1.5.3)", "f(a=void)", "function(a=1)", "f(a=1)//c", "f(a=1 /*c*/)",
    ],
)
def test_javascript_fast_path_gives_what_the_parser_gives(source, monkeypatch):
    def parse(text):
        try:
            return _javascript.parse_javascript_call(text)
        except ValueError as exc:
            return type(exc)

    fast = parse(source)
    monkeypatch.setattr(_javascript, "_simple_call", lambda text: None)
    assert fast == parse(source)


@pytest.mark.parametrize(
    ("text", "language"),
    [
        # duplicate argument names are an error in BFCL's Java/JS parsers
        ("[f(a=1, a=2)]", "java"),
        # parenthesised values fail tree-sitter's Java parse in BFCL
        ("[f(a=(1))]", "java"),
        # an array with a size and no initializer crashes BFCL's Java extraction
        ("[f(a=new int[5])]", "java"),
        # unterminated string
        ('[f(a="x)]', "javascript"),
        # a doubly bracketed call is rejected (documented: tree-sitter recovers from some of these)
        ("[[f(a=1, b=2)]]", "java"),
        # a first argument starting with an operator (documented: tree-sitter inserts the missing operand)
        ("[f(**opts, a=1)]", "javascript"),
        # brackets nested past the limit
        ("[f(a=" + "[" * 200 + ")]", "javascript"),
    ],
)
def test_java_javascript_failures(text, language):
    with pytest.raises(ValueError):
        decode(text, language)
