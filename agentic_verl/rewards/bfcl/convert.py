"""BFCL's type conversion for Java and JavaScript: argument values arrive as source text and are converted by
the parameter's declared type before checking. Text that does not fit the type stays a string (and then fails
the type or value check).

>>> java_value("5L", "long"), java_value("1.5f", "float"), java_value("new int[]{1,2}", "Array", "integer")
(5, 1.5, [1, 2])
>>> js_value("[1, 2]", "array", "integer"), js_value("true", "Boolean"), js_value("'x'", "String")
([1, 2], True, 'x')
"""

from __future__ import annotations

import re

JAVA_TYPES = {
    "byte": int, "short": int, "integer": int, "float": float, "double": float, "long": int, "boolean": bool,
    "char": str, "Array": list, "ArrayList": list, "Set": set, "HashMap": dict, "Hashtable": dict,
    "Queue": list, "Stack": list, "String": str, "any": str,
}  # fmt: skip
JS_TYPES = {
    "String": str, "integer": int, "float": float, "Bigint": int, "Boolean": bool, "dict": dict, "array": list,
    "any": str,
}  # fmt: skip
NESTED_TYPES = ("Array", "ArrayList", "array")  # the container types whose items' type is converted too


class UnsupportedType(ValueError):
    """A declared type BFCL does not convert (Set, Hashtable, Queue, Stack, or unknown)."""


_INT = re.compile(r"-?\d+")
_JAVA_FLOAT = re.compile(r"-?\d+(\.\d+)?([eE][+-]?\d+)?[fF]")
_JAVA_DOUBLE = re.compile(r"-?\d+(\.\d+)?([eE][+-]?\d+)?")
_JAVA_LONG = re.compile(r"-?\d+[lL]")


def _full(pattern: re.Pattern, text: str) -> bool:
    # `re.match(r"^...$")` semantics: `$` also matches before a trailing newline.
    match = pattern.match(text)
    return match is not None and (match.end() == len(text) or (match.end() == len(text) - 1 and text[-1] == "\n"))


def java_value(text: str, java_type: str, item_type: str | None = None):
    if java_type not in JAVA_TYPES:
        raise UnsupportedType(java_type)
    if java_type in ("byte", "short", "integer"):
        return int(text) if _full(_INT, text) else text
    if java_type == "float":
        return float(text.rstrip("\n")[:-1]) if _full(_JAVA_FLOAT, text) else text
    if java_type == "double":
        return float(text) if _full(_JAVA_DOUBLE, text) else text
    if java_type == "long":
        return int(text.rstrip("\n")[:-1]) if _full(_JAVA_LONG, text) else text
    if java_type == "boolean":
        return text == "true" if text in ("true", "false") else text
    if java_type in ("char", "String", "any"):
        return text  # BFCL's char pattern can never match, so a char stays as written
    if java_type == "ArrayList":
        return _java_arraylist(text, item_type)
    if java_type == "Array":
        return _java_array(text, item_type)
    if java_type == "HashMap":
        return _java_hashmap(text)
    raise UnsupportedType(java_type)


def _java_item(text: str, item_type: str | None):
    if item_type in ("char", "String"):
        return text[1:-1]
    return java_value(text, item_type) if item_type else java_literal(text)


def _java_arraylist(text: str, item_type: str | None):
    match = re.search(r"new\s+ArrayList<\w*>\(Arrays\.asList\((.+?)\)\)", text)
    if match:
        return [_java_item(part.strip(), item_type) for part in match.group(1).split(",")]
    match = re.search(r"new\s+ArrayList<\w*>\(\)\s*\{\{\s*(.+?)\s*\}\}", text, re.DOTALL)
    if match:
        return [_java_item(part.strip(), item_type) for part in re.findall(r"add\((.+?)\)", match.group(1))]
    if re.search(r"new\s+ArrayList<\w*>\(\)", text):
        return []
    return text


def _java_array(text: str, item_type: str | None):
    match = re.search(r"new\s+\w+\[\]\s*\{(.*?)\}", text)
    if not match:
        return text
    parts = [part.strip() for part in match.group(1).split(",") if part.strip()]
    return [java_value(part, item_type) if item_type else java_literal(part) for part in parts]


