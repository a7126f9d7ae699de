"""One stage of a demo: an evaluation's result.json -> a stage record of the demo summary (docs/demo_report.md).

    stage_record("after SFT", "outputs/demo/eval/1_sft/result.json", seconds=81.0)
    -> {"label": "after SFT", "eval": "qa", "score": 0.375, "n": 24, "by_kind": {"1-hop": 0.5, "2-hop": 0.25},
        "tool_calls_per_question": 1.5, "truncation_rate": 0.0, "seconds": 81.0, "source": "..."}

One adapter per evaluation, chosen by the shape of the result (`detect_kind`), each reading what that evaluation
wrote and nothing else:
- qa (`agentic-verl eval qa`, eval/qa_eval.py): EM; by hop count; searches per question; the share of questions
  that hit the response-length budget (failure `truncated_by_length`).
- bfcl (`agentic-verl eval bfcl`, eval/bfcl_eval.py): AST accuracy over all questions; by BFCL category; the calls
  each output decodes to (BFCL's decoder, after the reasoning; 0 when nothing decodes); `finish_reason` "length".
- screenspot (`agentic-verl eval screenspot`, eval/screenspot.py): click-in-box accuracy; by the target's size
  (v2p/sizes.py: the box's share of the screenshot's area); the share of samples with a parsed click; the share
  whose text hit the token limit, where the sample record says so (`truncated: true` or `finish_reason: "length"`),
  else 0.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from agentic_verl.v2p.sizes import SIZE_BUCKETS, size_bucket


def load_result(path: str | Path) -> dict:
    """An evaluation's result.json; a clear error naming the file when it is missing or not a JSON object."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"evaluation result not found: {path}")
    try:
        result = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path} is not valid JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(result, dict):
        raise ValueError(f"{path}: expected a JSON object (an `agentic-verl eval` result.json), "
                         f"got {type(result).__name__}")
    return result


def detect_kind(result: dict, source: str = "result") -> str:
    """Which evaluation wrote `result`: "qa", "bfcl" or "screenspot" (from its shape).

    >>> detect_kind({"summary": {"em_by_hops": {}}, "questions": []})
    'qa'
    >>> detect_kind({"summary": {}, "questions": [], "categories": {}}), detect_kind({"summary": {}, "samples": [], "benchmarks": {}})
    ('bfcl', 'screenspot')
    """
    summary = result.get("summary")
    if isinstance(summary, dict):
        if isinstance(result.get("questions"), list) and "em_by_hops" in summary:
            return "qa"
        if isinstance(result.get("questions"), list) and isinstance(result.get("categories"), dict):
            return "bfcl"
        if isinstance(result.get("samples"), list) and isinstance(result.get("benchmarks"), dict):
            return "screenspot"
    raise ValueError(f"{source}: not a result.json of `agentic-verl eval qa`, `eval bfcl` or `eval screenspot` "
                     f"(top-level keys: {', '.join(sorted(result)) or 'none'}; expected summary + questions with "
                     "em_by_hops (qa), summary + questions + categories (bfcl), or summary + samples + benchmarks "
                     "(screenspot))")


def stage_record(label: str, path: str | Path, seconds: float | None) -> dict:
    """The stage record for the evaluation result at `path` (its kind detected from the result's shape)."""
    result = load_result(path)
    kind = detect_kind(result, str(path))
    try:
        fields = ADAPTERS[kind](result)
    except ZeroDivisionError:  # every adapter divides by the number of questions
        raise ValueError(f"{path}: the evaluation has no questions (n = 0)") from None
    except (KeyError, TypeError) as exc:
        raise ValueError(f"{path}: a {kind} result without the fields its adapter reads "
                         f"({type(exc).__name__}: {exc})") from None
    return {"label": label, "eval": kind, **fields, "seconds": seconds, "source": str(path)}


def _qa(result: dict) -> dict:
    s = result["summary"]
    n = int(s["n"])
    by_kind = {f"{hops}-hop": float(group["em"]) for hops, group in s["em_by_hops"].items()}
    return {"score": float(s["em"]), "n": n, "by_kind": by_kind,
            "tool_calls_per_question": float(s["searches_per_question"]),
            "truncation_rate": s["failures"]["truncated_by_length"] / n}


def _bfcl(result: dict) -> dict:
    from agentic_verl.rewards.bfcl import DecodeError, decode, language_of

    records = result["questions"]
    n = len(records)

    def calls_in(record: dict) -> int:
        if "output" not in record:  # a multi-turn question: the calls its steps executed, counted by the eval
            return int(record.get("calls", 0))
        try:
            calls = decode(record["output"] or "", language_of(record["category"]))
        except DecodeError:
            return 0
        return len(calls) if isinstance(calls, list) else 0  # Java / JavaScript text without a call: {} / None

    return {"score": sum(bool(r["valid"]) for r in records) / n, "n": n,
            "by_kind": _share_by(records, lambda r: str(r["category"]), lambda r: bool(r["valid"])),
            "tool_calls_per_question": sum(calls_in(r) for r in records) / n,
            "truncation_rate": sum(r.get("finish_reason") == "length" for r in records) / n}


def _screenspot(result: dict) -> dict:
    records = result["samples"]
    n = len(records)
    by_size = _share_by(records, lambda r: size_bucket(r["bbox"], r["image_size"]), lambda r: bool(r["hit"]))
    return {"score": sum(bool(r["hit"]) for r in records) / n, "n": n,
            "by_kind": {name: by_size[name] for name in SIZE_BUCKETS if name in by_size},
            "tool_calls_per_question": sum(r.get("point") is not None for r in records) / n,
            "truncation_rate": sum(bool(r.get("truncated")) or r.get("finish_reason") == "length"
                                   for r in records) / n}


def _share_by(records: list[dict], kind: Callable[[dict], str], success: Callable[[dict], bool]) -> dict[str, float]:
    """The share of successes in each kind, kinds in the order they first appear."""
    groups: dict[str, list[dict]] = {}
    for r in records:
        groups.setdefault(kind(r), []).append(r)
    return {name: sum(success(r) for r in group) / len(group) for name, group in groups.items()}


ADAPTERS: dict[str, Callable[[dict], dict]] = {"qa": _qa, "bfcl": _bfcl, "screenspot": _screenspot}
