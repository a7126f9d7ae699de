"""Function-calling records (`function_calling.py`) -> verl parquet for FunReason's SFT and a later GRPO stage.

`convert(inputs, out_dir)` reads BFCL / xLAM inputs, drops every record whose id or normalised question text is
an evaluation question (default: all single-turn BFCL v4 questions in bfcl_eval), holds out a split, and writes

    sft_train.parquet, sft_val.parquet   messages = [system: BFCL prompt with the functions, user turn(s),
                                         assistant: `<think>reasoning</think>\\n\\n[func(a=1), ...]`], read by
                                         `fc_sft_dataset.FunctionCallSFTDataset` (SRML's span mask) or verl's own
                                         MultiTurnSFTDataset; extra_info {id, source, category, language, split}
    rl_train.parquet, rl_val.parquet     verl RL rows for the `function_call` agent loop and the `bfcl_ast`
                                         reward: ground_truth = BFCL's possible answer (JSON), extra_info carries
                                         functions (JSON), category, language
    stats.json                           records read, kept and dropped per reason, rows per file

Both use the prompt of `agent_loops.prompts` (what the `function_call` loop and BFCL evaluation send) and BFCL's
Python-style call text (`rewards.bfcl.render_calls`). A record without reasoning has no FunReason target: it is
dropped from SFT (`missing_reasoning="drop"`, the default), or gets a short deterministic stand-in that names the
chosen functions and arguments (`"template"`: for pipeline tests and smoke runs; the paper's chains of thought
come from a reasoning model). Rows are kept only when the reference output passes our BFCL checker (the converter
checks its own ground truth). Functions and ground truths are JSON strings: their shapes differ from row
to row, which one parquet struct column cannot hold.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from agentic_verl.agent_loops.prompts import bfcl_messages, funreason_target
from agentic_verl.data.function_calling import (
    UnsupportedRecord,
    eval_keys,
    held_out_split,
    question_key,
    read_records,
)
from agentic_verl.rewards.bfcl import RELEVANCE_CATEGORIES, ast_match, render_calls

NO_CALL_TEXT = "None of the given functions can be used for this request."
AGENT_NAME = "function_call"
ABILITY = "function_calling"
MISSING_REASONING = ("drop", "template")


def call_text(record: dict) -> str:
    """The reference output after the reasoning: BFCL's call list, or NO_CALL_TEXT when no call is right."""
    if not record["calls"]:
        return NO_CALL_TEXT
    return render_calls(record["calls"], record["language"], record["functions"])


def template_reasoning(record: dict) -> str:
    """A deterministic stand-in chain of thought naming the functions and arguments of the reference calls.

    >>> template_reasoning({"calls": [{"add": {"a": 1}}], "functions": [{"name": "add"}, {"name": "sub"}]})
    'Available functions: add, sub. The request needs 1 call: add with a=1.'
    """
    names = ", ".join(str(f.get("name")) for f in record["functions"]) or "none"
    if not record["calls"]:
        return f"Available functions: {names}. None of them fits the request, so no function is called."
    parts = []
    for call in record["calls"]:
        ((name, args),) = call.items()
        given = ", ".join(f"{k}={v!r}" for k, v in args.items()) or "no arguments"
        parts.append(f"{name} with {given}")
    n = len(parts)
    return f"Available functions: {names}. The request needs {n} call{'s' if n > 1 else ''}: {'; '.join(parts)}."


def check_reference(record: dict) -> None:
    """UnsupportedRecord("reference_fails_checker") when the reference calls fail our BFCL AST checker (a
    possible answer no output can pass, a call outside the schema, ...); nothing to check for relevance ones."""
    if record["category"] in RELEVANCE_CATEGORIES or record["possible_answer"] is None:
        return
    verdict = ast_match(call_text(record), record["functions"], record["possible_answer"], record["category"],
                        record["language"])  # fmt: skip
    if not verdict["valid"]:
        raise UnsupportedRecord("reference_fails_checker", f"{record['id']}: {verdict['error_type']}")


