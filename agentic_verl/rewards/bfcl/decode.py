"""Turn model text in BFCL's prompting format into calls: `[f(a=1), g(b="x")]` -> `[{"f": {"a": 1}}, {"g": {"b": "x"}}]`.

This follows BFCL's default decoder for prompting models (strip backticks/newlines/spaces, wrap in `[...]`,
`ast.parse`, keyword arguments only), so that by default a text decodes exactly when, and to what, it decodes
in BFCL's evaluation, including two of its oddities:

- every unary operator negates its operand (`+5` is -5, `not True` is -1, `~5` is -5); with
  `python_unary_operators=True` they keep Python's meaning (`+5` is 5, `not True` is False, `~5` is -6);
- a code fence with a language tag (```` ```python ````) makes the text undecodable (BFCL only strips backticks, so
  the tag stays in the text); `accept_code_fences=True` unwraps one such fence first.

Other differences, each documented in docs/bfcl.md:

- we never execute anything: a binary operation (`2*3`, `"a" + "b"`) is folded only over literals, within size
  limits; anything else (`len(x) + 1`, `10**10**10`) is a decode failure where BFCL would `eval` it;
- everything up to the last `</think>` is dropped (BFCL's reasoning-model handlers do this before decoding);
- inputs longer than `MAX_CHARS` are a decode failure (bounded time).

Java and JavaScript outputs go through `agentic_verl.rewards.bfcl._java` / `_javascript`, which mirror BFCL's
tree-sitter based extraction (values come back as source strings, converted later by type). They do not
reproduce tree-sitter's error recovery: BFCL accepts some doubly bracketed Java outputs `[[Obj.method(...)]]`
(read as an array access with a missing array name; which ones depends on the names) and JavaScript calls
whose first argument starts with a binary operator (`f(**opts, a=1)`: a missing operand is inserted); we reject
both (`tree_sitter_recovery=True` accepts both, for the agreement benchmark only: it over-accepts).

>>> decode("[get_weather(city='Paris', days=3), get_time(tz=\\"CET\\")]")
[{'get_weather': {'city': 'Paris', 'days': 3}}, {'get_time': {'tz': 'CET'}}]
>>> decode("<think>easy</think>\\n\\n```\\n[f(x=+5)]\\n```")
[{'f': {'x': -5}}]
>>> decode("```python\\n[f(x=+5)]\\n```", accept_code_fences=True, python_unary_operators=True)
[{'f': {'x': 5}}]
"""

from __future__ import annotations

import ast
import operator
import re
import warnings

from agentic_verl.rewards.bfcl._tokens import DecodeError

MAX_CHARS = 100_000  # longer outputs are a decode failure, so time stays bounded
_MAX_INT_BITS = 4096  # folded integers above this are a decode failure (`10**10**10` never runs)
_MAX_SEQ_LEN = 100_000  # folded strings/lists above this length are a decode failure
_BIG_FORMAT = re.compile(r"%[^%a-zA-Z]*\d{4,}")  # a %-conversion with a width or precision of 1000 or more


_SOURCE_NAME = "<model output>"
# compile() warns about model text (`1f`: invalid decimal literal, `"\d"`: invalid escape); an RL run would print
# one per sample. Silenced for our source name only.
for _category in (SyntaxWarning, DeprecationWarning):
    warnings.filterwarnings("ignore", category=_category, module=re.escape(_SOURCE_NAME))


_FENCE = re.compile(r"^\s*```[A-Za-z0-9_+.-]*[ \t]*\n(.*?)\n?[ \t]*```\s*$", re.DOTALL)


def strip_reasoning(text: str, accept_code_fences: bool = False) -> str:
    """Drop a reasoning prefix (everything up to the last `</think>`); with `accept_code_fences`, also unwrap
    one ```lang fenced block (otherwise fences are left to BFCL's backtick stripping)."""
    if "</think>" in text:
        text = text.rsplit("</think>", 1)[-1]
    if accept_code_fences and "```" in text:
        match = _FENCE.match(text)
        if match:
            text = match.group(1)
    return text


def bracketed(text: str) -> str:
    """BFCL's pre-processing: strip backticks, newlines and spaces at both ends, then make sure of `[` ... `]`."""
    text = text.strip("`\n ")
    if not text.startswith("["):
        text = "[" + text
    if not text.endswith("]"):
        text = text + "]"
    return text


