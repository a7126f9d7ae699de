"""Function-calling records from BFCL v4 question files and from xLAM / APIGen-style JSON, in one shape.

A record is a dict:

    id, source        "simple_python_3" / "xlam_17"; "bfcl" | "xlam"
    category          BFCL's category (decides how the AST checker matches calls); xLAM records get the category
                      their calls and tools imply: simple_python, multiple, parallel, parallel_multiple, irrelevance
    language          python | java | javascript
    turns             the user turn(s): [{"role": "user", "content": ...}]
    functions         function schemas in BFCL's JSON format ({"name", "description", "parameters": {"type":
                      "dict", "properties", "required"}})
    calls             the reference calls [{name: {param: value}}] ([] = no call is right; None = unknown)
    possible_answer   BFCL's possible-answer list [{name: {param: [accepted values]}}] (None when unknown)
    reasoning         the chain of thought for the SFT target, when the record carries one (else None)

BFCL files are BFCL's JSON lines (`{"id", "question": [[turns]], "function": [...]}`); possible answers are read
from `possible_answer/<same file name>` next to the file, as `bfcl_eval/data/` lays them out; `bfcl:CATEGORY`
reads `bfcl_eval`'s own files. xLAM files are a JSON array or JSON lines of `{"id"?, "query", "tools",
"answers"}` (`tools` / `answers` may be JSON strings, as in xlam-function-calling-60k), plus an optional
reasoning field (`reasoning`, `cot`, `thought` or `think`). Nothing here executes or evaluates record content.

>>> rec = xlam_record({"id": 7, "query": "Add 1 and 2.", "answers": '[{"name": "add", "arguments": {"a": 1, "b": 2}}]',
...                    "tools": '[{"name": "add", "parameters": {"a": {"type": "int"}, "b": {"type": "int"}}}]'})
>>> rec["id"], rec["category"], rec["calls"], rec["possible_answer"]
('xlam_7', 'simple_python', [{'add': {'a': 1, 'b': 2}}], [{'add': {'a': [1], 'b': [2]}}])
>>> normalize_text("  What's the WEATHER in Paris?? ")
'what s the weather in paris'
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections.abc import Iterable, Iterator
from pathlib import Path

from agentic_verl.rewards.bfcl import AST_CATEGORIES, RELEVANCE_CATEGORIES, gold_calls, language_of

SUPPORTED_BFCL_CATEGORIES = AST_CATEGORIES + RELEVANCE_CATEGORIES  # single-turn; multi-turn has another shape
REASONING_FIELDS = ("reasoning", "cot", "thought", "think")
_BFCL_FILE = re.compile(r"^BFCL_v\d+_(?P<category>[a-z_]+)\.jsonl?$")


class UnsupportedRecord(ValueError):
    """A record this converter cannot use (counted under `reason`, never fatal)."""

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason


def normalize_text(text: str) -> str:
    """Question text for overlap checks: NFKC, case-folded, punctuation as spaces, whitespace collapsed."""
    text = unicodedata.normalize("NFKC", str(text)).casefold()
    return " ".join(re.sub(r"[\W_]+", " ", text).split())


def question_key(record: dict) -> str:
    """The normalised text of a record's user turns (two records with the same key ask the same question)."""
    return normalize_text(" ".join(str(turn.get("content", "")) for turn in record["turns"]))


# ---- BFCL ---------------------------------------------------------------------------------------------------------


def bfcl_category(entry_id: str, path: Path | None = None) -> str:
    """The category from the file name (`BFCL_v4_simple_python.json`), else from the id (`live_simple_3-1-0`)."""
    match = _BFCL_FILE.match(path.name) if path is not None else None
    return match["category"] if match else str(entry_id).rsplit("_", 1)[0]


