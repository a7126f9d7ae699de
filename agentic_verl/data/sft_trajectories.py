"""SFT cold-start data: correct search trajectories for toy-world questions, in the rollout's exact token layout.

Each trajectory is produced by running the real `rag_r1` agent loop against the real retrieval server, with a
scripted "server manager" in place of the policy: it returns the gold turns as token ids,

    <think> I need to find information about {subject}. </think>\\n<search> {subject} </search>
    [observation: what the loop retrieved and formatted]
    (two-hop only) <think> {fact naming the bridge} Now I need to find information about {bridge}. </think>\\n<search> {bridge} </search>
    [observation]
    <think> {fact with the answer} </think>\\n<answer> {answer} </answer>

so prompt tokens, stop-tag cuts, observation text and its tokenisation are the loop's own. A trajectory is kept
only when the loop's observations really contain the passages each turn relies on and the loop parsed the gold
answer, so the data never teaches an answer the search did not show.

Rows are cut by `agentic_verl.data.sft_steps.cut_samples`, the same code that cuts any trajectory dump
(`agentic-verl data sft-steps`). Style `trajectory` (default): one row per trajectory,
`input_ids = prompt_ids + response_ids` and `loss_mask = [0] * len(prompt_ids) + response_mask`: the policy's turns
are learned, the prompt and every retrieved document are not (RAG-R1's "retrieved documents never in the target").
Style `steps`: RAG-R1's step-level samples (each turn with and without the earlier turns in the input).

`decision_weight` W > 1 gives the deciding tokens W times the loss weight of the others: in every turn after a
search, the token right after its fact sentence (" Now" to search again, " </think>" to answer). The one after the
first search is where a one-hop and a two-hop trajectory part; with weight 1 it is ~1 of ~87 learned tokens, and a
short SFT learns the names and facts but leaves that choice near the data's base rate (notes/lab_notebook.md, "On
the dev split"). The two-hop trajectory's last turn is weighted too, so that " Now" is not learned as "what follows
a fact" (weighting only the first decision made the model search a third time).

Rows are read by `agentic_verl.training.sft_dataset.PretokenizedSFTDataset` in verl's SFT trainer.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

from agentic_verl.data.sft_steps import STYLES, cut_samples, mask_runs, sample_stats, write_rows

_SENTENCE_RE = re.compile(r"[^.]*\.")


def _sentence_with(text: str, needle: str) -> str:
    for sentence in _SENTENCE_RE.findall(text):
        if needle in sentence:
            return sentence.strip()
    raise ValueError(f"no sentence of {text!r} mentions {needle!r}")


def gold_turns(question: dict, corpus: dict[str, str]) -> tuple[list[str], list[str]]:
    """(policy turns, passage texts each search must retrieve) for a toy-world question with supporting_ids."""
    passages = [corpus[pid].split("\n", 1) for pid in question["supporting_ids"]]
    answer = question["golden_answers"][0]
    subject = passages[0][0]
    turns = [f"<think> I need to find information about {subject}. </think>\n<search> {subject} </search>"]
    if len(passages) == 2:
        bridge = passages[1][0]
        fact = _sentence_with(passages[0][1], bridge.removeprefix("The "))
        turns.append(f"<think> {fact} Now I need to find information about {bridge}. </think>\n"
                     f"<search> {bridge} </search>")
    fact = _sentence_with(passages[-1][1], answer)
    turns.append(f"<think> {fact} </think>\n<answer> {answer} </answer>")
    return turns, [p[1] for p in passages]


DECISION_TURN = 1  # the policy turn after the first search: where one-hop and two-hop trajectories part


def decision_prefix(turn: str) -> str:
    """The part of a gold turn after a search before its deciding token: `<think>` and the fact sentence.

    >>> decision_prefix("<think> Ada Bo was born in Kilu. </think>\\n<answer> Kilu </answer>")
    '<think> Ada Bo was born in Kilu.'
    """
    match = _SENTENCE_RE.match(turn)
    if match is None or not turn.startswith("<think> "):
        raise ValueError(f"not a gold turn with a fact sentence: {turn!r}")
    return match.group(0)


def decision_index(turn: str, tokenizer) -> int:
    """Index, among the tokens of `turn` as the scripted policy encodes it, of the deciding token."""
    prefix = tokenizer.encode(decision_prefix(turn), add_special_tokens=False)
    ids = tokenizer.encode(turn, add_special_tokens=False)
    if ids[:len(prefix)] != prefix or len(ids) == len(prefix):
        raise ValueError(f"the tokenizer does not split {turn!r} after its fact sentence; no deciding token")
    return len(prefix)


def end_of_turn_id(tokenizer) -> int | None:
    """The token the chat template puts right after an assistant message (what a chat policy stops with)."""
    messages = [{"role": "user", "content": "u"}, {"role": "assistant", "content": "XYZ"}]
    text = tokenizer.apply_chat_template(messages, tokenize=False)
    after = text[text.rindex("XYZ") + 3:]
    ids = tokenizer.encode(after, add_special_tokens=False)
    return ids[0] if ids else tokenizer.eos_token_id


async def build_trajectories(rows: list[dict], questions: list[dict], corpus: dict[str, str], *, tokenizer,
                             retrieval_url: str, topk: int = 3, response_length: int = 1024,
                             hf_model_type: str | None = None, concurrency: int = 8,
                             style: str = "trajectory", decision_weight: int = 1) -> tuple[list[dict], dict]:
    """SFT rows (input_ids, loss_mask, ...) for `rows` (verl RL rows from rag_r1_parquet.to_rows) whose
    toy-world `questions` (same order) have supporting_ids, cut in `style` (sft_steps.STYLES), the deciding
    tokens weighted `decision_weight` (module docstring). Returns (rows, stats); `kept` counts trajectories, `samples`
    rows."""
    from agentic_verl.agent_loops.in_process import (
        ScriptedServerManager,
        loop_trainer_config,
        make_agent_loop,
        sample_kwargs,
    )
    from agentic_verl.agent_loops.trace import TRACE_ID_FIELD

    if style not in STYLES:
        raise ValueError(f"unknown style {style!r}; known: {', '.join(STYLES)}")
    if isinstance(decision_weight, bool) or not isinstance(decision_weight, int) or decision_weight < 1:
        raise ValueError(f"decision_weight must be an integer >= 1, got {decision_weight!r}")
    config = loop_trainer_config(response_length, custom={"rag_r1": {"retrieval_url": retrieval_url, "topk": topk}})
    eos = end_of_turn_id(tokenizer)
    stats = {"questions": len(rows), "style": style, "decision_weight": decision_weight, "kept": 0,
             "dropped_retrieval_miss": 0, "dropped_loop_mismatch": 0}
    semaphore = asyncio.Semaphore(concurrency)

    async def one(row: dict, question: dict) -> list[dict] | None:
        turns, needed = gold_turns(question, corpus)
        server = ScriptedServerManager(tokenizer, turns, eos)
        loop = make_agent_loop("rag_r1", tokenizer=tokenizer, server_manager=server, trainer_config=config,
                               hf_model_type=hf_model_type)
        async with semaphore:
            out = await loop.run({"temperature": 1.0}, **sample_kwargs(row))
        observations = _observation_texts(out.response_ids, out.response_mask, tokenizer)
        if len(observations) != len(needed) or not all(n in o for n, o in zip(needed, observations, strict=True)):
            stats["dropped_retrieval_miss"] += 1
            return None
        info = out.extra_fields.get("rag_r1", {})
        if info.get("answer") != question["golden_answers"][0] or len(server.prompts) != len(turns):
            stats["dropped_loop_mismatch"] += 1
            return None
        response, mask = list(out.response_ids), list(out.response_mask)
        policy_turns = [(start, end) for policy, start, end in mask_runs(mask) if policy]
        texts = [tokenizer.decode(response[start:end], skip_special_tokens=True) for start, end in policy_turns]
        weights = {}
        if decision_weight > 1:
            for (start, _), turn in zip(policy_turns[1:], turns[1:], strict=True):  # every turn after a search
                weights[start + decision_index(turn, tokenizer)] = decision_weight
        samples, _ = cut_samples(out.prompt_ids, response, mask, texts, style=style, token_weights=weights)
        source = {"id": question["id"], "question": question["question"],
                  "golden_answers": list(question["golden_answers"]), "hops": question["hops"],
                  "request_id": out.extra_fields.get(TRACE_ID_FIELD)}
        return [{**sample, **source} for sample in samples]

    results = await asyncio.gather(*(one(r, q) for r, q in zip(rows, questions, strict=True)))
    kept = [sample for samples in results if samples is not None for sample in samples]
    stats["kept"] = sum(samples is not None for samples in results)
    stats.update(sample_stats(kept))
    return kept, stats


def _observation_texts(response_ids, response_mask, tokenizer) -> list[str]:
    """Decoded runs of mask-0 tokens (the loop's observations), in order."""
    return [tokenizer.decode([int(t) for t in response_ids[start:end]], skip_special_tokens=False)
            for policy, start, end in mask_runs(response_mask) if not policy]


def write_sft_parquet(*, world_dir: Path, questions: Path, retrieval_url: str, tokenizer, out: Path, mode: str = "sq",
                      topk: int = 3, limit: int | None = None, seed: int = 0, style: str = "trajectory",
                      decision_weight: int = 1) -> dict:
    """Trajectories for the toy-world `questions` file, cut in `style` -> `out` parquet; returns stats (also
    written next to it)."""
    import random

    from transformers import AutoTokenizer

    from agentic_verl.agent_loops.in_process import model_type
    from agentic_verl.data.rag_r1_parquet import to_rows

    records = [json.loads(line) for line in Path(questions).read_text().splitlines() if line.strip()]
    if any("supporting_ids" not in r for r in records):
        raise ValueError(f"{questions}: SFT trajectories need toy-world questions (with supporting_ids)")
    if limit is not None and limit < len(records):
        records = random.Random(seed).sample(records, limit)
    corpus = {}
    with open(Path(world_dir) / "corpus.jsonl", encoding="utf-8") as f:
        for line in f:
            doc = json.loads(line)
            corpus[doc["id"]] = doc["contents"]
    hf_type = None
    if isinstance(tokenizer, (str, Path)):
        hf_type = model_type(tokenizer) if (Path(tokenizer) / "config.json").is_file() else None
        tokenizer = AutoTokenizer.from_pretrained(str(tokenizer))
    rows = to_rows(records, split="train", data_source="toy_world", mode=mode)
    kept, stats = asyncio.run(build_trajectories(rows, records, corpus, tokenizer=tokenizer,
                                                 retrieval_url=retrieval_url, topk=topk, hf_model_type=hf_type,
                                                 style=style, decision_weight=decision_weight))
    if not kept:
        raise ValueError(f"no correct trajectory could be built ({stats}); is {retrieval_url} serving this world?")
    return write_rows(kept, Path(out), stats)
