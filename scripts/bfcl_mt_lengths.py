"""Token lengths of BFCL's multi-turn questions as `bfcl_multi_turn` trajectories: the prompt (system prompt with the
classes' function docs + turn 0) and the response of a ground-truth trajectory (per turn: one assistant message with
the turn's calls, the simulators' outputs as tool messages, a one-line answer, the next user turn), rendered by the
model's chat template as the loop renders them. The outputs come from a live BFCL environment server (started here,
in .venv-bfcl), the questions in the loop's row schema from `eval bfcl`'s loader, with the loop's training prompt
(`multi_turn_messages(entry, "funreason")`). The rendering counts what the loop produces give or take
a few tokens of the template's own (Qwen3's: 5 more, an empty think block in the final message and a last newline;
tests/agent_loops/test_bfcl_multi_turn_live.py checks it). This sizes recipes/funreason_mt's prompt and response
lengths (generated tasks use the same classes and docs); it trains on nothing.

    .venv/bin/python scripts/bfcl_mt_lengths.py --tokenizer Qwen/Qwen3-4B-Instruct-2507 [--limit 50]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics

from agentic_verl.agent_loops.prompts import bfcl_added_functions_message
from agentic_verl.bfcl_env.client import BfclEnvClient
from agentic_verl.bfcl_env.process import BfclEnvProcess
from agentic_verl.bfcl_env.protocol import keyword_call
from agentic_verl.eval.bfcl_data import MULTI_TURN, load_multi_turn_questions, multi_turn_messages
from agentic_verl.rewards.bfcl.multi_turn_entry import parse_entry
from agentic_verl.rewards.bfcl.render import render_calls


async def gold_conversation(client: BfclEnvClient, raw_entry: dict) -> list[dict]:
    """The question's prompt (the loop's training prompt) followed by its ground-truth trajectory as chat messages."""
    entry = parse_entry(raw_entry, need_ground_truth=True)
    order = {doc["name"]: list(doc["parameters"]["properties"]) for doc in entry.function}
    messages = multi_turn_messages(entry, "funreason")
    session = await client.create_session(initial_config=entry.initial_config,
                                          involved_classes=entry.involved_classes, long_context=entry.long_context)
    try:
        for turn, truth in enumerate(entry.ground_truth):
            if turn > 0:
                added = entry.added_functions(turn)
                messages += [bfcl_added_functions_message(added)] if added else entry.question[turn]
            if truth:
                calls = [keyword_call(text, order) for text in truth]
                messages.append({"role": "assistant",
                                 "content": render_calls([{c["name"]: c["arguments"]} for c in calls])})
                outputs = await client.execute(session, calls)
                messages += [{"role": "tool", "content": output} for output in outputs]
            messages.append({"role": "assistant", "content": "Done."})
    finally:
        await client.close(session)
    return messages


def _tokens(tokenizer, messages: list[dict], generation_prompt: bool) -> int:
    return len(tokenizer.apply_chat_template(messages, add_generation_prompt=generation_prompt, tokenize=True,
                                             return_dict=False))


async def measure(url: str, tokenizer, limit: int | None) -> dict:
    client = BfclEnvClient(url)
    report = {}
    for category in MULTI_TURN:
        entries = [q["entry"] for q in load_multi_turn_questions([category], limit)]
        prompts, responses = [], []
        for entry in entries:
            conversation = await gold_conversation(client, entry)
            prompt = multi_turn_messages(parse_entry(entry), "funreason")
            prompts.append(_tokens(tokenizer, prompt, True))
            responses.append(_tokens(tokenizer, conversation, False) - prompts[-1])
        report[category] = {"questions": len(entries),
                            "prompt": {"median": statistics.median(prompts), "max": max(prompts)},
                            "response": {"median": statistics.median(responses), "max": max(responses),
                                         "over_16384": sum(r > 16384 for r in responses)}}
    await client.aclose()
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokenizer", required=True, help="HF tokenizer folder or Hub id (its chat template)")
    parser.add_argument("--limit", type=int, default=None, help="questions per category (default: all 200)")
    args = parser.parse_args()
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(args.tokenizer)
    with BfclEnvProcess() as server:
        report = asyncio.run(measure(server.url, tokenizer, args.limit))
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
