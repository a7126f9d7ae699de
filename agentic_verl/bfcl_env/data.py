"""BFCL's multi-turn data as the installed bfcl-eval ships it (`bfcl_eval/data/`), read as files: the function docs
of the simulator classes, and the 800 questions of the four multi-turn categories with their ground truth.

Nothing of bfcl-eval is imported but its class -> doc file table (`executable_backend_config`, a plain dict
module), so both venvs read it: the task generator in `.venv-bfcl` (an entry's `function`) and in the main venv
(what a generated task must not share with BFCL's questions, `data/bfcl_multi_turn/overlap.py`), `eval bfcl`'s
loader (docs for BFCL's entries) and the agreement harness (`scripts/agreement/_bfcl_mt_cases.py`).
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

MULTI_TURN_CATEGORIES = ("base", "miss_func", "miss_param", "long_context")  # BFCL's multi_turn_<category> files


def data_dir() -> Path:
    return Path(str(resources.files("bfcl_eval") / "data"))


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def multi_turn_files(categories=MULTI_TURN_CATEGORIES) -> list[Path]:
    """BFCL's multi-turn question files (their possible answers: `possible_answer/<same name>`)."""
    return [data_dir() / f"BFCL_v4_multi_turn_{category}.json" for category in categories]


def multi_turn_entries(categories=MULTI_TURN_CATEGORIES, limit: int | None = None) -> list[dict]:
    """BFCL's multi-turn questions of `categories` (default: all 800; the first `limit` of each), each with its
    `ground_truth` (call strings per turn) from the possible-answer files."""
    entries = []
    for path in multi_turn_files(categories):
        answers = {e["id"]: e["ground_truth"] for e in _jsonl(path.parent / "possible_answer" / path.name)}
        entries += [{**entry, "ground_truth": answers[entry["id"]]} for entry in _jsonl(path)[:limit]]
    return entries


def function_docs(classes: list[str]) -> list[dict]:
    """The docs of `classes`' functions, in the order bfcl-eval's loader puts them in an entry's `function`."""
    from bfcl_eval.constants.executable_backend_config import MULTI_TURN_FUNC_DOC_FILE_MAPPING

    folder = data_dir() / "multi_turn_func_doc"
    return [doc for name in classes for doc in _jsonl(folder / MULTI_TURN_FUNC_DOC_FILE_MAPPING[name])]


def parameter_order() -> dict[str, list[str]]:
    """{function: its parameter names in doc order} over all of BFCL's multi-turn function docs."""
    order = {}
    for doc in sorted((data_dir() / "multi_turn_func_doc").iterdir()):
        for function in _jsonl(doc):
            order[function["name"]] = list(function["parameters"]["properties"])
    return order
