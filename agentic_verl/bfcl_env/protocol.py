"""The BFCL environment server's wire format and its pure parts: request validation, how outputs are shown to the
model, how decoded calls become the call strings bfcl-eval's checker takes, and how simulator state becomes JSON.

Standard library only: the server imports this inside `.venv-bfcl`, the main package (the client, the agent loop,
data tools) imports it without bfcl-eval.

A decoded call is `{"name": "cd", "arguments": {"folder": "docs"}}` (what our BFCL decoder gives for `cd(folder=
'docs')`). Nothing here evaluates text: call strings are parsed with `ast` and accepted only when every argument is
a literal, and they are rendered from JSON values with `repr()` (the JSON value types all have literal reprs).

>>> render_call("mv", {"source": "a.txt", "destination": "tmp"})
"mv(source='a.txt', destination='tmp')"
>>> render_call("f", {"from": 1})  # a keyword that cannot be a Python keyword argument
"f(**{'from': 1})"
>>> parse_call_string("sort('final_report.pdf')")
('sort', ['final_report.pdf'], {})
>>> keyword_call("sort('final_report.pdf')", {"sort": ["file_name"]})
{'name': 'sort', 'arguments': {'file_name': 'final_report.pdf'}}
>>> format_output({"current_working_directory": "docs"}), format_output(3.5), format_output("done")
('{"current_working_directory": "docs"}', '3.5', 'done')
"""

from __future__ import annotations

import ast
import datetime
import decimal
import json
import keyword
import math
import re
from dataclasses import asdict, dataclass

TOKEN_ENV = "AGENTIC_VERL_BFCL_ENV_TOKEN"
DEFAULT_PORT = 8090
SERVER_NAME = "BFCL environment server"
ERROR_PREFIX = "Error during execution: "  # bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils
# The classes of BFCL's multi_turn categories (base, miss_func, miss_param, long_context). bfcl-eval also maps
# WebSearchAPI and the MemoryAPI_* classes, which belong to its agentic categories and need packages (a search
# client, sentence-transformers, faiss) that .venv-bfcl does not carry.
SERVED_CLASSES = ("GorillaFileSystem", "MathAPI", "MessageAPI", "TwitterAPI", "TicketAPI", "TradingBot", "TravelAPI",
                  "VehicleControlAPI")  # fmt: skip
_ENTRY_ID = re.compile(r"[A-Za-z0-9_.:-]{1,200}")  # bfcl puts the id into names it evaluates (after `[-./:]` -> `_`)


@dataclass(frozen=True)
class Limits:
    """What one server accepts (flags of `agentic-verl serve bfcl-env`). verl runs every trajectory of a rollout
    batch at once (train_batch_size x rollout.n sessions), hence the session default."""

    max_sessions: int = 4096
    idle_timeout_s: float = 900.0  # a session nobody touched for this long is closed (a crashed rollout's)
    max_body_bytes: int = 8 * 1024 * 1024
    max_calls: int = 128  # calls per /execute request

    def __post_init__(self):
        if self.max_sessions < 1 or self.idle_timeout_s <= 0 or self.max_body_bytes < 1024 or self.max_calls < 1:
            raise ValueError(f"bad limits: {self} (max_sessions >= 1, idle_timeout_s > 0, max_body_bytes >= 1024, "
                             "max_calls >= 1)")

    def describe(self) -> dict:
        return asdict(self)


def add_server_arguments(parser) -> None:
    """The server's flags (its own command line and `agentic-verl serve bfcl-env`, which passes them on)."""
    limits = Limits()
    parser.add_argument("--host", default="127.0.0.1",
                        help=f"bind address (default 127.0.0.1: loopback only; any other needs {TOKEN_ENV})")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT)
    parser.add_argument("--max-sessions", type=int, default=limits.max_sessions, help="open sessions at most")
    parser.add_argument("--idle-timeout-s", type=float, default=limits.idle_timeout_s,
                        help="a session untouched for this long is closed")
    parser.add_argument("--max-body-bytes", type=int, default=limits.max_body_bytes)
    parser.add_argument("--max-calls", type=int, default=limits.max_calls, help="calls per /execute request")
    parser.add_argument("--log-requests", action="store_true", help="log every request to stderr")