def bfcl_record(entry: dict, category: str, possible_answer: list | None) -> dict:
    """One BFCL question entry (+ its possible answer, if any) as a record."""
    if category not in SUPPORTED_BFCL_CATEGORIES:
        raise UnsupportedRecord(
            "unsupported_category",
            f"{entry.get('id')}: category {category!r} is not a "
            f"single-turn one ({', '.join(SUPPORTED_BFCL_CATEGORIES)})",
        )
    question = entry.get("question") or []
    if len(question) != 1:
        raise UnsupportedRecord("multi_turn", f"{entry.get('id')}: {len(question)} turn groups, expected 1")
    turns = [dict(t) for t in question[0] if t.get("role") == "user"]
    functions = list(entry.get("function") or [])
    if category in ("irrelevance", "live_irrelevance"):
        calls, possible_answer = [], None
    elif possible_answer is None:  # live_relevance (any call counts), or an AST question without its answer file
        calls = None
    else:
        calls = gold_calls(possible_answer, functions)
    return {"id": str(entry["id"]), "source": "bfcl", "category": category, "language": language_of(category),
            "turns": turns, "functions": functions, "calls": calls, "possible_answer": possible_answer,
            "reasoning": _reasoning(entry)}  # fmt: skip


def read_bfcl(path: str | Path) -> Iterator[dict]:
    """Records of a BFCL question file (JSON lines), with answers from `possible_answer/<name>` when present."""
    path = Path(path)
    answers = {}
    answer_file = path.parent / "possible_answer" / path.name
    if answer_file.is_file():
        for entry in _json_lines(answer_file.read_text(encoding="utf-8")):
            answers[str(entry["id"])] = entry["ground_truth"]
    for entry in _json_lines(path.read_text(encoding="utf-8")):
        yield _or_unsupported(lambda e=entry: bfcl_record(e, bfcl_category(e["id"], path), answers.get(str(e["id"]))))


def bfcl_package_file(category: str) -> Path:
    """`bfcl_eval`'s question file of `category` (pip install --no-deps bfcl-eval)."""
    from importlib import resources

    if category not in SUPPORTED_BFCL_CATEGORIES:
        raise ValueError(f"unknown BFCL category {category!r}; known: {', '.join(SUPPORTED_BFCL_CATEGORIES)}")
    return Path(str(resources.files("bfcl_eval") / "data" / f"BFCL_v4_{category}.json"))


# ---- xLAM / APIGen ------------------------------------------------------------------------------------------------

_XLAM_TYPES = {"str": "string", "string": "string", "int": "integer", "integer": "integer", "float": "float",
               "number": "float", "double": "float", "bool": "boolean", "boolean": "boolean"}  # fmt: skip


def _bfcl_type(type_text: str) -> str:
    base = str(type_text).split(",")[0].strip().lower()
    if base in _XLAM_TYPES:
        return _XLAM_TYPES[base]
    if base.startswith(("list", "array", "tuple", "set")):
        return "array"
    if base.startswith(("dict", "object", "mapping")):
        return "dict"
    return "any"


def bfcl_function(tool: dict) -> dict:
    """An xLAM tool (`parameters: {name: {type: "int, optional", description, default?}}`) or a JSON-schema
    tool (`parameters: {type: object, properties, required}`) in BFCL's function format."""
    params = tool.get("parameters") or {}
    if "properties" in params:
        schema = {**params, "type": "dict"}
    else:
        props, required = {}, []
        for name, spec in params.items():
            spec = spec if isinstance(spec, dict) else {"type": str(spec)}
            type_text = str(spec.get("type", "any"))
            props[name] = {"type": _bfcl_type(type_text), "description": str(spec.get("description", ""))}
            if "optional" not in type_text.lower() and "default" not in spec:
                required.append(name)
        schema = {"type": "dict", "properties": props, "required": required}
    return {"name": str(tool["name"]), "description": str(tool.get("description", "")), "parameters": schema}


def xlam_category(n_calls: int, n_functions: int) -> str:
    """The BFCL category whose matching rules fit: one call -> simple/multiple, several -> parallel(_multiple)."""
    if n_calls == 0:
        return "irrelevance"
    if n_calls == 1:
        return "simple_python" if n_functions == 1 else "multiple"
    return "parallel" if n_functions == 1 else "parallel_multiple"


