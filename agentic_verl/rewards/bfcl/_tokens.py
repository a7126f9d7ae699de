"""A small tokenizer shared by the Java and JavaScript call parsers (`_java.py`, `_javascript.py`), and the errors
every decoder raises (`DecodeError`; `SyntaxFailure` for text that is not the language's syntax)."""

from __future__ import annotations

import re
from typing import NamedTuple


class DecodeError(ValueError):
    """The text is not a call list in the expected format."""


class SyntaxFailure(DecodeError):
    """The text is not a call in the language's syntax (BFCL's tree-sitter parse reports an ERROR)."""


class Token(NamedTuple):
    kind: str  # str | char | template | num | ident | op | eof
    text: str
    start: int
    end: int
    newline_before: bool = False


MAX_DEPTH = 100  # deeper bracket nesting is a syntax failure: keeps the recursive parsers' time and stack bounded
_PUNCT = sorted(
    "... >>>= >>> === !== **= <<= >>= ?. ?? -> => == != <= >= && || ++ -- += -= *= /= %= &= |= ^= ** << "
    "( ) [ ] { } , ; . = + - * / % < > ! ~ ? : & | ^ @".split(),
    key=len,
    reverse=True,
)
_NUMBER = r"0[xX][0-9a-fA-F_]+[lLn]?|0[bB][01_]+[lLn]?|(?:\d[\d_]*(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?[fFdDlLn]?"
_TOKEN = re.compile(
    r"(?P<space>(?:\s+|//[^\n]*|/\*.*?\*/)+)"
    r"|(?P<open_comment>/\*)"  # only reached when the comment is never closed
    r'|(?P<dq>"(?:[^"\\\n]|\\.)*")'
    r"|(?P<sq>'(?:[^'\\\n]|\\.)*')"
    r"|(?P<bt>`(?:[^`\\]|\\.)*`)"
    rf"|(?P<num>{_NUMBER})"
    r"|(?P<ident>[A-Za-z_$\u0080-\uffff][A-Za-z0-9_$\u0080-\uffff]*)"
    r"|(?P<op>" + "|".join(re.escape(p) for p in _PUNCT) + ")",
    re.DOTALL,
)

_OPEN = frozenset("([{")
_CLOSE = frozenset(")]}")


def tokenize(source: str, *, single_quote_kind: str, backticks: bool) -> list[Token]:
    """Split `source` into tokens; raises SyntaxFailure on an unterminated literal or an unknown character.

    single_quote_kind: "char" (Java: 'c' is a character literal) or "str" (JavaScript).
    """
    tokens: list[Token] = []
    append = tokens.append
    make = tuple.__new__  # Token(...) without NamedTuple's Python-level __new__ (a third of the time)
    kinds = {"dq": "str", "sq": single_quote_kind, "bt": "template" if backticks else None}
    i, n = 0, len(source)
    newline = False
    depth = 0
    for m in _TOKEN.finditer(source):
        start, end = m.span()
        kind = m.lastgroup
        if start != i or kind == "open_comment":
            raise SyntaxFailure(f"unexpected or unterminated {source[i]!r} at {i}")
        i = end
        if kind == "space":
            newline = newline or "\n" in m.group()
            continue
        text = m.group()
        if kind == "op":
            if text in _OPEN:
                depth += 1
                if depth > MAX_DEPTH:
                    raise SyntaxFailure(f"brackets nested deeper than {MAX_DEPTH}")
            elif text in _CLOSE:
                depth -= 1
        elif kind in kinds:
            kind = kinds[kind]
            if kind is None:
                raise SyntaxFailure(f"unexpected '`' at {start}")
        append(make(Token, (kind, text, start, end, newline)))
        newline = False
    if i != n:
        raise SyntaxFailure(f"unexpected or unterminated {source[i]!r} at {i}")
    tokens.append(Token("eof", "", n, n, newline))
    return tokens


class Cursor:
    """A position in the token list with the few helpers recursive-descent parsers need."""

    def __init__(self, tokens: list[Token], source: str, quirks: bool = False):
        self.tokens = tokens
        self.source = source
        self.i = 0
        self.quirks = quirks  # reproduce a documented BFCL (tree-sitter) behaviour; agreement benchmark only

    @property
    def tok(self) -> Token:
        return self.tokens[self.i]

    def peek(self, ahead: int = 1) -> Token:
        return self.tokens[min(self.i + ahead, len(self.tokens) - 1)]

    def at(self, *texts: str) -> bool:
        tok = self.tokens[self.i]
        return tok.kind in ("op", "ident") and tok.text in texts

    def take(self) -> Token:
        tok = self.tokens[self.i]
        if tok.kind != "eof":
            self.i += 1
        return tok

    def expect(self, text: str) -> Token:
        if not self.at(text):
            raise SyntaxFailure(f"expected {text!r} at {self.tok.start}, found {self.tok.text!r}")
        return self.take()

    def skip_balanced(self, opens: str, closes: str, what: str, depth: int = 0) -> int:
        """Take tokens until the brackets are balanced again (`depth`: how many are open already); the end offset
        of the closing one. Only operator tokens among the characters `opens` / `closes` count; the end of input
        first is SyntaxFailure("unclosed `what`")."""
        while True:
            tok = self.take()
            if tok.kind == "eof":
                raise SyntaxFailure(f"unclosed {what}")
            if tok.kind == "op" and tok.text in opens:
                depth += 1
            elif tok.kind == "op" and tok.text in closes:
                depth -= 1
                if depth == 0:
                    return tok.end