def _java_hashmap(text: str):
    match = re.search(r"new\s+HashMap<.*?>\s*\(\)\s*\{\s*\{?\s*(.*?)\s*\}?\s*\}", text, re.DOTALL)
    if match:
        body = match.group(1)
        result = {}
        if body.strip():
            for key, value in re.findall(r"put\(\"(.*?)\",\s*(.*?)\)", body):
                result[key] = java_literal(value.strip())
        return result
    if re.search(r"new\s+HashMap<.*?>\s*\(\)", text):
        return {}
    return text


def java_literal(text: str):
    """A Java literal without a declared type: boolean, "string", 5L, 1.5f, int, float, else the text."""
    if text == "true":
        return True
    if text == "false":
        return False
    if text.startswith('"') and text.endswith('"'):
        return text[1:-1]
    if _full(_JAVA_LONG, text):
        return int(text.rstrip("\n")[:-1])
    if _full(_JAVA_FLOAT, text):
        return float(text.rstrip("\n")[:-1])
    return _number_or_text(text)


def _number_or_text(text: str):
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            return text


_JS_FLOAT = re.compile(r"-?\d+(\.\d+)?")
_JS_BIGINT = re.compile(r"-?\d+n")


def js_value(text: str, js_type: str, item_type: str | None = None):
    if js_type not in JS_TYPES:
        raise UnsupportedType(js_type)
    if js_type == "String":
        quoted = (text.startswith('"') and text.endswith('"')) or (text.startswith("'") and text.endswith("'"))
        return text[1:-1] if quoted else text
    if js_type == "integer":
        return int(text) if _full(_INT, text) else text
    if js_type == "float":
        return float(text) if _full(_JS_FLOAT, text) else text
    if js_type == "Bigint":
        return int(text[:-1]) if _full(_JS_BIGINT, text) else text
    if js_type == "Boolean":
        return text == "true" if text in ("true", "false") else text
    if js_type == "dict":
        return _js_dict(text.strip())
    if js_type == "array":
        return _js_array(text.strip(), item_type)
    return text  # any


_JS_ARRAY_2D = re.compile(r"\[\s*\[.*?\]\s*(,\s*\[.*?\]\s*)*\]|\bnew\s+Array\(\s*\[.*?\]\s*(,\s*\[.*?\]\s*)*\)")
_JS_ARRAY = re.compile(r"\[(.*?)\]|\bnew\s+Array\((.*?)\)")


def _js_array(code: str, item_type: str | None):
    try:
        match = _JS_ARRAY_2D.match(code)
        if match:
            rows = []
            for index, row in enumerate(re.findall(r"\[(.*?)\]", match.group(0))):
                row = row.strip()
                if index == 0 and row.startswith("["):
                    row = row[1:]
                rows.append([js_literal(item.strip()) for item in row.split(",")])
            return rows
        match = _JS_ARRAY.match(code)
        if not match:
            return code
        body = match.group(1) if match.group(1) is not None else match.group(2)
        body = (body or "").strip()
        items = body.split(",") if body else []
        if item_type:
            return [
                js_value(item.strip(), item_type, "String" if item.strip()[:1] in ("'", '"') else None)
                for item in items
            ]
        return [js_literal(item.strip()) for item in items]
    except Exception:  # BFCL falls back to the text on any conversion error (e.g. an unknown item type)
        return code


def _js_dict(code: str):
    if code == "{}":
        return {}
    match = re.match(r"\{(.*?)\}", code)
    if not match:
        return code
    result = {}
    for key, value in re.findall(r"([^:]+):\s*(.*?)(?:,\s*(?=[^,]+:)|$)", match.group(1)):
        key, value = key.strip().strip("'\""), value.strip()
        if value.startswith("[") and value.endswith("]"):
            result[key] = _js_array(value, None)
        elif value.startswith("{") and value.endswith("}"):
            result[key] = _js_dict(value)
        else:
            result[key] = js_literal(value.strip("'\""))
    return result


def js_literal(text: str):
    """A JavaScript literal without a declared type: boolean, quoted string, int, float, else the text."""
    text = text.strip()
    if text == "true":
        return True
    if text == "false":
        return False
    if len(text) >= 1 and ((text.startswith('"') and text.endswith('"')) or (text.startswith("'") and text.endswith("'"))):
        return text[1:-1]
    return _number_or_text(text)
