"""RAG-R1's cold-start SFT data, cut from correct trajectories in any trajectory dump.

RAG-R1 (arXiv 2507.02962) fine-tunes on step-level samples cut from correct trajectories of a strong model:
think+search and think+answer steps, each with and without the earlier turns in the input; retrieved documents are
never in the target. Any dump written by `agentic_verl.agent_loops.trace` works (`agentic-verl eval qa --out DIR`
writes DIR/trajectories/; training writes AGENTIC_VERL_TRAJECTORY_DIR), as long as a `kind: "reward"` record scores
each trajectory (eval qa and the `agentic_trace` reward manager write them):

    agentic-verl eval qa --endpoint URL --model-name BIG --tokenizer BIG_DIR --data train.jsonl \\
        --retrieval-url URL --out outputs/cold_start
    agentic-verl data sft-steps outputs/cold_start/trajectories --out data/rag_r1_sft/train.parquet

A trajectory is `prompt_ids + response_ids` with `response_mask` 1 on policy tokens, 0 on observations. Its policy
turns are the runs of mask-1 tokens, its observations the runs of mask-0 tokens. `cut_samples` turns one
trajectory into rows (`input_ids`, `loss_mask`; the loss is on policy tokens only):

- style `steps` (RAG-R1): for each policy turn i, (a) with history: input = prompt + every earlier turn and
  observation (the trajectory's own prefix), loss on turn i; (b) without history: input = prompt + only the
  observation right before turn i (the documents that step relies on), loss on turn i. For the first turn (a) and
  (b) are the same sample: it is emitted once. A turn's kind is `search` or `answer`, the first complete
  `<search>...</search>` / `<answer>...</answer>` block in its text, the rule the rag_r1 loop acts on; a turn with
  neither (an invalid action the loop answered with a correction) gets no sample and is counted.
- style `trajectory`: one row per trajectory, every search/answer turn in the loss (what the toy-world
  `sft-trajectories` writes); a turn with neither stays in the input, out of the loss, and is counted.

Only correct trajectories are kept: reward >= `min_reward`. A trajectory without a reward is dropped and counted
(never silently kept). Rows are read by `agentic_verl.training.sft_dataset.PretokenizedSFTDataset`.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from agentic_verl.agent_loops.rag_r1_protocol import parse_action

STYLES = ("steps", "trajectory")
KINDS = ("search", "answer")  # think+search, think+answer steps
NO_REWARD_HINT = "was the dump written by `eval qa` or with the `agentic_trace` reward manager?"


def mask_runs(response_mask: Sequence[int]) -> list[tuple[bool, int, int]]:
    """Runs of equal mask as (policy, start, end), end exclusive.

    >>> mask_runs([1, 1, 0, 0, 0, 1])
    [(True, 0, 2), (False, 2, 5), (True, 5, 6)]
    """
    runs, start = [], 0
    for i in range(1, len(response_mask) + 1):
        if i == len(response_mask) or bool(response_mask[i]) != bool(response_mask[start]):
            runs.append((bool(response_mask[start]), start, i))
            start = i
    return runs


def turn_kind(text: str) -> str | None:
    """`search` | `answer` for the first complete block of a policy turn, None for neither.

    >>> turn_kind("<think> x </think>\\n<search> Ada Bo </search>"), turn_kind("<answer> Kilu"), turn_kind("hi")
    ('search', None, None)
    """
    return parse_action(text)[0]  # the rag_r1 loop's own rule


def cut_samples(prompt_ids: Sequence[int], response_ids: Sequence[int], response_mask: Sequence[int],
                turn_texts: Sequence[str], *, style: str = "steps", max_length: int | None = None,
                token_weights: Mapping[int, int] | None = None) -> tuple[list[dict], Counter]:
    """Rows (input_ids, loss_mask, num_tokens, num_target_tokens, kind, step, history) for one trajectory, and
    counts (`turns_without_action`, `samples_too_long`). `turn_texts`: the text of each policy turn, in order.
    A row's `step` is the index of the policy turn in its loss (-1 for a `trajectory` row: all of them).
    `token_weights`: response index -> integer loss weight (>= 1) for chosen policy tokens; the rest weigh 1. verl's
    SFT loss multiplies each token's log-prob by its loss_mask value and divides by their sum, so a weight w counts
    that token w times (a weighted token mean)."""
    if style not in STYLES:
        raise ValueError(f"unknown style {style!r}; known: {', '.join(STYLES)}")
    prompt, response = [int(t) for t in prompt_ids], [int(t) for t in response_ids]
    if len(response) != len(response_mask):
        raise ValueError(f"{len(response)} response_ids but {len(response_mask)} response_mask values")
    weights = _checked_weights(token_weights or {}, response_mask)
    runs = mask_runs(response_mask)
    turns = [(start, end) for policy, start, end in runs if policy]
    if len(turn_texts) != len(turns):
        raise ValueError(f"{len(turn_texts)} turn texts for {len(turns)} policy turns")
    kinds = [turn_kind(text) for text in turn_texts]
    counts = Counter(turns_without_action=sum(kind is None for kind in kinds))
    samples: list[dict] = []

    def add(context: list[int], target_mask: list[int], kind: str, step: int, history: bool) -> None:
        input_ids = prompt + context
        loss_mask = [0] * len(prompt) + target_mask
        if max_length is not None and len(input_ids) > max_length:
            counts["samples_too_long"] += 1
            return
        samples.append({"input_ids": input_ids, "loss_mask": loss_mask, "num_tokens": len(input_ids),
                        "num_target_tokens": sum(w > 0 for w in loss_mask), "kind": kind, "step": step,
                        "history": history})

    def target_weights(start: int, end: int) -> list[int]:
        return [weights.get(i, 1) for i in range(start, end)]

    if style == "trajectory":
        mask = [0] * len(response)
        for (start, end), kind in zip(turns, kinds, strict=True):
            if kind is not None:
                mask[start:end] = target_weights(start, end)
        if any(mask):
            add(response, mask, "trajectory", -1, True)
        return samples, counts

    observation_before = {}  # turn start -> (start, end) of the observation run right before it
    for (policy, start, end), (_, next_start, _) in zip(runs, runs[1:], strict=False):
        if not policy:
            observation_before[next_start] = (start, end)
    for step, ((start, end), kind) in enumerate(zip(turns, kinds, strict=True)):
        if kind is None:
            continue
        target = response[start:end]
        add(response[:end], [0] * start + target_weights(start, end), kind, step, True)
        obs_start, obs_end = observation_before.get(start, (start, start))
        if obs_start > 0:  # something besides this observation came before: (b) differs from (a)
            observation = response[obs_start:obs_end]
            add(observation + target, [0] * len(observation) + target_weights(start, end), kind, step, False)
    return samples, counts


def _checked_weights(token_weights: Mapping[int, int], response_mask: Sequence[int]) -> dict[int, int]:
    """`token_weights` as ints, after checking each names a policy token with an integer weight >= 1 (a weight on an
    observation token would never reach the loss: an error, not a silent no-op)."""
    checked = {}
    for index, weight in token_weights.items():
        if not 0 <= index < len(response_mask) or not response_mask[index]:
            raise ValueError(f"token weight at response index {index}: not a policy token "
                             f"(response of {len(response_mask)} tokens)")
        if isinstance(weight, bool) or not isinstance(weight, int) or weight < 1:
            raise ValueError(f"token weight at response index {index} must be an integer >= 1, got {weight!r}")
        checked[int(index)] = weight
    return checked


def trajectory_turn_texts(record: dict, decode: Callable[[list[int]], str] | None = None) -> list[str]:
    """Policy-turn texts of a dumped trajectory: its decoded `response_segments`, else `decode(token ids)`."""
    turns = [(start, end) for policy, start, end in mask_runs(record["response_mask"]) if policy]
    segments = {(s.get("start"), s.get("num_tokens")): s.get("text") for s in record.get("response_segments", [])
                if isinstance(s, dict) and s.get("policy")}
    texts = [segments.get((start, end - start)) for start, end in turns]
    if all(isinstance(text, str) for text in texts):
        return texts
    if decode is None:
        raise ValueError(f"trajectory {record['request_id']} ({record.get('_source')}) has no decoded turn text "
                         "(dumped without a tokenizer): pass --tokenizer")
    return [decode(record["response_ids"][start:end]) for start, end in turns]


def build_samples(trajectories: list[dict], *, style: str = "steps", min_reward: float = 1.0,
                  agent: str | None = "rag_r1", max_length: int | None = None,
                  decode: Callable[[list[int]], str] | None = None) -> tuple[list[dict], dict]:
    """Rows from the correct trajectories of `trajectories` (records as `viewer.load.load_dumps` returns them,
    rewards joined), and stats: trajectories read / kept / dropped per reason, samples per kind, tokens.
    `agent` None keeps every agent loop's trajectories."""
    if style not in STYLES:
        raise ValueError(f"unknown style {style!r}; known: {', '.join(STYLES)}")
    dropped = Counter({"other_agent": 0, "no_reward": 0, "below_min_reward": 0, "no_samples": 0})
    counts: Counter = Counter(turns_without_action=0, samples_too_long=0)
    rows: list[dict] = []
    for record in trajectories:
        if agent is not None and record.get("agent_name") != agent:
            dropped["other_agent"] += 1
            continue
        reward = record.get("reward")
        if not isinstance(reward, (int, float)):
            dropped["no_reward"] += 1
            continue
        if reward < min_reward:
            dropped["below_min_reward"] += 1
            continue
        samples, cut = cut_samples(record.get("prompt_ids", []), record["response_ids"], record["response_mask"],
                                   trajectory_turn_texts(record, decode), style=style, max_length=max_length)
        counts.update(cut)
        if not samples:
            dropped["no_samples"] += 1
            continue
        rows += [{**sample, "request_id": record["request_id"], "reward": float(reward)} for sample in samples]
    stats = {"style": style, "min_reward": min_reward, "agent": agent, "trajectories": len(trajectories),
             "kept": len(trajectories) - sum(dropped.values()), "dropped": dict(dropped), **counts,
             **sample_stats(rows)}
    return rows, stats


