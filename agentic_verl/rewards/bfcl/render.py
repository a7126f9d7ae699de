"""Render calls as model text in BFCL's prompting format: the inverse of `decode` (gold outputs, SFT targets).

`gold_calls(possible_answer)` picks one accepted value per parameter (the first option that is not "", leaving
out parameters whose first option is "" when `omit_optional`), and `render_calls` writes them in the
question's language. Java and JavaScript values are written so BFCL's text extraction and type conversion give
back the chosen value (e.g. a Java HashMap or array is written inside a '...' literal, because BFCL drops an
anonymous class body and keeps the quotes of array items).

>>> render_calls([{"f": {"a": 1, "b": "x"}}])
"[f(a=1, b='x')]"
>>> functions = [{"name": "f", "parameters": {"properties": {"n": {"type": "long"}, "s": {"type": "String"}}}}]
>>> render_calls([{"f": {"n": 5, "s": "hi"}}], "java", functions)
'[f(n=5L, s="hi")]'
"""

from __future__ import annotations

import json
import re

_IDENTIFIER = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")


def _choice(options: list, index: int = 0):
    real = [option for option in options if option != ""]
    return real[index % len(real)] if real else ""


def gold_value(options, index: int = 0):
    """One accepted value from a possible-answer option list (dicts and lists of dicts resolved recursively)."""
    value = _choice(options, index) if isinstance(options, list) else options
    if isinstance(value, dict):
        return {k: gold_value(v, index) for k, v in value.items() if not (isinstance(v, list) and _choice(v) == "")}
    if isinstance(value, list) and value and all(isinstance(item, dict) for item in value):
        return [gold_value([item], index) for item in value]
    return value


def gold_calls(possible_answer: list[dict], functions: list[dict] | None = None, omit_optional: bool = True,
               index: int = 0) -> list[dict]:
    """One accepted call per possible answer. With `omit_optional`, a parameter whose options include "" is left
    out unless the function's schema lists it as required (BFCL's data has a few such parameters)."""
    required = {f.get("name"): set(f.get("parameters", {}).get("required", ())) for f in functions or []}
    calls = []
    for answer in possible_answer:
        (name, params), = answer.items()
        args = {}
        for param, options in params.items():
            if omit_optional and "" in options and param not in required.get(name, ()):
                continue
            if not [o for o in options if o != ""]:
                continue
            args[param] = gold_value(options, index)
        calls.append({name: args})
    return calls


def render_calls(calls: list[dict], language: str = "python", functions: list[dict] | None = None) -> str:
    """`[{name: {param: value}}]` -> `[name(param=value, ...), ...]` in Python, Java or JavaScript syntax."""
    schemas = {f["name"]: f.get("parameters", {}).get("properties", {}) for f in functions or []}
    parts = []
    for call in calls:
        (name, args), = call.items()
        props = schemas.get(name, {})
        rendered = []
        for param, value in args.items():
            schema = props.get(param, {})
            if language == "java":
                text = java_text(value, schema.get("type", "any"), schema.get("items", {}).get("type"))
            elif language == "javascript":
                text = js_text(value, schema.get("type", "any"), schema.get("items", {}).get("type"))
            else:
                text = repr(value)
            rendered.append(f"{param}={text}")
        parts.append(f"{name}({', '.join(rendered)})")
    return "[" + ", ".join(parts) + "]"


def _scalar_literal(value) -> str:
    """null, true / false, a number or a double-quoted string: a scalar as Java and JavaScript both write it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    return json.dumps(str(value))


def java_text(value, java_type: str, item_type: str | None = None) -> str:
    if isinstance(value, str) and java_type != "char":
        return _java_string(value, java_type == "String")
    if java_type == "char":
        return f"'{value}'"
    if java_type == "any":
        return _scalar_literal(value)
    if java_type == "boolean":
        return "true" if value else "false"
    if java_type == "long":
        return f"{value}L"
    if java_type == "float":
        return f"{value}f"
    if java_type in ("integer", "byte", "short", "double"):
        return repr(value)
    if java_type in ("Array", "ArrayList", "HashMap") and not isinstance(value, (list, tuple, dict)):
        return _scalar_literal(value)
    if java_type == "Array":
        items = ", ".join(str(item) if item_type in ("String", "char", "any") else java_text(item, item_type or "any")
                          for item in value)  # fmt: skip
        return f"'new {_java_box(item_type)}[]{{{items}}}'"
    if java_type == "ArrayList":
        items = ", ".join(json.dumps(str(item)) if item_type in ("String", "char") else
                          (str(item) if item_type == "any" else java_text(item, item_type or "any"))
                          for item in value)  # fmt: skip
        return f"new ArrayList<>(Arrays.asList({items}))"
    if java_type == "HashMap":
        pairs = value.items() if isinstance(value, dict) else enumerate(value)
        puts = " ".join(f"put({json.dumps(str(k))}, {_scalar_literal(v)});" for k, v in pairs)
        return f"'new HashMap<String, Object>() {{{{ {puts} }}}}'"
    return _scalar_literal(value)


def _java_string(value: str, declared_string: bool) -> str:
    """A string value (or a variable name where another type was declared) that BFCL's extraction gives back."""
    if not declared_string and _IDENTIFIER.fullmatch(value):
        return value
    if not declared_string and value.startswith("new "):
        from agentic_verl.rewards.bfcl._java import parse_java_call

        try:  # an expression such as `new InetSocketAddress("10.0.0.1", 80)`, if it renders back unchanged
            call = parse_java_call(f"f(x={value})")
            if call and call[0]["f"].get("x") == value:
                return value
        except ValueError:
            pass
    if '"' in value and "'" not in value and "\\" not in value and "\n" not in value:
        return f"'{value}'"  # BFCL strips a quoted literal's quotes but keeps escapes, so avoid escaping
    return json.dumps(value)


def _java_box(item_type: str | None) -> str:
    return {"integer": "int", "long": "long", "float": "float", "double": "double", "boolean": "boolean",
            "char": "char"}.get(item_type or "", "String")  # fmt: skip


def js_text(value, js_type: str, item_type: str | None = None) -> str:
    if isinstance(value, str) and js_type not in ("String", "any"):
        return value if _IDENTIFIER.fullmatch(value) else json.dumps(value)  # a variable name
        return json.dumps(value)
    if js_type == "any":
        return value if isinstance(value, str) and _IDENTIFIER.fullmatch(value) else _js_literal(value)
    if js_type == "Bigint":
        return f"{value}n"
    if js_type in ("array", "dict") and not isinstance(value, (list, tuple, dict)):
        return _js_literal(value)
    if js_type == "array":
        return "[" + ", ".join(js_text(item, item_type or "any") if item_type else _js_literal(item)
                               for item in value) + "]"  # fmt: skip
    return _js_literal(value)


def _js_literal(value) -> str:
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_js_literal(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(str(k))}: {_js_literal(v)}" for k, v in value.items()) + "}"
    return _scalar_literal(value)
