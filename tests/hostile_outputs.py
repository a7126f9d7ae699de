"""Hostile model output as hypothesis strategies: the building blocks of the fuzz tests of loops, rewards and
evaluations (issue 38: "every model output is hostile input").

Every strategy draws *text a model could write* (or, for `token_ids`, token ids a model could sample); none of them
asserts anything. Compose them:

    from hostile_outputs import hostile_text, python_calls, cut_anywhere
    @given(hostile_text(extra=[python_calls()]))

- `numbers()`: out-of-range and non-finite literals (1e999, nan, 10**400, ...), as the model writes them;
- `control_text()`, `long_strings()`: NUL and control characters, 20,000-character strings;
- `brackets()`: unbalanced and deeply nested (500 levels) brackets, quotes and tags;
- `tag_imitations()`: our protocols' tags (rag_r1, hermes tool calls, chat-template tokens, think, gui clicks),
  alone, unbalanced, nested in each other, or wrapping other hostile text;
- `python_calls()`, `many_calls()`, `json_tool_calls()`, `clicks()`: call syntaxes the loops parse, with hostile
  function names and arguments, one to thousands at a time;
- `cut_anywhere(strategy)`: the same text cut at any character (an output that hit the token limit mid-call);
- `hostile_text()`: any mix of the above;
- `token_ids(tokenizer)`: raw token ids: lone bytes that decode to invalid UTF-8, special tokens alone, ids past
  the tokenizer's vocabulary (a model's embedding rows beyond it), mixed with encoded hostile text.
"""

from __future__ import annotations

import functools
import json

from hypothesis import strategies as st

# -- numbers ---------------------------------------------------------------------------------------
NUMBER_LITERALS = (
    "1e999", "-1e999", "1e-999", "inf", "-inf", "Infinity", "-Infinity", "nan", "NaN", "-nan",
    "float('inf')", "float('nan')", str(10**400), "-" + str(10**400), "9" * 5000, "0x" + "f" * 200,
    "1_000_000", "1e308", "-1e308", "2**10000", "10**10**10", "0.0000000000000000000000001", "-0", "0e0",
    "18446744073709551616", "-9223372036854775809", "1.7976931348623157e309", "True", "None", "1j", "1/0",
)


def numbers() -> st.SearchStrategy[str]:
    """A number as a model writes it: a literal from NUMBER_LITERALS, any float repr (nan, inf included), or an
    integer of up to ~400 digits."""
    return st.one_of(
        st.sampled_from(NUMBER_LITERALS),
        st.floats(allow_nan=True, allow_infinity=True).map(repr),
        st.integers(min_value=-(10**400), max_value=10**400).map(str),
    )


# -- strings ---------------------------------------------------------------------------------------
CONTROL_CHARACTERS = "".join(chr(c) for c in range(32)) + "\x7f\x85\u2028\u2029\ufeff\u200b\u202e\ufffd"