def sample_stats(rows: list[dict]) -> dict:
    """Samples per kind (with / without history) and token counts of `rows`."""
    by_kind = Counter(row["kind"] for row in rows)
    stats = {"samples": len(rows), "samples_by_kind": dict(sorted(by_kind.items())),
             "samples_without_history": sum(not row["history"] for row in rows),
             "tokens": sum(row["num_tokens"] for row in rows),
             "target_tokens": sum(row["num_target_tokens"] for row in rows)}
    if rows:
        stats["max_tokens"] = max(row["num_tokens"] for row in rows)
        stats["mean_tokens"] = round(stats["tokens"] / len(rows), 1)
    return stats


def write_rows(rows: list[dict], out: Path, stats: dict) -> dict:
    """`out` parquet + `out`.stats.json (stats with `out` added); returns the stats."""
    import pandas as pd

    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_parquet(out, index=False)
    stats = {**stats, "out": str(out)}
    out.with_suffix(".stats.json").write_text(json.dumps(stats, indent=1) + "\n")
    return stats


def write_sft_steps(dumps: list[str], out: Path, *, style: str = "steps", min_reward: float = 1.0,
                    agent: str | None = "rag_r1", max_length: int | None = None, tokenizer=None) -> dict:
    """Trajectory dumps (files or folders of *.jsonl) -> `out` parquet + stats; clear errors when nothing is kept."""
    from agentic_verl.viewer.load import load_dumps

    loaded = load_dumps(list(dumps))  # FileNotFoundError for a missing path or a folder without *.jsonl
    files = ", ".join(loaded.files)
    if not loaded.trajectories:
        raise ValueError(f"no trajectory records in {files} ({len(loaded.skipped)} malformed line(s) skipped, "
                         f"{len(loaded.unmatched_rewards)} reward record(s) without a trajectory)")
    decode = None
    if tokenizer is not None:
        if isinstance(tokenizer, (str, Path)):
            from transformers import AutoTokenizer

            tokenizer = AutoTokenizer.from_pretrained(str(tokenizer))
        decode = lambda ids: tokenizer.decode(ids, skip_special_tokens=False)  # noqa: E731
    rows, stats = build_samples(loaded.trajectories, style=style, min_reward=min_reward, agent=agent,
                                max_length=max_length, decode=decode)
    stats = {"files": len(loaded.files), "skipped_lines": len(loaded.skipped),
             "reward_records_joined": loaded.rewards_joined, **stats}
    if not rows:
        raise ValueError(f"no sample kept from {stats['trajectories']} trajectories in {files}: "
                         f"{_why_nothing(stats, loaded.rewards_joined)}")
    return write_rows(rows, out, stats)


def _why_nothing(stats: dict, rewards_joined: int) -> str:
    dropped = stats["dropped"]
    if dropped["other_agent"] == stats["trajectories"]:
        return f"none was written by agent loop {stats['agent']!r} (--agent all keeps every loop)"
    if rewards_joined == 0 and dropped["no_reward"]:
        return f"no reward records: {NO_REWARD_HINT}"
    reasons = ", ".join(f"{n} {reason.replace('_', ' ')}" for reason, n in dropped.items() if n)
    extra = [f"{stats[key]} {key.replace('_', ' ')}" for key in ("turns_without_action", "samples_too_long")
             if stats.get(key)]
    return f"dropped: {reasons}" + (f" ({', '.join(extra)})" if extra else "") + \
        f"; min reward {stats['min_reward']}"
