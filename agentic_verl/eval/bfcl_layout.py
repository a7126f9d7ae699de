"""An `eval bfcl` run in bfcl-eval's own result and score files, so that its scorer can be run on our outputs.

    OUT/result/<model>/<group>/BFCL_v4_<category>_result.json   one JSON line per question: {"id", "result", ...}
    OUT/score/<model>/<group>/BFCL_v4_<category>_score.json     {"accuracy", "correct_count", "total_count"}, then
                                                                one line per failed question
    (<group>: non_live, live or multi_turn, as bfcl-eval files them; <model>: the run's label, "/" written "_")

`result` is what bfcl-eval's generation writes for a prompting model: single-turn, the output after its last
`</think>`; multi-turn, `result[turn][step]` = every step's text after its last `</think>` (its reasoning in
`reasoning_content`), or "Error during inference: ..." for a question whose inference failed. The score files hold
our verdicts in the shape of bfcl-eval's (`save_eval_results`): the header, then for each failed question its
error type and message and the model's result; multi-turn, where the checker ran, the calls as decoded per turn and
step and the checker's details (bfcl-eval's entries also repeat the question and its possible answer).
`bfcl evaluate --result-dir OUT/result --score-dir ... --partial-eval` (bfcl-eval's own scorer) reads the result
files; tests/eval/test_bfcl_multi_turn_eval.py runs it on ours and requires the same accuracy per category.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from agentic_verl.rewards.bfcl.decode import strip_reasoning

VERSION_PREFIX = "BFCL_v4"
UNCHECKED = ("multi_turn:inference_error", "multi_turn:force_terminated")  # verdicts before bfcl-eval's checker


def group_of(category: str) -> str:
    """bfcl-eval's folder for a category (`get_general_grouping`).

    >>> group_of("simple_java"), group_of("live_relevance"), group_of("multi_turn_base")
    ('non_live', 'live', 'multi_turn')
    """
    if category.startswith("multi_turn"):
        return "multi_turn"
    return "live" if category.startswith("live") else "non_live"


def model_dir_name(name: str) -> str:
    """The run's folder name: bfcl-eval writes "/" as "_"; other characters a path should not carry become "_"."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", name.replace("/", "_")) or "model"


def write_layout(result: dict, out_dir: str | Path, model_name: str) -> list[Path]:
    """Write every category's result and score file under OUT/result and OUT/score; returns the paths written."""
    out, model = Path(out_dir), model_dir_name(model_name)
    written = []
    for category in dict.fromkeys(r["category"] for r in result["questions"]):
        records = [r for r in result["questions"] if r["category"] == category]
        folder = f"{model}/{group_of(category)}"
        written.append(_write_lines(out / "result" / folder / f"{VERSION_PREFIX}_{category}_result.json",
                                    [result_entry(r) for r in records]))
        correct = sum(bool(r["valid"]) for r in records)
        header = {"accuracy": correct / len(records), "correct_count": correct, "total_count": len(records)}
        failed = [score_entry(r, model) for r in records if not r["valid"]]
        written.append(_write_lines(out / "score" / folder / f"{VERSION_PREFIX}_{category}_score.json",
                                    [header, *failed]))
    return written


def result_entry(record: dict) -> dict:
    if "result" not in record:  # single-turn: the output as a reasoning handler of bfcl-eval stores it
        return {"id": record["id"], "result": strip_reasoning(record["output"])}
    entry = {"id": record["id"], "result": record["result"]}
    reasoning = record.get("reasoning_content")
    if reasoning and any(text for turn in reasoning for text in turn):  # bfcl-eval keeps it only when there is some
        entry["reasoning_content"] = reasoning
    return entry


def score_entry(record: dict, model: str) -> dict:
    entry = {"id": record["id"], "model_name": model, "test_category": record["category"], "valid": False}
    if "result" not in record:
        return {**entry, "error": record["errors"], "error_type": record["error_type"],
                "model_result_raw": strip_reasoning(record["output"])}
    from agentic_verl.bfcl_env.protocol import display_call  # standard library only

    error = {"error_message": record["errors"][0] if record["errors"] else None, "error_type": record["error_type"]}
    if record["error_type"] in UNCHECKED:  # bfcl-eval's runner judged it without decoding: the result as it is
        return {**entry, "error": error, "model_result": record["result"]}
    if record.get("details"):
        error["details"] = record["details"]
    decoded = [[[display_call(call["name"], call["arguments"]) for call in step] for step in turn]
               for turn in record["model_calls"]]
    return {**entry, "error": error, "model_result_raw": record["result"], "model_result_decoded": decoded}


def _write_lines(path: Path, entries: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(entry, ensure_ascii=False) + "\n" for entry in entries), encoding="utf-8",
                    errors="backslashreplace")  # a lone surrogate as its JSON escape (eval/output.py)
    return path
