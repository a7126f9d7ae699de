"""BFCL v4 questions from the `bfcl-eval` package, and the prompts BFCL's prompting mode builds for them.

    questions = load_questions(["simple_python", "live_irrelevance"], limit=2)
    messages = build_messages(questions[0])          # BFCL's system prompt + the question's user turn(s)
    entries = load_multi_turn_questions(["multi_turn_base"], limit=2)
    messages = multi_turn_messages(parse_entry(entries[0]["entry"]))   # the system prompt + turn 0

Multi-turn entries (`MULTI_TURN`) are BFCL's as its loader makes them (`load_dataset_entry`): the function docs of
the involved classes (`data/multi_turn_func_doc/`), the ground truth beside; `missed_function` keeps the names, which
`rewards.bfcl.multi_turn_entry.parse_entry` turns into docs, the `bfcl_multi_turn` agent loop's row schema.
`load_question_files` reads our own files in the same layouts instead: single-turn ones (the function-calling toy
world's) and multi-turn ones (`agentic-verl data bfcl-multi-turn`'s held-out generated tasks).

The question and possible-answer files are read from the installed package (`bfcl_eval/data/`, install it with
`pip install --no-deps bfcl-eval==2026.3.23`); none of its modules is imported except the prompt templates
(`bfcl_eval.constants.default_prompts`: `bfcl_eval.utils` creates folders next to the package on import).

The prompt is BFCL's for a prompting model (`system_prompt_pre_processing_chat_model` with its default format
`ret_fmt=python&tool_call_tag=False&func_doc_fmt=json&prompt_fmt=plaintext&style=classic`): the function list
after BFCL's language-specific hints (`_func_doc_language_specific_pre_processing`: "Note that the provided
function is in Python 3 syntax.", Java/JavaScript parameters described as strings), as `json.dumps(indent=4)`.
A question that brings its own system turn gets BFCL's prompt in front of it. `prompt="funreason"` uses the
training prompt of this repository instead, exactly as `agentic-verl data fc` and the `function_call` loop build it
(`agent_loops.prompts.bfcl_system_prompt`: BFCL's wording plus "reason inside <think>...</think>, then the calls",
over the functions as given, without BFCL's language hints, which the training rows do not carry), for models
trained on it. Scoring uses the functions as given, without hints (as BFCL's checker does).
"""

from __future__ import annotations

import copy
import json
import re
from importlib import resources
from pathlib import Path

from agentic_verl.bfcl_env.data import function_docs
from agentic_verl.rewards.bfcl import AST_CATEGORIES, RELEVANCE_CATEGORIES, language_of

CATEGORIES = AST_CATEGORIES + RELEVANCE_CATEGORIES
NON_LIVE_AST = ("simple_python", "simple_java", "simple_javascript", "multiple", "parallel", "parallel_multiple")
LIVE = ("live_simple", "live_multiple", "live_parallel", "live_parallel_multiple", "live_irrelevance",
        "live_relevance")  # fmt: skip
MULTI_TURN = ("multi_turn_base", "multi_turn_miss_func", "multi_turn_miss_param", "multi_turn_long_context")
# "all" keeps its meaning of before multi-turn (the single-turn categories FunReason reports): multi-turn needs the
# BFCL environment server (.venv-bfcl), so it is asked for by name or as the group "multi_turn", as BFCL names it.
GROUPS = {"all": CATEGORIES, "non_live": NON_LIVE_AST + ("irrelevance",), "live": LIVE, "ast": AST_CATEGORIES,
          "relevance": RELEVANCE_CATEGORIES, "multi_turn": MULTI_TURN}  # fmt: skip
PROMPTS = ("bfcl", "funreason")
MODES = ("prompting", "fc")  # BFCL's two handler styles: the function list in the system prompt, or native tools
_VERSION = "BFCL_v4"
_INSTALL = "pip install --no-deps bfcl-eval==2026.3.23"