def xlam_record(entry: dict, index: int = 0) -> dict:
    """One xLAM / APIGen-style record. Every reference argument is the one accepted value of its parameter."""
    try:
        tools, answers = _maybe_json(entry.get("tools") or []), _maybe_json(entry.get("answers") or [])
        functions = [bfcl_function(t) for t in tools]
        calls = [{str(a["name"]): dict(a.get("arguments") or {})} for a in answers]
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise UnsupportedRecord("malformed", f"record {entry.get('id', index)}: {type(exc).__name__}: {exc}") from exc
    query = entry.get("query")
    if not isinstance(query, str) or not query.strip():
        raise UnsupportedRecord("malformed", f"record {entry.get('id', index)}: no query")
    possible = [{name: {p: [v] for p, v in args.items()}} for call in calls for name, args in call.items()]
    return {"id": f"xlam_{entry.get('id', index)}", "source": "xlam",
            "category": xlam_category(len(calls), len(functions)), "language": "python",
            "turns": [{"role": "user", "content": query}], "functions": functions, "calls": calls,
            "possible_answer": possible or None, "reasoning": _reasoning(entry)}  # fmt: skip


def read_xlam(path: str | Path) -> Iterator[dict]:
    text = Path(path).read_text(encoding="utf-8")
    entries = json.loads(text) if text.lstrip().startswith("[") else list(_json_lines(text))
    for index, entry in enumerate(entries):
        yield _or_unsupported(lambda e=entry, i=index: xlam_record(e, i))


# ---- any input ----------------------------------------------------------------------------------------------------


def detect_format(path: str | Path) -> str:
    """ "bfcl" or "xlam", from the first record's keys."""
    text = Path(path).read_text(encoding="utf-8")
    first = json.loads(text)[0] if text.lstrip().startswith("[") else next(_json_lines(text), {})
    if "question" in first and "function" in first:
        return "bfcl"
    if "query" in first and ("answers" in first or "tools" in first):
        return "xlam"
    raise ValueError(f"{path}: neither BFCL ({{question, function}}) nor xLAM ({{query, tools, answers}}) records")


def read_records(spec: str, fmt: str = "auto") -> Iterator[dict]:
    """Records (or UnsupportedRecord errors, yielded, not raised) from `bfcl:CATEGORY` or a file."""
    if spec.startswith("bfcl:"):
        yield from read_bfcl(bfcl_package_file(spec.removeprefix("bfcl:")))
        return
    fmt = detect_format(spec) if fmt == "auto" else fmt
    if fmt not in ("bfcl", "xlam"):
        raise ValueError(f"unknown format {fmt!r}; known: auto, bfcl, xlam")
    yield from (read_bfcl(spec) if fmt == "bfcl" else read_xlam(spec))


def eval_keys(specs: Iterable[str]) -> tuple[set[str], set[str]]:
    """(ids, normalised question texts) of the evaluation questions in `specs`: `bfcl` (every single-turn BFCL
    category in bfcl_eval), `bfcl:CATEGORY`, or a BFCL / xLAM file; `none` for no exclusion."""
    ids, texts = set(), set()
    for spec in specs:
        if spec == "none":
            continue
        parts = [f"bfcl:{c}" for c in SUPPORTED_BFCL_CATEGORIES] if spec == "bfcl" else [spec]
        for part in parts:
            for record in read_records(part):
                if isinstance(record, UnsupportedRecord):
                    continue
                ids.add(record["id"])
                texts.add(question_key(record))
    return ids, texts


def held_out_split(records: list[dict], fraction: float, seed: int = 0) -> tuple[list[dict], list[dict]]:
    """(train, held_out), each in input order: records with the same normalised question stay on one side; the
    first round(fraction x groups) groups by a seeded hash of their text (at least one when fraction > 0 and there
    are two or more groups, never all) are held out."""
    groups: dict[str, list[dict]] = {}
    for record in records:
        groups.setdefault(question_key(record), []).append(record)
    order = sorted(groups, key=lambda key: hashlib.sha256(f"{seed}\0{key}".encode()).hexdigest())
    n_held = round(fraction * len(order))
    if fraction > 0 and len(order) >= 2:
        n_held = min(max(n_held, 1), len(order) - 1)
    held = set(order[:n_held])
    train = [r for r in records if question_key(r) not in held]
    return train, [r for r in records if question_key(r) in held]


def _reasoning(entry: dict) -> str | None:
    for field in REASONING_FIELDS:
        value = entry.get(field)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def _maybe_json(value):
    return json.loads(value) if isinstance(value, str) else value


def _json_lines(text: str) -> Iterator[dict]:
    for line in text.splitlines():
        if line.strip():
            yield json.loads(line)


def _or_unsupported(make):
    try:
        return make()
    except UnsupportedRecord as exc:
        return exc