def control_text(max_size: int = 40) -> st.SearchStrategy[str]:
    """Short text with at least one NUL, control, bidi or zero-width character (NUL in a third of the draws)
    between printable text."""
    control = st.one_of(st.just("\x00"), st.sampled_from(CONTROL_CHARACTERS))
    around = st.text(max_size=max_size // 3)
    return st.builds(lambda a, c, b: a + "".join(c) + b, around, st.lists(control, min_size=1, max_size=max_size // 3),
                     around)


def long_strings(length: int = 20_000) -> st.SearchStrategy[str]:
    """A `length`-character string: one character or short unit repeated (letters, brackets, quotes, NUL, a
    multi-byte character, a tag), so its tokenisation stays cheap and its structure stays hostile."""
    units = st.sampled_from(["a", "(", "[", "{", "<", '"', "'", "\\", "\x00", "é", "漢", "0", ",", " ", "\n",
                             "<search>", "</answer>", "<tool_call>", "ab "])
    return units.map(lambda unit: (unit * (length // len(unit) + 1))[:length])


# -- brackets and tags -----------------------------------------------------------------------------
OPENERS, CLOSERS = "([{<", ")]}>"


def brackets(max_depth: int = 500) -> st.SearchStrategy[str]:
    """Unbalanced or deeply nested brackets: `depth` openers of one kind, then 0..depth closers (possibly of
    another kind), or a random string over brackets and quotes."""

    def nest(opener: str, closer: str, depth: int, closing: int) -> str:
        return opener * depth + "x" + closer * closing

    nested = st.builds(nest, st.sampled_from(OPENERS + "\"'"), st.sampled_from(CLOSERS + "\"'"),
                       st.integers(1, max_depth), st.integers(0, max_depth))
    return st.one_of(nested, st.text(st.sampled_from(OPENERS + CLOSERS + "\"',=:"), max_size=60))


# The tags and markers of our loops' protocols and of the chat templates they run in.
RAG_TAGS = ("<search>", "</search>", "<answer>", "</answer>", "<information>", "</information>")
THINK_TAGS = ("<think>", "</think>")
TOOL_TAGS = ("<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>", "<tools>", "</tools>")
CHAT_TOKENS = ("<|im_start|>", "<|im_end|>", "<|endoftext|>", "<|im_start|>user\n", "<|im_start|>assistant\n",
               "<|vision_start|>", "<|image_pad|>", "<|vision_end|>", "<|box_start|>", "<|box_end|>")
CLICK_MARKERS = ("pyautogui.click(", "click(", "x=", "y=", "<point>", "</point>", "[", "]")
ALL_TAGS = RAG_TAGS + THINK_TAGS + TOOL_TAGS + CHAT_TOKENS + CLICK_MARKERS


def tag_imitations(tags=ALL_TAGS, inner: st.SearchStrategy[str] | None = None) -> st.SearchStrategy[str]:
    """Tags used as the model pleases: a lone tag, an open/close pair around `inner` text (which may itself hold
    tags: `<search> <answer>x</answer> </search>`), a tag nested hundreds of times, or tags in a random order."""
    inner = inner if inner is not None else st.text(max_size=20)
    tag = st.sampled_from(tuple(tags))
    wrapped = st.builds(lambda t, body, close: f"{t}{body}{close}", tag, inner, st.sampled_from(tuple(tags) + ("",)))
    deep = st.builds(lambda t, n: t * n, tag, st.integers(2, 500))
    return st.one_of(tag, wrapped, deep, st.lists(tag, max_size=12).map("".join))


# -- call syntaxes ---------------------------------------------------------------------------------
def identifiers() -> st.SearchStrategy[str]:
    """Function and tool names: plausible ones, unknown ones, dotted, empty, keywords, and hostile text."""
    return st.one_of(
        st.sampled_from(["get_weather", "search", "cd", "ls", "click", "f", "unknown_tool", "os.system", "__import__",
                         "a.b.c", "", "lambda", "None", "print", "exec", "eval", "x" * 300]),
        st.from_regex(r"[A-Za-z_][A-Za-z0-9_.]{0,30}", fullmatch=True),
        control_text(max_size=10),
    )


def argument_values() -> st.SearchStrategy[str]:
    """An argument value as Python source: hostile numbers, quoted hostile strings, lists, nested brackets."""
    quoted = st.one_of(control_text(), st.text(max_size=30)).map(repr)
    return st.one_of(numbers(), quoted, brackets(max_depth=60), st.just("[1, 2,"), st.just("{'a': "),
                     long_strings(2_000).map(repr), st.sampled_from(["True", "None", "x", "f()", "...", "*a", "**k"]))


def python_calls() -> st.SearchStrategy[str]:
    """BFCL-style `[f(a=1), g(b='x')]` with hostile names and arguments; sometimes without the list brackets."""
    call = st.builds(lambda name, args: f"{name}({', '.join(f'{k}={v}' for k, v in args)})", identifiers(),
                     st.lists(st.tuples(st.from_regex(r"[a-z_]{1,8}", fullmatch=True), argument_values()),
                              max_size=4))
    return st.builds(lambda calls, listed: f"[{', '.join(calls)}]" if listed else ", ".join(calls),
                     st.lists(call, min_size=1, max_size=5), st.booleans())


def many_calls(max_calls: int = 3000) -> st.SearchStrategy[str]:
    """Hundreds to thousands of calls in one output: `[f(x=0), f(x=1), ...]` (python), or as many hermes
    `<tool_call>` blocks."""

    def python(name: str, n: int) -> str:
        return "[" + ", ".join(f"{name}(x={i})" for i in range(n)) + "]"

    def hermes(name: str, n: int) -> str:
        return "".join(f'<tool_call>\n{{"name": "{name}", "arguments": {{"query": "q{i}"}}}}\n</tool_call>\n'
                       for i in range(n))

    names = st.sampled_from(["search", "get_weather", "cd", "unknown_tool"])
    return st.one_of(st.builds(python, names, st.integers(100, max_calls)),
                     st.builds(hermes, names, st.integers(100, max_calls)))


def json_tool_calls() -> st.SearchStrategy[str]:
    """Hermes-format `<tool_call>{"name": ..., "arguments": ...}</tool_call>` blocks: valid JSON with hostile
    names and argument values, invalid JSON, non-object JSON, and missing or extra keys."""
    argument = st.one_of(numbers(), control_text().map(json.dumps),
                         st.just('{"query_list": []}'), st.just('{"query_list": ["a", 1e999]}'))
    body = st.one_of(
        st.builds(lambda name, key, value: f'{{"name": {json.dumps(name)}, '
                                           f'"arguments": {{"{key}": {value}}}}}',
                  identifiers(), st.sampled_from(["query", "query_list", "x", ""]), argument),
        st.sampled_from(['{"name": "search"}', '{"arguments": {}}', "[]", "null", "1e999", '{"name": 1}',
                         '{"name": "search", "arguments": "not json"}', '{"name": "search", "arguments": [1]}',
                         '{"name": "search", "arguments": {"query_list": "x"}}', "{", '{"name": "search",']),
        brackets(max_depth=80),
    )
    return st.builds(lambda b, closed: f"<tool_call>\n{b}\n" + ("</tool_call>" if closed else ""), body, st.booleans())


def clicks() -> st.SearchStrategy[str]:
    """Click answers with hostile coordinates: `pyautogui.click(x=1e999, y=nan)`, `click(3, ...)`, `[x, y]`."""
    coordinate = numbers()
    return st.one_of(
        st.builds(lambda x, y: f"pyautogui.click(x={x}, y={y})", coordinate, coordinate),
        st.builds(lambda x, y: f"click({x}, {y})", coordinate, coordinate),
        st.builds(lambda x, y: f"[{x}, {y}]", coordinate, coordinate),
        st.builds(lambda x, y: f"<point>{x} {y}</point>", coordinate, coordinate),
    )


def cut_anywhere(strategy: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    """The text of `strategy` cut at any character: an output that stopped mid-call (the token limit)."""
    return st.builds(lambda text, at: text[: int(len(text) * at)], strategy, st.floats(0.0, 1.0))


# -- everything together ---------------------------------------------------------------------------
def fragments(extra=()) -> st.SearchStrategy[str]:
    """One hostile piece of output (plus the caller's own strategies in `extra`)."""
    return st.one_of(numbers(), control_text(), brackets(), tag_imitations(), python_calls(), json_tool_calls(),
                     clicks(), st.text(max_size=40), *extra)


def hostile_text(extra=(), max_pieces: int = 6) -> st.SearchStrategy[str]:
    """Output made of up to `max_pieces` fragments, sometimes with a 20,000-character string or thousands of
    calls, sometimes cut anywhere."""
    body = st.lists(fragments(extra), min_size=1, max_size=max_pieces).map("".join)
    big = st.one_of(long_strings(), many_calls())
    with_big = st.builds(lambda a, b, c: a + b + c, body, big, body)
    text = st.one_of(body, body, body, with_big)
    return st.one_of(text, cut_anywhere(text))


# -- token ids -------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=8)
def _invalid_utf8_ids(tokenizer) -> tuple[int, ...]:
    """Ids of tokens that are one byte of a multi-byte UTF-8 sequence (they decode to U+FFFD alone)."""
    ids = tuple(i for i in range(min(len(tokenizer), 1024)) if "\ufffd" in tokenizer.decode([i]))
    if not ids:
        raise ValueError("this tokenizer has no byte tokens that decode to invalid UTF-8")
    return ids


def token_ids(tokenizer, max_pieces: int = 6, text: st.SearchStrategy[str] | None = None):
    """Token id lists a model could sample: runs of lone UTF-8 continuation/lead bytes (invalid UTF-8), special
    and added tokens alone or in a row (`<|im_end|>` mid-output, `<tool_call>` as one token), ids beyond the
    tokenizer (`len(tokenizer)` up to the model's padded vocabulary, which decode to nothing), any vocabulary id,
    and the encoding of `text` (default `hostile_text()`) cut at a token; up to `max_pieces` of them in a row."""
    invalid = st.sampled_from(_invalid_utf8_ids(tokenizer))
    special = st.sampled_from(sorted(set(tokenizer.all_special_ids) | set(tokenizer.get_added_vocab().values())))
    beyond = st.integers(len(tokenizer), len(tokenizer) + 255)  # Qwen2.5 pads its vocabulary to 151,936
    anything = st.integers(0, len(tokenizer) - 1)
    text = text if text is not None else hostile_text(max_pieces=3)

    def encode_cut(value: str, at: float) -> list[int]:
        ids = tokenizer.encode(value, add_special_tokens=False)
        return ids[: int(len(ids) * at) + 1]

    piece = st.one_of(st.lists(invalid, min_size=1, max_size=8), st.lists(special, min_size=1, max_size=4),
                      st.lists(beyond, min_size=1, max_size=3), st.lists(anything, min_size=1, max_size=8),
                      st.builds(encode_cut, text, st.floats(0.0, 1.0)))
    return st.lists(piece, max_size=max_pieces).map(lambda pieces: [i for p in pieces for i in p])