def resolve_categories(names) -> list[str]:
    """Category names and group names (all, non_live, live, ast, relevance, multi_turn) -> categories, in BFCL's
    order (the single-turn ones, then multi-turn)."""
    chosen = set()
    for name in [names] if isinstance(names, str) else list(names or ["all"]):
        for part in str(name).replace(",", " ").split():
            if part in GROUPS:
                chosen.update(GROUPS[part])
            elif part in CATEGORIES + MULTI_TURN:
                chosen.add(part)
            else:
                raise ValueError(f"unknown BFCL category {part!r}; known: {', '.join(CATEGORIES + MULTI_TURN)} "
                                 f"and the groups {', '.join(GROUPS)} (all: the single-turn ones)")
    return [category for category in CATEGORIES + MULTI_TURN if category in chosen]


def _data_dir():
    try:
        return resources.files("bfcl_eval") / "data"
    except ModuleNotFoundError:
        raise ModuleNotFoundError(f"the BFCL questions come from the bfcl-eval package: {_INSTALL}") from None


def _read_jsonl(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def load_questions(categories, limit: int | None = None) -> list[dict]:
    """`[{"id", "category", "turns", "functions", "possible_answer"}]`, the first `limit` of each category
    (all when None); `turns` are the messages of the question's single turn, `possible_answer` is None for
    the relevance categories."""
    data = _data_dir()
    questions = []
    for category in resolve_categories(categories):
        if category not in MULTI_TURN:
            questions += _read_questions(Path(str(data / f"{_VERSION}_{category}.json")), category, limit)
    return questions


def load_multi_turn_questions(categories, limit: int | None = None) -> list[dict]:
    """`[{"id", "category", "entry"}]` for the multi-turn categories among `categories`, the first `limit` of each;
    `entry` is the BFCL entry in the `bfcl_multi_turn` row schema (`id`, `question`, `initial_config`,
    `involved_classes`, `function`: every involved class's docs, `missed_function`: names, `ground_truth`)."""
    categories = [c for c in resolve_categories(categories) if c in MULTI_TURN] if categories else []
    if not categories:
        return []
    data = _data_dir()
    questions = []
    for category in categories:
        name = f"{_VERSION}_{category}.json"
        questions += _read_multi_turn(data / name, data / "possible_answer" / name, category, limit)
    return questions


def _read_multi_turn(path, answer_path, category: str, limit: int | None) -> list[dict]:
    """One multi-turn question file and its possible answers; an entry without `function` (bfcl-eval's own files)
    gets its classes' docs from the installed bfcl-eval, as its loader adds them."""
    answers = {e["id"]: e["ground_truth"] for e in _read_jsonl(answer_path)}
    questions = []
    for entry in _read_jsonl(path)[:limit]:
        if entry["id"] not in answers:
            raise ValueError(f"{entry['id']} has no ground truth in {answer_path}")
        functions = entry.get("function")
        if functions is None:
            functions = [doc for name in entry["involved_classes"] for doc in _class_docs(name)]
        fields = {"id": entry["id"], "question": entry["question"], "initial_config": entry["initial_config"],
                  "involved_classes": entry["involved_classes"], "function": functions,
                  "ground_truth": answers[entry["id"]]}
        if "missed_function" in entry:
            fields["missed_function"] = entry["missed_function"]
        questions.append({"id": entry["id"], "category": category, "entry": fields})
    return questions


_CLASS_DOCS: dict[str, list[dict]] = {}  # a class's function docs, read once per process


def _class_docs(class_name: str) -> list[dict]:
    if class_name not in _CLASS_DOCS:
        _CLASS_DOCS[class_name] = function_docs([class_name])
    return copy.deepcopy(_CLASS_DOCS[class_name])


_MULTI_TURN_GENERATED = re.compile(r"^gen_multi_turn_(?P<kind>[a-z_]+)\.json$")


def question_file_category(path: Path) -> str | None:
    """The BFCL category a question file's name gives (`BFCL_v4_<category>.json`, or the multi-turn generator's
    `gen_multi_turn_<kind>.json`), None when the name gives none it knows."""
    from agentic_verl.data.function_calling import bfcl_category

    match = _MULTI_TURN_GENERATED.match(path.name)
    category = f"multi_turn_{match['kind']}" if match else bfcl_category("", path)
    return category if category in CATEGORIES + MULTI_TURN else None


def load_question_files(paths, limit: int | None = None) -> tuple[list[dict], list[dict]]:
    """Our own BFCL-format question files, the first `limit` of each: `(single_turn, multi_turn)`, the records of
    `load_questions` and of `load_multi_turn_questions`. Single-turn files are JSON lines named
    `BFCL_v<N>_<category>.json` (the category decides the checking rules; `agentic-verl data fc-toy-world` writes
    them); multi-turn ones `BFCL_v<N>_multi_turn_<kind>.json` or `gen_multi_turn_<kind>.json` (`agentic-verl data
    bfcl-multi-turn` writes these: held-out generated tasks). Possible answers in `possible_answer/<same name>`."""
    single_turn, multi_turn = [], []
    for path in map(Path, paths):
        category = question_file_category(path)
        if category is None:
            raise ValueError(f"{path}: cannot tell the BFCL category from the file name; name it "
                             f"BFCL_v4_<category>.json with a category of {', '.join(CATEGORIES + MULTI_TURN)}, or "
                             "gen_multi_turn_<kind>.json as `agentic-verl data bfcl-multi-turn` does")
        if not path.is_file():
            raise FileNotFoundError(f"BFCL question file not found: {path}")
        if category in MULTI_TURN:
            answer_path = path.parent / "possible_answer" / path.name
            if not answer_path.is_file():
                raise FileNotFoundError(f"{path}: its ground truth {answer_path} is missing (the multi-turn checker "
                                        "needs it)")
            multi_turn += _read_multi_turn(path, answer_path, category, limit)
        else:
            single_turn += _read_questions(path, category, limit)
    ids = [q["id"] for q in single_turn + multi_turn]
    if len(set(ids)) != len(ids):
        raise ValueError("question ids repeat across the --questions files (each file once, ids unique)")
    return single_turn, multi_turn


def _read_questions(path: Path, category: str, limit: int | None) -> list[dict]:
    """One category's question file, with the possible answers of `possible_answer/<same name>` beside it."""
    entries = _read_jsonl(path)[:limit]
    answers = {}
    answer_file = path.parent / "possible_answer" / path.name
    if answer_file.is_file():
        answers = {entry["id"]: entry["ground_truth"] for entry in _read_jsonl(answer_file)}
    questions = []
    for entry in entries:
        if category in AST_CATEGORIES and entry["id"] not in answers:
            raise ValueError(f"{entry['id']} has no possible answer in {answer_file}")
        questions.append({"id": entry["id"], "category": category, "turns": entry["question"][0],
                          "functions": entry["function"], "possible_answer": answers.get(entry["id"])})
    return questions


def _hint(category: str) -> str:
    language = language_of(category)
    if language == "java":
        return " Note that the provided function is in Java 8 SDK syntax."
    if language == "javascript":
        return " Note that the provided function is in JavaScript syntax."
    return " Note that the provided function is in Python 3 syntax."


def hinted_functions(functions: list[dict], category: str) -> list[dict]:
    """BFCL's `_func_doc_language_specific_pre_processing`, on a copy: the language note in each description;
    Java / JavaScript parameters become strings, their declared type (and item / dict schema) said in words."""
    functions = copy.deepcopy(functions)
    language = language_of(category)
    for function in functions:
        function["description"] = function["description"] + _hint(category)
        if language == "python":
            continue
        name = "Java" if language == "java" else "JavaScript"
        array_types = ("ArrayList", "Array") if language == "java" else ("array",)
        for value in function["parameters"]["properties"].values():
            if value["type"] == "any":
                value["description"] += f" This parameter can be of any type of {name} object in string representation."
            else:
                value["description"] += f" This is {name} {value['type']} type parameter in string representation."
            if value["type"] in array_types:
                value["description"] += (f" The list elements are of type {value['items']['type']}; they are not in "
                                         "string representation.")
                del value["items"]
            if language == "javascript" and value["type"] == "dict" and "properties" in value:
                value["description"] += (" The dictionary entries have the following schema; they are not in string "
                                         f"representation. {json.dumps(value['properties'])}")
                del value["properties"]
            value["type"] = "string"
    return functions


def bfcl_system_prompt(functions: list[dict]) -> str:
    """BFCL's default system prompt for prompting models, over already hinted functions."""
    try:
        from bfcl_eval.constants.default_prompts import (
            OUTPUT_FORMAT_MAPPING,
            PARAM_TYPE_MAPPING,
            PROMPT_STYLE_TEMPLATES,
            PROMPT_TEMPLATE_MAPPING,
        )
    except ModuleNotFoundError:
        raise ModuleNotFoundError(f"BFCL's prompt templates come from the bfcl-eval package: {_INSTALL}") from None
    style = PROMPT_STYLE_TEMPLATES["classic"]
    tool_call = style["tool_call_no_tag"].format(output_format=OUTPUT_FORMAT_MAPPING["python"],
                                                 param_types=PARAM_TYPE_MAPPING["python"])
    tools = style["available_tools"].format(format="json", functions=json.dumps(functions, indent=4))
    return PROMPT_TEMPLATE_MAPPING["plaintext"].format(persona=style["persona"], task=style["task"],
                                                       tool_call_format=tool_call,
                                                       multiturn_behavior=style["multiturn_behavior"],
                                                       available_tools=tools)


def multi_turn_messages(entry, prompt: str = "bfcl") -> list[dict]:
    """The `prompt` of a multi-turn question (a `parse_entry` BfclEntry): the system prompt over the functions
    available at turn 0 (bfcl: BFCL's, over its hinted docs; funreason: the `bfcl_multi_turn` loop's training
    prompt, `prompts.bfcl_multi_turn_messages`), then turn 0's messages."""
    functions = entry.functions_at_start()
    if prompt == "funreason":
        from agentic_verl.agent_loops.prompts import bfcl_multi_turn_messages

        return bfcl_multi_turn_messages(entry.question[0], functions)
    category = entry.id.rsplit("_", 1)[0]
    return build_messages({"functions": functions, "category": category, "turns": entry.question[0]}, prompt)


def build_messages(question: dict, prompt: str = "bfcl") -> list[dict]:
    """The chat messages for one question: the system prompt (`prompt`: bfcl, over BFCL's hinted functions |
    funreason, over the functions as the training rows carry them), then the question's turns (its own system turn
    appended to ours, as BFCL does)."""
    if prompt == "bfcl":
        system = bfcl_system_prompt(hinted_functions(question["functions"], question["category"]))
    elif prompt == "funreason":
        from agentic_verl.agent_loops.prompts import bfcl_system_prompt as funreason_system_prompt

        system = funreason_system_prompt(question["functions"])
    else:
        raise ValueError(f"unknown BFCL prompt {prompt!r}; known: {', '.join(PROMPTS)}")
    turns = [dict(turn) for turn in question["turns"]]
    if turns and turns[0].get("role") == "system":
        return [{"role": "system", "content": system + "\n\n" + turns[0]["content"]}, *turns[1:]]
    return [{"role": "system", "content": system}, *turns]


def fc_request(question: dict) -> tuple[list[dict], list[dict], dict[str, str]]:
    """FC mode (`--mode fc`): `(messages, tools, names)` for one question, as BFCL's FC handlers send it: the
    question's turns alone (no function list in a system prompt; its own system turn kept), and BFCL's hinted
    function docs as OpenAI tool schemas for the chat template (`rewards.bfcl.native_calls.openai_tools`);
    `names` maps a tool's name back to BFCL's."""
    from agentic_verl.rewards.bfcl.native_calls import openai_tools

    tools, names = openai_tools(hinted_functions(question["functions"], question["category"]))
    return [dict(turn) for turn in question["turns"]], tools, names
