"""Java call syntax: `Class.method(param=value, ...)` -> `[{"Class.method": {"param": "<value source>"}}]`.

BFCL parses Java outputs with tree-sitter and keeps each argument value as text (converted by type later, see
`convert.py`). This recursive-descent parser covers the Java expressions a call argument uses (literals, names,
field access, method calls, `new T[]{...}`, `new T<...>(...)`, unary/binary operators, lambdas, class literals)
and renders values the way BFCL's extraction does:

- a top-level string or char literal loses its quotes (escapes are kept as written);
- identifiers, class literals and method invocations are the source text as written;
- `new T[]{...}` is `new T[]` + the initializer, `new T(args)` is `new T(a, b)` (a class body `{{ put(..); }}`
  is dropped, as BFCL drops it);
- anything else is its tokens joined without spaces (`1 + 2` -> `1+2`).

Only `name=value` arguments count; a bare identifier or class literal argument lands under the key None.
The first method invocation of the program (pre-order) is the call; a statement may omit its final `;`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from agentic_verl.rewards.bfcl._tokens import Cursor, SyntaxFailure, Token, tokenize

_ASSIGN_OPS = {"=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>=", ">>>="}
_BINARY_OPS = {"+", "-", "*", "/", "%", "<", ">", "<=", ">=", "==", "!=", "&&", "||", "&", "|", "^", "<<"}
_LITERAL_WORDS = {"true", "false", "null", "this"}


@dataclass
class Node:
    kind: str  # string | char | ident | class_literal | invocation | array_creation | object_creation | assign | other
    start: int
    end: int
    children: list = field(default_factory=list)  # Nodes and Tokens in source order
    extra: dict = field(default_factory=dict)


def parse_java_call(source: str, tree_sitter_recovery: bool = False) -> list[dict] | dict:
    """Return `[{name: {param: text}}]`, or `{}` when the program has no method call (as BFCL does).

    `tree_sitter_recovery=True` also accepts `[method(...)]` (from a doubly bracketed output `[[method(...)]]`), which
    tree-sitter's error recovery sometimes reads as an array access with a missing array name, so BFCL accepts
    it for some names and not others (`[f(a=1)]` fails, `[f(a=1, b=2)]` passes); we always reject it."""
    cursor = Cursor(tokenize(source, single_quote_kind="char", backticks=False), source)
    if tree_sitter_recovery and cursor.at("["):
        cursor.take()
        inner = _expression(cursor)
        cursor.expect("]")
        if cursor.at(";"):
            cursor.take()
        if cursor.tok.kind != "eof" or inner.kind != "invocation":
            raise SyntaxFailure("bracketed Java call")
        return [{inner.extra["name"]: _arguments(inner, source)}]
    statements = []
    while cursor.tok.kind != "eof":
        if cursor.at(";"):
            cursor.take()
            continue
        statements.append(_expression(cursor))
        if cursor.tok.kind != "eof":
            cursor.expect(";")
    for statement in statements:
        call = _first_invocation(statement)
        if call is not None:
            return [{call.extra["name"]: _arguments(call, source)}]
    return {}


def _first_invocation(node):
    if not isinstance(node, Node):
        return None
    if node.kind == "invocation":
        return node
    for child in node.children:
        found = _first_invocation(child)
        if found is not None:
            return found
    return None


def _arguments(call: Node, source: str) -> dict:
    arguments: dict = {}
    for arg in call.extra["args"]:
        if arg.kind == "assign":
            name_node, value = arg.children[0], arg.children[2]
            name, text = source[name_node.start : name_node.end], render(value, source, nested=False)
        elif arg.kind in ("ident", "class_literal"):
            name, text = None, source[arg.start : arg.end]
        else:
            continue  # BFCL ignores other positional arguments
        if name in arguments:
            raise SyntaxFailure("multiple arguments with the same name")
        arguments[name] = text
    return arguments


def render(node, source: str, nested: bool = True) -> str:
    if isinstance(node, Token):
        return node.text
    kind = node.kind
    if kind in ("string", "char"):
        text = source[node.start : node.end]
        return text if nested else text[1:-1]
    if kind in ("ident", "class_literal", "invocation"):
        return source[node.start : node.end]
    if kind == "array_creation":
        return f"new {render(node.extra['type'], source)}[]{render(node.extra['value'], source)}"
    if kind == "object_creation":
        args = ", ".join(render(arg, source) for arg in node.extra["args"])
        return f"new {render(node.extra['type'], source)}({args})"
    return "".join(render(child, source) for child in node.children)


def _span(children: list, kind: str = "other", **extra) -> Node:
    return Node(kind, children[0].start, children[-1].end, children, extra)


def _expression(c: Cursor) -> Node:
    tok = c.tok
    if tok.kind == "ident" and c.peek().text == "->":  # x -> body
        arrow = c.peek()
        c.i += 2
        body = _expression(c)
        return _span([Node("ident", tok.start, tok.end), arrow, body])
    left = _ternary(c)
    if c.tok.kind == "op" and c.tok.text in _ASSIGN_OPS:
        if left.kind not in ("ident", "other") or (left.kind == "other" and not _is_field_access(left)):
            raise SyntaxFailure("invalid assignment target")
        op = c.take()
        right = _expression(c)
        return _span([left, op, right], kind="assign")
    return left


def _is_field_access(node: Node) -> bool:
    return node.extra.get("field_access", False)


def _ternary(c: Cursor) -> Node:
    cond = _binary(c)
    if c.at("?"):
        q = c.take()
        then = _expression(c)
        colon = c.expect(":")
        other = _expression(c)
        return _span([cond, q, then, colon, other])
    return cond


def _binary(c: Cursor) -> Node:
    parts = [_unary(c)]
    while c.tok.kind == "op" and c.tok.text in _BINARY_OPS or c.at("instanceof"):
        parts.append(c.take())
        parts.append(_unary(c))
    return parts[0] if len(parts) == 1 else _span(parts)


def _unary(c: Cursor) -> Node:
    if c.tok.kind == "op" and c.tok.text in ("-", "+", "!", "~"):
        op = c.take()
        return _span([op, _unary(c)])
    return _postfix(c)


def _postfix(c: Cursor) -> Node:
    node = _primary(c)
    while True:
        if c.at("."):
            dot = c.take()
            name = c.tok
            if name.kind != "ident":
                raise SyntaxFailure(f"expected a name after '.' at {name.start}")
            c.take()
            if name.text == "class":
                node = Node("class_literal", node.start, name.end, [node, dot, name])
            elif c.at("("):
                args, close = _args(c)
                obj = c.source[node.start : node.end]
                node = Node("invocation", node.start, close.end, [node, dot, *args],
                            {"name": f"{obj}.{name.text}", "args": args})
            else:
                node = Node("other", node.start, name.end, [node, dot, name], {"field_access": True})
        elif c.at("["):
            open_ = c.take()
            index = _expression(c)
            close = c.expect("]")
            node = _span([node, open_, index, close])
        else:
            return node


def _args(c: Cursor) -> tuple[list[Node], Token]:
    c.expect("(")
    args = []
    if not c.at(")"):
        args.append(_expression(c))
        while c.at(","):
            c.take()
            args.append(_expression(c))
    return args, c.expect(")")


def _primary(c: Cursor) -> Node:
    tok = c.tok
    if tok.kind == "str":
        c.take()
        return Node("string", tok.start, tok.end)
    if tok.kind == "char":
        c.take()
        return Node("char", tok.start, tok.end)
    if tok.kind == "num":
        c.take()
        return _span([tok])
    if tok.kind == "ident":
        if tok.text == "new":
            return _creation(c)
        c.take()
        if tok.text in _LITERAL_WORDS:
            return _span([tok])
        if c.at("("):
            args, close = _args(c)
            return Node("invocation", tok.start, close.end, [*args], {"name": tok.text, "args": args})
        return Node("ident", tok.start, tok.end)
    raise SyntaxFailure(f"unexpected {tok.text or 'end of input'!r} at {tok.start}")


def _type(c: Cursor) -> Node:
    parts = []
    while True:
        tok = c.tok
        if tok.kind != "ident":
            raise SyntaxFailure(f"expected a type name at {tok.start}")
        parts.append(c.take())
        if c.at("<"):
            parts.append(c.take())
            while not c.at(">"):
                if c.at("?"):
                    parts.append(c.take())
                    if c.at("extends", "super"):
                        parts.append(c.take())
                        parts.append(_type(c))
                else:
                    parts.append(_type(c))
                if not c.at(","):
                    break
                parts.append(c.take())
            parts.append(c.expect(">"))
        if c.at(".") and c.peek().kind == "ident":
            parts.append(c.take())
            continue
        return _span(parts)


def _creation(c: Cursor) -> Node:
    new = c.take()
    type_node = _type(c)
    if c.at("["):
        dims = []
        while c.at("["):
            dims.append(c.take())
            if not c.at("]"):
                raise SyntaxFailure("array creation with a size has no initializer")  # BFCL crashes here
            dims.append(c.take())
        value = _initializer(c)
        return Node("array_creation", new.start, value.end, [type_node, *dims, value],
                    {"type": type_node, "value": value})
    args, close = _args(c)
    end = close.end
    if c.at("{"):
        end = _skip_braces(c)
    return Node("object_creation", new.start, end, [type_node, *args], {"type": type_node, "args": args})


def _initializer(c: Cursor) -> Node:
    parts = [c.expect("{")]
    while not c.at("}"):
        parts.append(_initializer(c) if c.at("{") else _expression(c))
        if not c.at(","):
            break
        parts.append(c.take())
    parts.append(c.expect("}"))
    return _span(parts)


def _skip_braces(c: Cursor) -> int:
    """Skip an anonymous class body (`{{ put("k", 1); }}`), which BFCL's rendering drops."""
    return c.skip_balanced("{", "}", "class body")