def decode(text: str, language: str = "python", *, accept_code_fences: bool = False,
           python_unary_operators: bool = False, tree_sitter_recovery: bool = False) -> list[dict]:
    """Decode model text into `[{name: {param: value}}]`; raises DecodeError when it is not a call list.

    Java / JavaScript text that parses but holds no call gives `{}` / None, as BFCL's extraction does (BFCL's
    format check, and `ast_match`, then report `ast_decoder:decoder_wrong_output_format`).

    The defaults decode as BFCL's evaluation does. `accept_code_fences` unwraps a ```lang fence;
    `python_unary_operators` reads `+x`, `not x`, `~x` as Python does (BFCL negates them all);
    `tree_sitter_recovery` approximates tree-sitter's error recovery on Java/JavaScript (agreement benchmark
    only: it accepts some outputs BFCL rejects)."""
    if not isinstance(text, str):
        raise DecodeError(f"output is {type(text).__name__}, not str")
    if len(text) > MAX_CHARS:
        raise DecodeError(f"output longer than {MAX_CHARS} characters")
    text = bracketed(strip_reasoning(text, accept_code_fences))
    if language == "python":
        return decode_python(text, python_unary_operators)
    if language == "java":
        from agentic_verl.rewards.bfcl._java import parse_java_call

        return parse_java_call(text[1:-1], tree_sitter_recovery)
    if language == "javascript":
        from agentic_verl.rewards.bfcl._javascript import parse_javascript_call

        return parse_javascript_call(text[1:-1], tree_sitter_recovery)
    raise DecodeError(f"unsupported language {language!r}")


def decode_python(text: str, python_unary_operators: bool = False) -> list[dict]:
    """Parse an already bracketed `[f(a=1), ...]` string with `ast` (never executed)."""
    cleaned = text.strip().strip("'")
    if "(" not in cleaned and "#" not in cleaned and "\\" not in cleaned:
        # No call can be in it (prose, most often), and it parses only as an empty list: decided without
        # the parser, which costs about as much as the rest of a check.
        inner = cleaned[1:-1] if cleaned[:1] == "[" and cleaned[-1:] == "]" else None
        if inner is not None and not inner.strip(" \t\n"):
            return []
        if inner is None or inner.strip():
            raise DecodeError("not a call list: no call in the text")
    try:
        tree = compile(cleaned, _SOURCE_NAME, "eval", ast.PyCF_ONLY_AST)  # ast.parse without the wrapper
    except (SyntaxError, ValueError, MemoryError, RecursionError, OverflowError) as exc:
        raise DecodeError(f"not Python syntax: {type(exc).__name__}") from None
    body = tree.body
    try:
        call = (_PYTHON_VALUES if python_unary_operators else _VALUES).call
        if type(body) is ast.Call:
            return [call(body)]
        if not isinstance(body, (ast.List, ast.Tuple, ast.Set)):
            raise DecodeError(f"expected a list of calls, got {type(body).__name__}")
        calls = []
        for element in body.elts:
            if type(element) is not ast.Call:
                raise DecodeError(f"list element is {type(element).__name__}, not a call")
            calls.append(call(element))
        return calls
    except RecursionError:
        raise DecodeError("nested too deeply") from None


class _Values:
    """AST nodes -> Python values, the way BFCL's decoder resolves them (without executing anything)."""

    def call(self, node: ast.Call) -> dict:
        func = node.func
        if type(func) is ast.Name:
            name = func.id
        else:
            parts = []
            while isinstance(func, ast.Attribute):
                parts.append(func.attr)
                func = func.value
            if isinstance(func, ast.Name):
                parts.append(func.id)
            name = ".".join(reversed(parts))
        # Positional arguments are ignored and `**kw` lands under the key None, as in BFCL.
        value = self.value
        args = {}
        for kw in node.keywords:
            v = kw.value
            args[kw.arg] = v.value if type(v) is ast.Constant and v.value is not Ellipsis else value(v)
        return {name: args}

    def value(self, node: ast.AST):
        kind = type(node)
        if kind is ast.Constant:
            return "..." if node.value is Ellipsis else node.value
        if kind is ast.List:
            return [self.value(v) for v in node.elts]
        if kind is ast.Name:
            return node.id
        if kind is ast.Dict:
            result = {}
            for key, value in zip(node.keys, node.values, strict=True):
                if key is None:
                    raise DecodeError("dict unpacking (**) is not a value")
                key = self.value(key)
                value = self.value(value)
                try:
                    result[key] = value
                except TypeError:
                    raise DecodeError("unhashable dict key") from None
            return result
        if kind is ast.UnaryOp:
            # Like BFCL, only a literal operand is accepted (`-x`, `-(1+2)`, `--1` fail there too).
            if type(node.operand) is not ast.Constant or node.operand.value is Ellipsis:
                raise DecodeError("unary operator on a non-literal")
            return self.unary(node.op, node.operand.value)
        if kind is ast.BinOp:
            return _fold(node)
        if kind is ast.Tuple:
            return tuple(self.value(v) for v in node.elts)
        if kind is ast.Call:
            return self.call(node) if node.keywords else ast.unparse(node)
        if kind is ast.Subscript:
            return ast.unparse(node.value) + "[" + ast.unparse(node.slice) + "]"
        raise DecodeError(f"unsupported value syntax {kind.__name__}")

    def unary(self, op: ast.unaryop, operand):
        """BFCL's unary handling: every unary operator negates (`+5` -> -5, `not True` -> -1, `~5` -> -5)."""
        try:
            return -operand
        except TypeError as exc:
            raise DecodeError(f"bad unary operand: {exc}") from None