def limit_flags(args) -> list[str]:
    """The server's flags other than --host/--port for parsed `add_server_arguments` values (to start it in another
    process)."""
    argv = ["--max-sessions", str(args.max_sessions), "--idle-timeout-s", repr(args.idle_timeout_s),
            "--max-body-bytes", str(args.max_body_bytes), "--max-calls", str(args.max_calls)]
    return argv + (["--log-requests"] if args.log_requests else [])


class RequestError(Exception):
    """A request the server refuses: `status` (4xx) and a message that says what is wrong."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


# ---- requests -------------------------------------------------------------------------------------------------


def _reject_constant(name: str):
    raise ValueError(f"{name} is not a JSON number")


def parse_json(body: bytes):
    """The JSON value of a request body; RequestError(400) for empty, invalid UTF-8, invalid or too deep JSON, and
    NaN/Infinity (Python's json accepts them; they have no literal repr)."""
    if not body.strip():
        raise RequestError(400, "empty request body; expected a JSON object")
    try:
        return json.loads(body.decode("utf-8"), parse_constant=_reject_constant)
    except UnicodeDecodeError as exc:
        raise RequestError(400, f"request body is not UTF-8: {exc}") from None
    except RecursionError:
        raise RequestError(400, "request body nests JSON too deeply") from None
    except ValueError as exc:
        raise RequestError(400, f"request body is not valid JSON: {exc}") from None


def require(condition: bool, where: str, expected: str) -> None:
    if not condition:
        raise RequestError(422, f"{where}: expected {expected}")


def parse_object(value, where: str = "body") -> dict:
    require(isinstance(value, dict), where, "a JSON object")
    return value


def parse_classes(value, where: str = "involved_classes") -> list[str]:
    """A non-empty list of distinct served class names; 422 naming the unknown ones."""
    require(isinstance(value, list) and value and all(isinstance(c, str) for c in value), where,
            "a non-empty list of class names")
    unknown = [name for name in value if name not in SERVED_CLASSES]
    if unknown:
        raise RequestError(422, f"{where}: unknown class(es) {unknown}; served: {list(SERVED_CLASSES)}")
    require(len(set(value)) == len(value), where, "each class once")
    return list(value)


def parse_calls(value, where: str = "calls", max_calls: int | None = None) -> list[tuple[str, dict]]:
    """`[{"name": str, "arguments": {str: JSON}}]` -> [(name, arguments)]; 422 for anything else (a missing
    "arguments" is {}). Whether a name is a function of the session is decided when it runs (an error output)."""
    require(isinstance(value, list), where, 'a list of {"name": ..., "arguments": {...}} objects')
    if max_calls is not None and len(value) > max_calls:
        raise RequestError(422, f"{where}: {len(value)} calls in one request; the limit is {max_calls}")
    calls = []
    for index, call in enumerate(value):
        at = f"{where}[{index}]"
        require(isinstance(call, dict), at, 'an object {"name": ..., "arguments": {...}}')
        name, arguments = call.get("name"), call.get("arguments", {})
        require(isinstance(name, str) and name != "", f"{at}.name", "a non-empty string")
        require(isinstance(arguments, dict), f"{at}.arguments", "an object of keyword arguments")
        calls.append((name, arguments))
    return calls


def check_entry_id(value, where: str = "entry.id") -> str:
    require(isinstance(value, str) and _ENTRY_ID.fullmatch(value) is not None, where,
            "a BFCL-style id such as multi_turn_base_0 (letters, digits, _ . : -; at most 200 characters)")
    return value


def long_context_of(entry_id: str) -> bool:
    """What bfcl-eval's checker and inference derive from an id: long context for the `long_context` and
    `composite` categories (the id without its last `_N`)."""
    category = entry_id.rsplit("_", 1)[0]
    return "long_context" in category or "composite" in category


# ---- outputs --------------------------------------------------------------------------------------------------


def format_output(result) -> str:
    """A simulator method's result as BFCL's multi-turn inference shows it to the model (execute_multi_turn_func_call):
    a str as is, a dict as JSON (str() when it does not serialise), anything else str()."""
    if type(result) is str:  # noqa: E721 (exact type, as bfcl-eval tests it)
        return result
    if type(result) is dict:  # noqa: E721
        try:
            return json.dumps(result)
        except (TypeError, ValueError):
            return str(result)
    return str(result)


def error_output(exc_or_message) -> str:
    """BFCL's form of a failed call: `Error during execution: <str(exception)>`."""
    return ERROR_PREFIX + str(exc_or_message)


def oversized_call_output(size: int, max_body_bytes: int) -> str:
    """The error output of a call the client does not send: larger than any request the server accepts."""
    return error_output(f"the call is {size} bytes as JSON, more than the BFCL environment server accepts in one "
                        f"request ({max_body_bytes} bytes, --max-body-bytes); it was not run")


def unknown_function_output(name: str) -> str:
    """What BFCL shows for a name that is not a function of the question's classes (its `eval` raises NameError)."""
    return error_output(f"name {name!r} is not defined")


def to_jsonable(value, _path: tuple = ()):
    """Simulator state as JSON values: objects become their public attributes; a reference back to an object being
    converted (a directory's parent) is left out; datetimes, decimals and non-finite floats become strings."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return str(value)
    if id(value) in _path:
        return None
    path = (*_path, id(value))
    if isinstance(value, dict):
        return {str(k): to_jsonable(v, path) for k, v in value.items() if id(v) not in path}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [to_jsonable(v, path) for v in value]
    if hasattr(value, "__dict__"):
        return {k: to_jsonable(v, path) for k, v in vars(value).items() if not k.startswith("_") and id(v) not in path}
    return repr(value)


def public_state(instance) -> dict:
    """An instance's public attributes (what bfcl-eval's state checker compares), as JSON values."""
    return {k: to_jsonable(v) for k, v in vars(instance).items() if not k.startswith("_")}


# ---- calls on the wire (client side) --------------------------------------------------------------------------


def undefined_name(value) -> str | None:
    """The name bfcl-eval's executor fails on for an argument value, else None. BFCL writes a decoded call back as
    `name(key=repr(value))` and evaluates it: a non-finite float is written `inf` / `-inf` / `nan`, which is no
    literal but an undefined name, so the call fails with `NameError: name 'inf' is not defined` before it runs
    (the first such value in argument order names the error, as Python evaluates arguments left to right).

    >>> undefined_name({"folder": 1e999}), undefined_name([1, {"a": float("nan")}]), undefined_name({"b": 2})
    ('inf', 'nan', None)
    """
    stack = [value]
    while stack:  # iterative: a deeply nested value is no reason to raise
        item = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            return "nan" if math.isnan(item) else "inf"
        if isinstance(item, dict):
            stack.extend(reversed([v for pair in item.items() for v in pair]))
        elif isinstance(item, (list, tuple)):
            stack.extend(reversed(item))
    return None


def _string_keys(value):
    """Nested dict keys as strings, as BFCL writes every dict key of an argument (`'{k}': ...`); tuples as lists."""
    if isinstance(value, dict):
        return {str(k): _string_keys(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_string_keys(v) for v in value]
    return value


def wire_call(call: dict) -> dict:
    """A decoded call `{"name", "arguments"}` as the client sends it (/execute and /check), so that the server's
    outcome is bfcl-eval's for the same call: a call BFCL cannot even evaluate (a non-finite number among its
    arguments, `undefined_name`) travels as a call of the undefined name it fails on, which the server answers
    with BFCL's own error output (`Error during execution: name 'inf' is not defined`) and which changes no state;
    nested dict keys become strings, as BFCL writes them. JSON has no non-finite numbers (the server refuses them).

    >>> wire_call({"name": "cd", "arguments": {"folder": -1e999}})
    {'name': 'inf', 'arguments': {}}
    >>> wire_call({"name": "f", "arguments": {"d": {1: "a"}}})
    {'name': 'f', 'arguments': {'d': {'1': 'a'}}}
    """
    name = undefined_name(call.get("arguments"))
    if name is not None:
        return {"name": name, "arguments": {}}
    return {"name": call["name"], "arguments": _string_keys(call.get("arguments") or {})}


def call_batches(calls: list[dict], max_calls: int, max_body_bytes: int) -> list[list[int]]:
    """Indices of `calls` in consecutive batches of at most `max_calls` calls whose `{"calls": [...]}` body stays
    within `max_body_bytes` (the server's limits: one step may hold more calls than one request takes; BFCL runs them
    all, in order). A call too large for any request is a batch of its own, the caller's to refuse.

    >>> call_batches([{"name": "ls", "arguments": {}}] * 5, max_calls=2, max_body_bytes=1024)
    [[0, 1], [2, 3], [4]]
    """
    empty = len(json.dumps({"calls": []}))  # json.dumps' defaults, as the client sends bodies: ASCII, ", "
    batches, current, size = [], [], empty
    for index, call in enumerate(calls):
        length = len(json.dumps(call)) + 2  # + the separating ", "
        if current and (len(current) >= max_calls or size + length > max_body_bytes):
            batches.append(current)
            current, size = [], empty
        current.append(index)
        size += length
    if current:
        batches.append(current)
    return batches


# ---- call strings (what bfcl-eval's checker evaluates) -------------------------------------------------------


def _is_plain_keyword(name: str) -> bool:
    return name.isidentifier() and not keyword.iskeyword(name)


def _literal_repr(value, where: str) -> str:
    """repr() of a JSON value, checked to read back as the same literal (so the string carries data, never code)."""
    text = repr(value)
    try:
        same = ast.literal_eval(text) == value
    except (ValueError, SyntaxError, RecursionError, MemoryError):
        same = False
    if not same:
        raise ValueError(f"{where}: {type(value).__name__} value has no literal form")
    return text


def render_call(name: str, arguments: dict) -> str:
    """`name(key=repr(value), ...)` for a decoded call. `name` must be a plain identifier (the caller checks that it
    is one of the question's functions); keys that are not plain identifiers go through `**{...}`, which raises the
    same TypeError when run as calling the method with them does."""
    if not _is_plain_keyword(name):
        raise ValueError(f"{name!r} is not a function name")
    if all(isinstance(key, str) and _is_plain_keyword(key) for key in arguments):
        rendered = ", ".join(f"{key}={_literal_repr(value, f'{name}.{key}')}" for key, value in arguments.items())
    else:
        rendered = "**" + _literal_repr(dict(arguments), name)
    return f"{name}({rendered})"


def display_call(name: str, arguments: dict) -> str:
    """A decoded call as BFCL's decoder writes it back for its score files, `name(key=repr(value), ...)`: text to
    read, never to evaluate, so it takes any decoded call (`cd(folder=inf)`, a dotted name).

    >>> display_call("cd", {"folder": float("inf")}), display_call("os.system", {"command": "ls"})
    ('cd(folder=inf)', "os.system(command='ls')")
    """
    try:
        return render_call(name, arguments)
    except ValueError:  # no literal form, or not a plain name: BFCL's own text
        return f"{name}({', '.join(f'{key}={_safe_repr(value)}' for key, value in arguments.items())})"


def _safe_repr(value) -> str:
    try:
        return repr(value)
    except (ValueError, RecursionError):  # an int of more than 4,300 digits; a container nested too deeply
        return f"<{type(value).__name__} without a repr>"


def parse_call_string(text: str) -> tuple[str, list, dict]:
    """(name, positional values, keyword values) of a BFCL call string such as a ground truth's `sort('a.txt')`;
    ValueError unless it is one call of a plain name whose arguments are all literals."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise ValueError(f"{text[:200]!r} is not a call: {type(exc).__name__}") from None
    call = tree.body
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name):
        raise ValueError(f"{text[:200]!r} is not a call of a plain function name")
    try:
        args = [ast.literal_eval(node) for node in call.args]
        if any(kw.arg is None for kw in call.keywords):
            raise ValueError("**kwargs")
        kwargs = {kw.arg: ast.literal_eval(kw.value) for kw in call.keywords}
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
        raise ValueError(f"{text[:200]!r}: every argument must be a literal") from None
    return call.func.id, args, kwargs


def render_parsed(name: str, args: list, kwargs: dict) -> str:
    """A parsed call string written back from its literals (what the server hands bfcl-eval instead of the text
    it received)."""
    parts = [_literal_repr(value, name) for value in args]
    parts += [f"{key}={_literal_repr(value, f'{name}.{key}')}" for key, value in kwargs.items()]
    return f"{name}({', '.join(parts)})"


def keyword_call(text: str, parameter_order: dict[str, list[str]]) -> dict:
    """A BFCL call string as a decoded call `{"name", "arguments"}`, its positional arguments named by
    `parameter_order[name]` (the parameter names in the function doc's order, which is the methods' signature
    order in bfcl-eval 2026.3.23's multi-turn docs). For ground truths written positionally (`sort('a.txt')`)."""
    name, args, kwargs = parse_call_string(text)
    if args:
        order = parameter_order.get(name)
        if order is None or len(order) < len(args):
            raise ValueError(f"{text[:200]!r}: cannot name its positional arguments (parameters: {order})")
        kwargs = {**dict(zip(order[: len(args)], args, strict=True)), **kwargs}
    return {"name": name, "arguments": kwargs}
