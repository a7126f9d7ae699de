"""JavaScript call syntax: `fn(param=value, ...)` -> `[{"fn": {"param": "<value source>"}}]`.

BFCL parses JavaScript outputs with tree-sitter and keeps each argument value as its source text (quotes
trimmed when the text starts and ends with the same quote), converted by type later (`convert.py`). This
recursive-descent parser covers the JavaScript expressions call arguments use (literals, template strings,
arrays, objects, member access, calls, `new`, arrow and function expressions, unary/binary/ternary operators).

The call is the first top-level expression statement that is a call expression; `name=value` arguments count,
a bare identifier or `true` lands under the key None, other positional arguments are ignored. Returns None when
no statement is a call (BFCL returns None too, which its format check rejects).
"""

from __future__ import annotations

import re

from agentic_verl.rewards.bfcl._tokens import Cursor, SyntaxFailure, tokenize

_ASSIGN_OPS = {"=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "**=", "<<=", ">>=", ">>>=", "&&=", "||=", "??="}
_BINARY_OPS = {"+", "-", "*", "/", "%", "**", "<", ">", "<=", ">=", "==", "!=", "===", "!==", "&&", "||", "??",
               "&", "|", "^", "<<"}
_BINARY_WORDS = {"instanceof", "in"}
_UNARY_WORDS = {"typeof", "void", "delete", "await"}


def parse_javascript_call(source: str, tree_sitter_recovery: bool = False) -> list[dict] | None:
    """`tree_sitter_recovery=True` also accepts a first argument that starts with a binary operator (`f(**opts, a=1)`),
    where tree-sitter's error recovery inserts the missing left operand and BFCL accepts the call."""
    simple = _simple_call(source)
    if simple is not None:
        return simple
    c = Cursor(tokenize(source, single_quote_kind="str", backticks=True), source, tree_sitter_recovery)
    statements = []
    while c.tok.kind != "eof":
        if c.at(";"):
            c.take()
            continue
        statements.append(_expression(c, allow_comma=True))
        if c.at(";"):
            c.take()
        elif c.tok.kind != "eof" and not c.tok.newline_before and not c.at("}"):
            raise SyntaxFailure(f"unexpected {c.tok.text!r} at {c.tok.start}")
    for kind, _start, _end, info in statements:
        if kind == "call":
            callee, args = info
            return [{source[callee[1] : callee[2]]: _arguments(args, source)}]
    return None


_NAME = r"[A-Za-z_$][A-Za-z0-9_$]*"
_SIMPLE_VALUE = r"\"[^\"\\\n]*\"|'[^'\\\n]*'|-?\d+(?:\.\d+)?(?![\w.$])|" + _NAME
_SIMPLE_ARG = re.compile(rf"\s*({_NAME})\s*=\s*({_SIMPLE_VALUE})\s*(?:,|\Z)")
_SIMPLE_CALL = re.compile(rf"\s*({_NAME}(?:\.{_NAME})*)\((.*)\)\s*;?\s*", re.DOTALL)
_NOT_A_VALUE = {"new", "function"} | _UNARY_WORDS  # words the parser reads as the start of an expression
_NOT_A_NAME = _NOT_A_VALUE | {"true"}


def _simple_call(source: str) -> list[dict] | None:
    """The common case, one call of `name=literal` / `name=identifier` arguments, read with two regular
    expressions to what the parser below gives for it; None for anything else (the parser decides)."""
    call = _SIMPLE_CALL.fullmatch(source)
    if call is None or call.group(1).split(".", 1)[0] in _NOT_A_VALUE:
        return None
    inner, pos, args = call.group(2), 0, {}
    match = _SIMPLE_ARG.match
    while pos < len(inner):
        arg = match(inner, pos)
        if arg is None:
            if inner[pos:].strip():
                return None
            break
        name, value = arg.groups()
        if name in args or name in _NOT_A_NAME or value in _NOT_A_VALUE:
            return None
        args[name] = value[1:-1] if value[0] in "\"'" else value
        pos = arg.end()
    return [{call.group(1): args}]


def _arguments(args: list, source: str) -> dict:
    result: dict = {}
    for kind, start, end, info in args:
        if kind == "assign":
            left, right = info
            name = source[left[1] : left[2]]
            value = source[right[1] : right[2]]
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
                value = value[1:-1]
        elif kind in ("ident", "true"):
            name, value = None, source[start:end]
        else:
            continue
        if name in result:
            raise SyntaxFailure("multiple arguments with the same name")
        result[name] = value
    return result


# A node is (kind, start, end, info): kind is call | assign | ident | true | other.


def _expression(c: Cursor, allow_comma: bool = False):
    node = _assignment(c)
    if allow_comma and c.at(","):
        while c.at(","):
            c.take()
            last = _assignment(c)
        node = ("other", node[1], last[2], None)
    return node


_SPECIAL_WORDS = {"new", "function", "async", "true"} | _UNARY_WORDS
_AFTER_OPERAND = {",", ")", "]", "}", ";"}


def _assignment(c: Cursor):
    start = c.tok
    # Fast paths for what call arguments mostly are, `name=` and a lone literal or name, with the node the full
    # descent below would build (an ident/true, str or num token followed by `,` `)` `]` `}` `;`).
    following = c.peek()
    if start.kind == "ident" and start.text not in _SPECIAL_WORDS and following.kind == "op":
        if following.text == "=":
            c.i += 2
            right = _assignment(c)
            return ("assign", start.start, right[2], (("ident", start.start, start.end, None), right))
        if following.text in _AFTER_OPERAND:
            c.i += 1
            return ("ident", start.start, start.end, None)
    elif start.kind in ("str", "num") and following.kind == "op" and following.text in _AFTER_OPERAND:
        c.i += 1
        return ("other", start.start, start.end, None)
    arrow = _try_arrow(c)
    if arrow is not None:
        return arrow
    if start.kind == "ident" and start.text == "async" and c.peek().kind == "ident":
        c.take()
        return _assignment(c)
    left = _conditional(c)
    if c.tok.kind == "op" and c.tok.text in _ASSIGN_OPS:
        if left[0] not in ("ident", "member", "pattern"):
            raise SyntaxFailure("invalid assignment target")
        c.take()
        right = _assignment(c)
        return ("assign", left[1], right[2], (left, right))
    return left


def _try_arrow(c: Cursor):
    """`x => body` or `(a, b) => body`; returns None (cursor untouched) when this is not an arrow function."""
    tok = c.tok
    if tok.kind == "ident" and c.peek().text == "=>":
        c.i += 2
        body = _arrow_body(c)
        return ("other", tok.start, body[2], None)
    if not c.at("("):
        return None
    depth, j = 0, c.i
    while j < len(c.tokens) - 1:
        t = c.tokens[j]
        if t.kind == "op" and t.text in "([{":
            depth += 1
        elif t.kind == "op" and t.text in ")]}":
            depth -= 1
            if depth == 0:
                break
        j += 1
    if depth != 0 or c.tokens[j + 1].text != "=>":
        return None
    c.i = j + 2
    body = _arrow_body(c)
    return ("other", tok.start, body[2], None)


def _arrow_body(c: Cursor):
    if c.at("{"):
        start = c.tok.start
        return ("other", start, _skip_block(c), None)
    return _assignment(c)


def _skip_block(c: Cursor) -> int:
    return c.skip_balanced("{", "}", "block")


def _conditional(c: Cursor):
    cond = _binary(c)
    if c.at("?"):
        c.take()
        _assignment(c)
        c.expect(":")
        other = _assignment(c)
        return ("other", cond[1], other[2], None)
    return cond


def _binary(c: Cursor):
    node = _unary(c)
    while (c.tok.kind == "op" and c.tok.text in _BINARY_OPS) or (c.tok.kind == "ident" and c.tok.text in _BINARY_WORDS):
        c.take()
        right = _unary(c)
        node = ("other", node[1], right[2], None)
    return node


def _unary(c: Cursor):
    tok = c.tok
    if (tok.kind == "op" and tok.text in ("-", "+", "!", "~", "++", "--")) or (
        tok.kind == "ident" and tok.text in _UNARY_WORDS
    ):
        c.take()
        operand = _unary(c)
        return ("other", tok.start, operand[2], None)
    return _postfix(c)


def _postfix(c: Cursor):
    node = _primary(c)
    while True:
        if c.at(".", "?."):
            c.take()
            name = c.take()
            if name.kind != "ident":
                raise SyntaxFailure(f"expected a property name at {name.start}")
            node = ("member", node[1], name.end, None)
        elif c.at("["):
            c.take()
            _expression(c, allow_comma=True)
            close = c.expect("]")
            node = ("member", node[1], close.end, None)
        elif c.at("("):
            args, close = _args(c)
            node = ("call", node[1], close.end, (node, args))
        elif c.tok.kind == "template" and not c.tok.newline_before:
            tok = c.take()
            node = ("other", node[1], tok.end, None)
        else:
            return node


def _args(c: Cursor):
    c.expect("(")
    args = []
    if c.quirks and c.tok.kind == "op" and c.tok.text in _BINARY_OPS - {"+", "-"}:
        c.take()  # BFCL (tree-sitter) reads `(**opts, ...)` as a binary expression with a missing left operand
        _unary(c)
        if c.at(","):
            c.take()
    while not c.at(")"):
        if c.at("..."):
            start = c.take()
            value = _assignment(c)
            args.append(("other", start.start, value[2], None))
        else:
            args.append(_assignment(c))
        if not c.at(","):
            break
        c.take()
    return args, c.expect(")")


def _primary(c: Cursor):
    tok = c.tok
    if tok.kind in ("str", "num", "template"):
        c.take()
        return ("other", tok.start, tok.end, None)
    if tok.kind == "ident":
        if tok.text == "new":
            c.take()
            callee = _primary(c)
            while c.at(".") or c.at("["):
                if c.at("."):
                    c.take()
                    end = c.take()
                    if end.kind != "ident":
                        raise SyntaxFailure("expected a name after '.'")
                    callee = ("member", callee[1], end.end, None)
                else:
                    c.take()
                    _expression(c, allow_comma=True)
                    callee = ("member", callee[1], c.expect("]").end, None)
            end = callee[2]
            if c.at("("):
                _, close = _args(c)
                end = close.end
            return ("other", tok.start, end, None)
        if tok.text == "function":
            c.take()
            if c.tok.kind == "ident":
                c.take()
            _args_params(c)
            return ("other", tok.start, _skip_block(c), None)
        c.take()
        return ("true" if tok.text == "true" else "ident", tok.start, tok.end, None)
    if c.at("("):
        c.take()
        _expression(c, allow_comma=True)
        close = c.expect(")")
        return ("other", tok.start, close.end, None)
    if c.at("["):
        c.take()
        while not c.at("]"):
            if c.at(","):
                c.take()
                continue
            if c.at("..."):
                c.take()
            _assignment(c)
            if not c.at(","):
                break
            c.take()
        close = c.expect("]")
        return ("pattern", tok.start, close.end, None)
    if c.at("{"):
        return ("pattern", tok.start, _object(c), None)
    raise SyntaxFailure(f"unexpected {tok.text or 'end of input'!r} at {tok.start}")


def _args_params(c: Cursor) -> None:
    c.expect("(")
    c.skip_balanced("([{", ")]}", "parameter list", depth=1)


def _object(c: Cursor) -> int:
    c.expect("{")
    while not c.at("}"):
        if c.at("..."):
            c.take()
            _assignment(c)
        else:
            key = c.tok
            if c.at("["):
                c.take()
                _assignment(c)
                c.expect("]")
            elif key.kind in ("ident", "str", "num"):
                c.take()
            else:
                raise SyntaxFailure(f"bad object key at {key.start}")
            if c.at(":"):
                c.take()
                _assignment(c)
            elif key.kind != "ident":
                raise SyntaxFailure(f"expected ':' at {c.tok.start}")
        if not c.at(","):
            break
        c.take()
    return c.expect("}").end
