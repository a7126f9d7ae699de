"""A small tokenizer shared by the Java and JavaScript call parsers (`_java.py`, `_javascript.py`)."""

from __future__ import annotations

import re
from dataclasses import dataclass


class SyntaxFailure(ValueError):
    """The text is not a call in the language's syntax (BFCL's tree-sitter parse reports an ERROR)."""


@dataclass(frozen=True)
class Token:
    kind: str  # str | char | template | num | ident | op | eof
    text: str
    start: int
    end: int
    newline_before: bool = False


_PUNCT = sorted(
    "... >>>= >>> === !== **= <<= >>= ?. ?? -> => == != <= >= && || ++ -- += -= *= /= %= &= |= ^= ** << "
    "( ) [ ] { } , ; . = + - * / % < > ! ~ ? : & | ^ @".split(),
    key=len,
    reverse=True,
)
_NUMBER = re.compile(
    r"0[xX][0-9a-fA-F_]+[lLn]?|0[bB][01_]+[lLn]?|(?:\d[\d_]*(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?[fFdDlLn]?"
)
_IDENT = re.compile(r"[A-Za-z_$\u0080-\uffff][A-Za-z0-9_$\u0080-\uffff]*")
_SPACE = re.compile(r"(?:\s+|//[^\n]*|/\*.*?\*/)+", re.DOTALL)


def tokenize(source: str, *, single_quote_kind: str, backticks: bool) -> list[Token]:
    """Split `source` into tokens; raises SyntaxFailure on an unterminated literal or an unknown character.

    single_quote_kind: "char" (Java: 'c' is a character literal) or "str" (JavaScript).
    """
    tokens: list[Token] = []
    i, n = 0, len(source)
    newline = False
    while i < n:
        space = _SPACE.match(source, i)
        if space:
            newline = newline or "\n" in space.group(0)
            i = space.end()
            continue
        ch = source[i]
        if ch in "\"'" or (ch == "`" and backticks):
            end = _string_end(source, i, ch)
            kind = "str" if ch == '"' else (single_quote_kind if ch == "'" else "template")
            tokens.append(Token(kind, source[i:end], i, end, newline))
        elif ch.isdigit() or (ch == "." and i + 1 < n and source[i + 1].isdigit()):
            end = _NUMBER.match(source, i).end()
            tokens.append(Token("num", source[i:end], i, end, newline))
        elif _IDENT.match(source, i):
            end = _IDENT.match(source, i).end()
            tokens.append(Token("ident", source[i:end], i, end, newline))
        else:
            for punct in _PUNCT:
                if source.startswith(punct, i):
                    end = i + len(punct)
                    tokens.append(Token("op", punct, i, end, newline))
                    break
            else:
                raise SyntaxFailure(f"unexpected character {ch!r} at {i}")
        newline = False
        i = tokens[-1].end
    tokens.append(Token("eof", "", n, n, newline))
    return tokens


def _string_end(source: str, start: int, quote: str) -> int:
    i, n = start + 1, len(source)
    while i < n:
        ch = source[i]
        if ch == "\\":
            i += 2
            continue
        if ch == quote:
            return i + 1
        if ch == "\n" and quote != "`":
            break
        i += 1
    raise SyntaxFailure(f"unterminated {quote} literal at {start}")


class Cursor:
    """A position in the token list with the few helpers recursive-descent parsers need."""

    def __init__(self, tokens: list[Token], source: str):
        self.tokens = tokens
        self.source = source
        self.i = 0

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