def sft_row(record: dict, split: str, index: int, missing_reasoning: str = "drop") -> dict:
    """One SFT row; UnsupportedRecord when the record has no reference output, one the checker rejects, or (under
    "drop") no reasoning."""
    if record["calls"] is None:
        raise UnsupportedRecord("no_reference", f"{record['id']}: no reference output")
    check_reference(record)
    reasoning = record["reasoning"]
    if reasoning is None:
        if missing_reasoning == "drop":
            raise UnsupportedRecord("no_reasoning", f"{record['id']}: no reasoning")
        reasoning = template_reasoning(record)
    target = funreason_target(reasoning, call_text(record))
    messages = [*bfcl_messages(record["turns"], record["functions"]), {"role": "assistant", "content": target}]
    return {"messages": messages, "data_source": record["source"], "extra_info": _extra(record, split, index)}


def rl_row(record: dict, split: str, index: int) -> dict:
    """One RL row; UnsupportedRecord when there is nothing to score against or the reference fails the checker."""
    if record["possible_answer"] is None and record["category"] not in RELEVANCE_CATEGORIES:
        raise UnsupportedRecord("no_reference", f"{record['id']}: no possible answer")
    check_reference(record)
    extra = {**_extra(record, split, index), "functions": json.dumps(record["functions"], ensure_ascii=False)}
    return {
        "data_source": record["source"],
        "prompt": bfcl_messages(record["turns"], record["functions"]),
        "ability": ABILITY,
        "reward_model": {"style": "rule", "ground_truth": json.dumps(record["possible_answer"], ensure_ascii=False)},
        "extra_info": extra,
        "agent_name": AGENT_NAME,
    }


def convert(
    inputs: Sequence[str],
    out_dir: str | Path,
    fmt: str = "auto",
    exclude_eval: Sequence[str] = ("bfcl",),
    val_fraction: float = 0.02,
    seed: int = 0,
    missing_reasoning: str = "drop",
) -> dict:
    """Read `inputs` (files or `bfcl:CATEGORY`), write the four parquet files and stats.json; return the stats."""
    if missing_reasoning not in MISSING_REASONING:
        raise ValueError(f"missing_reasoning must be one of {MISSING_REASONING}, got {missing_reasoning!r}")
    if not 0.0 <= val_fraction < 1.0:
        raise ValueError(f"val_fraction must be in [0, 1), got {val_fraction}")
    dropped: Counter = Counter()
    eval_ids, eval_texts = eval_keys(exclude_eval)
    records, seen_ids = [], set()
    n_read = 0
    for spec in inputs:
        for record in read_records(spec, fmt):
            n_read += 1
            if isinstance(record, UnsupportedRecord):
                dropped[record.reason] += 1
            elif record["id"] in eval_ids:
                dropped["eval_overlap_id"] += 1
            elif question_key(record) in eval_texts:
                dropped["eval_overlap_text"] += 1
            elif record["id"] in seen_ids:
                dropped["duplicate_id"] += 1
            else:
                seen_ids.add(record["id"])
                records.append(record)
    train, val = held_out_split(records, val_fraction, seed)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    files = {}
    for kind, make in (("sft", lambda r, s, i: sft_row(r, s, i, missing_reasoning)), ("rl", rl_row)):
        kind_dropped: Counter = Counter()
        for split, split_records in (("train", train), ("val", val)):
            rows = []
            for record in split_records:
                try:
                    rows.append(make(record, split, len(rows)))
                except UnsupportedRecord as exc:
                    kind_dropped[exc.reason] += 1
            files[f"{kind}_{split}"] = {"rows": len(rows), "path": _write(rows, out_dir / f"{kind}_{split}.parquet")}
        dropped.update({f"{kind}:{reason}": n for reason, n in kind_dropped.items()})
    stats = {"inputs": list(inputs), "read": n_read, "kept": len(records), "train_records": len(train),
             "held_out_records": len(val), "eval_questions": len(eval_ids), "exclude_eval": list(exclude_eval),
             "dropped": dict(sorted(dropped.items())), "files": files,
             "by_category": dict(sorted(Counter(r["category"] for r in records).items()))}  # fmt: skip
    (out_dir / "stats.json").write_text(json.dumps(stats, indent=2) + "\n")
    return stats


def _extra(record: dict, split: str, index: int) -> dict:
    return {"index": index, "split": split, "id": record["id"], "source": record["source"],
            "category": record["category"], "language": record["language"]}  # fmt: skip


def _write(rows: list[dict], path: Path) -> str | None:
    """Write non-empty row lists (an empty parquet has no columns for verl to read); None when nothing to write."""
    if not rows:
        path.unlink(missing_ok=True)
        return None
    import pandas as pd

    pd.DataFrame(rows).to_parquet(path, index=False)
    return str(path)