class _PythonUnaryValues(_Values):
    """Unary operators with Python's meaning: `+5` -> 5, `not True` -> False, `~5` -> -6."""

    def unary(self, op: ast.unaryop, operand):
        try:
            return _UNARY[type(op)](operand)
        except TypeError as exc:
            raise DecodeError(f"bad unary operand: {exc}") from None


_VALUES = _Values()
_PYTHON_VALUES = _PythonUnaryValues()
_UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Not: operator.not_, ast.Invert: operator.invert}


_BINARY = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
    ast.LShift: operator.lshift,
    ast.RShift: operator.rshift,
    ast.BitOr: operator.or_,
    ast.BitXor: operator.xor,
    ast.BitAnd: operator.and_,
}


def _fold(node: ast.AST):
    """Constant-fold a literal expression with Python's semantics, refusing anything that could blow up."""
    kind = type(node)
    if kind is ast.Constant:
        if node.value is Ellipsis:
            raise DecodeError("Ellipsis in arithmetic")
        return node.value
    if kind is ast.UnaryOp:
        operand = _fold(node.operand)
        try:
            return _UNARY[type(node.op)](operand)
        except TypeError as exc:
            raise DecodeError(f"bad unary operand: {exc}") from None
    if kind in (ast.List, ast.Tuple):
        items = [_fold(v) for v in node.elts]
        return items if kind is ast.List else tuple(items)
    if kind is ast.BinOp:
        op = _BINARY.get(type(node.op))
        if op is None:
            raise DecodeError(f"unsupported operator {type(node.op).__name__}")
        left, right = _fold(node.left), _fold(node.right)
        _guard(type(node.op), left, right)
        try:
            result = op(left, right)
        except (TypeError, ValueError, ZeroDivisionError, OverflowError) as exc:
            raise DecodeError(f"arithmetic error: {type(exc).__name__}") from None
        if isinstance(result, int) and result.bit_length() > _MAX_INT_BITS:
            raise DecodeError("folded integer too large")
        return result
    # Names, calls, attributes...: BFCL would eval() them; we never execute model output.
    raise DecodeError(f"non-literal {kind.__name__} in arithmetic")


def _size(value) -> int:
    return len(value) if isinstance(value, (str, bytes, list, tuple)) else 0


def _guard(op: type, left, right) -> None:
    ints = (int,)
    if op is ast.Pow and isinstance(left, ints) and isinstance(right, ints):
        if right > 0 and abs(left) > 1 and right * max(abs(left).bit_length(), 1) > _MAX_INT_BITS:
            raise DecodeError("power too large")
    elif op is ast.Pow and isinstance(left, complex | float) and isinstance(right, ints) and abs(right) > 10**6:
        raise DecodeError("power too large")
    elif op is ast.LShift and isinstance(right, ints) and right > _MAX_INT_BITS:
        raise DecodeError("shift too large")
    elif op is ast.Mult:
        for seq, count in ((left, right), (right, left)):
            if _size(seq) and isinstance(count, ints) and _size(seq) * count > _MAX_SEQ_LEN:
                raise DecodeError("repeated sequence too long")
    elif op is ast.Add and _size(left) + _size(right) > _MAX_SEQ_LEN:
        raise DecodeError("concatenation too long")
    elif op is ast.Mod and isinstance(left, (str, bytes)):
        # `'%s' % 5` is folded like any literal expression, but no `*` or 4-digit widths/precisions:
        # `"%*d" % (10**9, 1)` or `"%999999999d" % 1` would allocate gigabytes.
        text = left if isinstance(left, str) else left.decode("latin-1")
        if "*" in text or _BIG_FORMAT.search(text):
            raise DecodeError("string formatting with a huge or variable width")
