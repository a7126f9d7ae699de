"""QA records -> verl RL parquet for the `rag_r1` agent loop.

Each row is what verl's RLHFDataset and our agent loop read:

    data_source   "toy_world" | "hotpotqa" | ...     (routes the reward function's metrics)
    prompt        [{"role": "user", "content": <RAG-R1 instructions + question>}]
    ability       "fact-reasoning"
    reward_model  {"style": "rule", "ground_truth": {"target": [gold answers]}}
    extra_info    {"index", "split", "id", "question", "hops"?, "rag_r1": {"mode": sq|mq}}
    agent_name    "rag_r1"

The instructions come from `agentic_verl.agent_loops.prompts` (the same text the agent loop was written for), in
its single-query (`sq`) or multi-query (`mq`) variant. The file is the one source of truth for the mode: its
prompts were written for one, `extra_info.rag_r1.mode` records it, the recipes read it back with `read_mode` (a
run-level mode given as an override must match it: `agentic-verl preflight` refuses one that differs), and the agent loop raises when a
run-level mode disagrees with a row's.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

AGENT_NAME = "rag_r1"
ABILITY = "fact-reasoning"
MODES = ("sq", "mq")


def prompt_messages(question: str, mode: str = "sq") -> list[dict]:
    """The chat messages the policy sees for `question` (one user turn, as in RAG-R1)."""
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; known: {list(MODES)}")
    from agentic_verl.agent_loops.prompts import rag_r1_messages

    return rag_r1_messages(question, mode=mode)


def to_rows(records: Iterable[dict], split: str, data_source: str, mode: str = "sq") -> list[dict]:
    """verl rows for normalised QA records (`{id, question, golden_answers, ...}`), indexed from 0."""
    rows = []
    for index, rec in enumerate(records):
        question = rec["question"].strip()
        extra = {"index": index, "split": split, "id": str(rec["id"]), "question": question,
                 AGENT_NAME: {"mode": mode}}  # the loop reads its per-sample settings here: same mode as the prompt
        if "hops" in rec:
            extra["hops"] = int(rec["hops"])
        rows.append({
            "data_source": rec.get("data_source") or data_source,
            "prompt": prompt_messages(question, mode),
            "ability": ABILITY,
            "reward_model": {"style": "rule", "ground_truth": {"target": list(rec["golden_answers"])}},
            "extra_info": extra,
            "agent_name": AGENT_NAME,
        })
    return rows


def read_mode(path: str | Path) -> str:
    """The mode a rag_r1 parquet was written for (every row's `extra_info.rag_r1.mode`; one mode per file).

    Raises ValueError when rows carry no mode or several (the file was not written by `data rag-r1`, or was
    concatenated from files of both modes) and FileNotFoundError for a missing file."""
    import pyarrow.parquet as pq

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no such data file: {path}")
    try:
        names = pq.read_schema(path).names
        column = pq.read_table(path, columns=["extra_info"]).column("extra_info").to_pylist() \
            if "extra_info" in names else []
    except Exception as exc:  # pyarrow raises several types for a file that is not parquet
        raise ValueError(f"{path}: not a readable parquet file ({type(exc).__name__}: {exc})") from exc
    modes = {((info or {}).get(AGENT_NAME) or {}).get("mode") for info in column}
    if not column or modes == {None}:
        raise ValueError(f"{path}: no extra_info.{AGENT_NAME}.mode in its rows (write it with `agentic-verl data "
                         f"rag-r1 --mode sq|mq`)")
    if len(modes) > 1:
        found = ", ".join(sorted(str(m) for m in modes))
        raise ValueError(f"{path}: rows written for several modes ({found}); one file, one mode")
    [mode] = modes
    if mode not in MODES:
        raise ValueError(f"{path}: unknown extra_info.{AGENT_NAME}.mode {mode!r}; known: {list(MODES)}")
    return mode


def write_parquet(rows: list[dict], path: str | Path) -> Path:
    import pandas as pd

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_parquet(path, index=False)
    return path


def default_data_source(questions_path: str | Path) -> str:
    """FlashRAG keeps each dataset in its own folder (`hotpotqa/dev.jsonl`): the folder name is the source."""
    return Path(questions_path).resolve().parent.name or "qa"
