"""`agentic-verl data bfcl-multi-turn`: generated BFCL multi-turn tasks -> BFCL files, RL and SFT parquet.

    write_dataset(out, seed=0, count=200, kinds=KINDS, tokenizer="path/to/model")

writes into `out`:

    bfcl/gen_multi_turn_{kind}.json, bfcl/possible_answer/...   the entries in bfcl-eval's data layout (rows.py)
    trajectories.jsonl   per task: the gold steps (call strings and {name, arguments}), the outputs bfcl-eval's
                         executor gave for them, the gold assistant messages
    rl.parquet           verl RL rows for the `bfcl_multi_turn` loop and reward (rows.rl_row)
    sft.parquet          the gold trajectories in the loop's token layout (sft.py), unless no tokenizer is given
    stats.json           tasks per kind and class, what was dropped or rejected and why, token counts

Tasks come from `bridge.generate` (bfcl-eval's simulators, in `.venv-bfcl`), task indices 0, 1, 2, ..., the kinds
taking turns. A task that shares anything with BFCL's 800 multi-turn questions is dropped (`overlap.py`: a user
turn equal or near (word 3-gram Jaccard >= 0.35) to a BFCL turn, a class state equal to a BFCL state, the whole
ground-truth call sequence equal to a BFCL question's; stats.json counts the dropped tasks by kind), and so is an
index none of whose attempts gave a valid task; later indices make up the count.
Everything is a function of (seed, count, kinds): the same arguments give the same bytes, rewrites aside (a judge
model's replies are its own, though cached).
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from agentic_verl.data.bfcl_multi_turn import bridge
from agentic_verl.data.bfcl_multi_turn.core import CLASSES, KINDS
from agentic_verl.data.bfcl_multi_turn.overlap import KINDS as OVERLAP_KINDS
from agentic_verl.data.bfcl_multi_turn.overlap import BfclMultiTurnSet
from agentic_verl.data.bfcl_multi_turn.rows import bfcl_files, kind_of, rl_row

MAX_INDEX_FACTOR = 3  # more than count * 3 + 20 indices tried: something is wrong with the generator


def check_arguments(seed: int, count: int, kinds: Sequence[str], classes: Sequence[str] | None = None) -> list[str]:
    if not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be an integer >= 0, got {seed!r}")
    if not isinstance(count, int) or count < 1:
        raise ValueError(f"count must be an integer >= 1, got {count!r}")
    kinds = list(kinds)
    unknown = [kind for kind in kinds if kind not in KINDS]
    if not kinds or unknown or len(set(kinds)) != len(kinds):
        raise ValueError(f"kinds must be distinct names among {', '.join(KINDS)}; got {kinds}")
    if classes is not None and (not classes or set(classes) - set(CLASSES) or len(set(classes)) != len(classes)):
        raise ValueError(f"classes must be distinct names among {', '.join(CLASSES)}; got {list(classes)}")
    return kinds


def generate_tasks(seed: int, count: int, kinds: Sequence[str], *, classes: Sequence[str] | None = None,
                   judge=None) -> tuple[list[dict], dict]:
    """`count` tasks ({"entry", "trajectory"}) on `classes` (default: all of them) that share nothing with BFCL's
    multi-turn questions, and stats: `dropped_bfcl_overlap` tasks dropped for sharing something, and
    `dropped_bfcl_overlap_by_kind` {overlap kind: tasks with a finding of that kind} (a task with findings of two
    kinds counts under both)."""
    kinds = check_arguments(seed, count, kinds, classes)
    classes = sorted(classes) if classes else None
    bfcl = BfclMultiTurnSet.load()
    tasks: list[dict] = []
    stats = {"bfcl_questions_compared": bfcl.questions, "indices_tried": 0, "dropped_no_valid_task": 0,
             "dropped_bfcl_overlap": 0, "dropped_bfcl_overlap_by_kind": dict.fromkeys(OVERLAP_KINDS, 0),
             "rejected_attempts": Counter(), "rewrites_kept": 0, "rewrites_rejected": 0}
    while len(tasks) < count:
        start, need = stats["indices_tried"], count - len(tasks)
        if start + need > count * MAX_INDEX_FACTOR + 20:
            raise RuntimeError(f"{start} task indices gave only {len(tasks)} usable tasks: {stats}")
        batch, dropped, rejected = bridge.generate(seed, start, need, kinds, classes)
        stats["indices_tried"] += need
        stats["dropped_no_valid_task"] += len(dropped)
        stats["rejected_attempts"].update(rejected)
        if judge is not None:
            counts = asyncio.run(_rewrite(batch, judge))
            stats["rewrites_kept"] += counts["rewrites_kept"]
            stats["rewrites_rejected"] += counts["rewrites_rejected"]
        for task in batch:
            kinds_found = {kind for kind, _ in bfcl.findings(task["entry"])}
            if kinds_found:
                stats["dropped_bfcl_overlap"] += 1
                for kind in kinds_found:
                    stats["dropped_bfcl_overlap_by_kind"][kind] += 1
            else:
                tasks.append(task)
    stats["rejected_attempts"] = dict(sorted(stats["rejected_attempts"].items()))
    return tasks, stats


async def _rewrite(tasks: list[dict], judge) -> dict:
    from agentic_verl.data.bfcl_multi_turn.rewrite import rewrite_entries

    try:
        return await rewrite_entries([task["entry"] for task in tasks], judge)
    finally:
        await judge.aclose()  # its HTTP session belongs to this event loop, which asyncio.run closes


def _task_stats(tasks: list[dict]) -> dict:
    entries = [task["entry"] for task in tasks]
    return {"tasks": len(tasks), "by_kind": dict(sorted(Counter(kind_of(e) for e in entries).items())),
            "by_classes": dict(sorted(Counter("+".join(e["involved_classes"]) for e in entries).items())),
            "turns": sum(len(e["question"]) for e in entries),
            "gold_calls": sum(len(turn) for e in entries for turn in e["ground_truth"]),
            "functions_used": len({call.split("(", 1)[0] for e in entries for t in e["ground_truth"] for call in t})}


def write_dataset(out: str | Path, *, seed: int = 0, count: int = 200, kinds: Sequence[str] = KINDS,
                  classes: Sequence[str] | None = None, tokenizer=None, sft_max_tokens: int | None = None,
                  judge=None) -> dict:
    """Generate and write everything (module docstring); `classes` limits the simulators tasks use (default: all);
    `tokenizer` (a folder or a tokenizer) for sft.parquet, None for none, whose rows longer than `sft_max_tokens`
    are left out (counted); `judge` (a `JudgeClient`) to rewrite user turns. Returns the stats (also in
    stats.json)."""
    if sft_max_tokens is not None and (not isinstance(sft_max_tokens, int) or sft_max_tokens < 1):
        raise ValueError(f"sft_max_tokens must be an integer >= 1, got {sft_max_tokens!r}")
    import pandas as pd

    tasks, stats = generate_tasks(seed, count, kinds, classes=classes, judge=judge)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    entries = [task["entry"] for task in tasks]
    bfcl_files(entries, out / "bfcl")
    with open(out / "trajectories.jsonl", "w", encoding="utf-8") as f:
        for task in tasks:
            f.write(json.dumps(task["trajectory"], ensure_ascii=False) + "\n")
    rows = [rl_row(entry, index) for index, entry in enumerate(entries)]
    pd.DataFrame(rows).to_parquet(out / "rl.parquet", index=False)
    stats = {"seed": seed, "count": count, "kinds": list(kinds), "classes": sorted(classes or CLASSES),
             **_task_stats(tasks), **stats}
    if tokenizer is not None:
        stats["sft"] = _write_sft(out / "sft.parquet", rows, tasks, tokenizer, sft_max_tokens)
    (out / "stats.json").write_text(json.dumps(stats, indent=1) + "\n")
    return stats


def _write_sft(path: Path, rows: list[dict], tasks: list[dict], tokenizer, max_tokens: int | None) -> dict:
    import pandas as pd

    from agentic_verl.data.bfcl_multi_turn.sft import build_rows

    hf_model_type = None
    if isinstance(tokenizer, (str, Path)):
        from transformers import AutoTokenizer

        from agentic_verl.agent_loops.in_process import model_type

        hf_model_type = model_type(tokenizer) if (Path(tokenizer) / "config.json").is_file() else None
        tokenizer = AutoTokenizer.from_pretrained(str(tokenizer))
    sft_rows = build_rows(rows, [t["entry"] for t in tasks], [t["trajectory"] for t in tasks], tokenizer=tokenizer,
                          hf_model_type=hf_model_type)
    kept = [row for row in sft_rows if max_tokens is None or row["num_tokens"] <= max_tokens]
    if not kept:
        raise ValueError(f"every SFT row is longer than {max_tokens} tokens (the shortest has "
                         f"{min(row['num_tokens'] for row in sft_rows)}); raise --sft-max-tokens")
    pd.DataFrame(kept).to_parquet(path, index=False)
    tokens = [row["num_tokens"] for row in kept]
    return {"rows": len(kept), "dropped_too_long": len(sft_rows) - len(kept), "tokens": sum(tokens),
            "max_tokens": max(tokens), "target_tokens": sum(row["num_target_tokens"] for row in kept)}
