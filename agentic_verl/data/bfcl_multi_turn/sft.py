"""SFT rows from generated gold trajectories, in the `bfcl_multi_turn` loop's exact token layout.

Each row comes from running the real `bfcl_multi_turn` agent loop (built as verl builds it, `in_process`) on the
task's RL row, with a scripted policy that writes the gold assistant messages (each step ended by EOS) and, in
place of the environment server, `ReplayEnv`: it answers each executed step with the outputs bfcl-eval's executor
gave for the gold calls when the task was generated, and fails loudly if the loop asks for anything else. So the
prompt, the chat template's rendering of tool outputs and later user turns, the added-functions messages of
miss_func turns and the masks are the loop's own. A row is kept only when the loop executed exactly the gold steps,
ended every turn on the gold answer, and was not cut short.

Row: `input_ids` = prompt + response, `loss_mask` = 0 on the prompt, the response mask after it (every assistant
message is learned; tool outputs and user turns are not), read by `agentic_verl.training.sft_dataset
.PretokenizedSFTDataset`; plus `id`, `kind`, `num_tokens`, `num_target_tokens`.
"""

from __future__ import annotations

import asyncio
import json
from contextlib import contextmanager

from agentic_verl.rewards.bfcl import multi_turn as bfcl_mt_reward

REPLAY_SCHEME = "replay://"


class ReplayMismatch(RuntimeError):
    """The loop asked the environment for something the gold trajectory did not do (a bug, never data)."""


class ReplayEnv:
    """The `BfclEnvClient` interface over one gold trajectory's recorded outputs."""

    def __init__(self, entry: dict, trajectory: dict):
        self.entry_id = entry["id"]
        self.session = {"initial_config": entry["initial_config"], "involved_classes": entry["involved_classes"],
                        "long_context": entry["long_context"]}
        turns = zip(trajectory["calls"], trajectory["outputs"], strict=True)
        self.expected = [(calls, outputs) for turn_calls, turn_outputs in turns
                         for calls, outputs in zip(turn_calls, turn_outputs, strict=True)]
        self.executed = 0
        self.closed = False
        self.mismatches: list[str] = []  # the loop turns an environment error into a counted outcome: kept here

    def _mismatch(self, message: str) -> ReplayMismatch:
        self.mismatches.append(message)
        return ReplayMismatch(message)

    async def create_session(self, *, initial_config: dict, involved_classes: list[str], long_context: bool = False):
        asked = {"initial_config": initial_config, "involved_classes": list(involved_classes),
                 "long_context": long_context}
        if json.loads(json.dumps(asked)) != json.loads(json.dumps(self.session)):
            raise self._mismatch(f"{self.entry_id}: the loop opened a session on another state than the entry's")
        return f"replay-{self.entry_id}"

    async def execute(self, session_id: str, calls: list[dict]) -> list[str]:
        if self.executed >= len(self.expected):
            raise self._mismatch(f"{self.entry_id}: the loop executed a step beyond the gold trajectory: {calls}")
        expected, outputs = self.expected[self.executed]
        if json.loads(json.dumps(calls)) != json.loads(json.dumps(expected)):
            raise self._mismatch(f"{self.entry_id}: gold step {self.executed} is {expected}, the loop executed {calls}")
        self.executed += 1
        return list(outputs)

    async def close(self, session_id: str) -> None:
        self.closed = True

    async def state(self, session_id: str) -> dict:
        raise self._mismatch("a replayed trajectory has no live state")

    async def check(self, *, entry: dict, model_calls: list) -> dict:
        raise self._mismatch("a replayed trajectory is not checked here (the generator checked its gold)")


@contextmanager
def replay_environment(replays: dict[str, ReplayEnv]):
    """While active, the loop's environment client for a `replay://ID` url is `replays[url]`. It swaps the one
    function the loop makes its clients with (`rewards.bfcl.multi_turn.new_env_client`); other urls get real
    clients."""
    original = bfcl_mt_reward.new_env_client

    def new_env_client(url, api_key_env, timeout_s):
        return replays[url] if url in replays else original(url, api_key_env, timeout_s)

    bfcl_mt_reward.new_env_client = new_env_client
    try:
        yield
    finally:
        bfcl_mt_reward.new_env_client = original


def _flat_script(trajectory: dict) -> list[str]:
    return [text for turn in trajectory["assistant"] for text in turn]


async def _one(row: dict, entry: dict, trajectory: dict, *, tokenizer, hf_model_type, eos_id: int,
               max_length: int) -> dict:
    from agentic_verl.agent_loops.in_process import (
        ScriptedServerManager,
        loop_trainer_config,
        make_agent_loop,
        sample_kwargs,
    )

    url = REPLAY_SCHEME + entry["id"]
    replay = ReplayEnv(entry, trajectory)
    script = _flat_script(trajectory)
    server = ScriptedServerManager(tokenizer, script, eos_id, eos_every_turn=True)
    config = loop_trainer_config(max_length, prompt_length=max_length,
                                 custom={"bfcl_multi_turn": {"env_url": url, "max_tokens_per_step": max_length}})
    loop = make_agent_loop("bfcl_multi_turn", tokenizer=tokenizer, server_manager=server, trainer_config=config,
                           hf_model_type=hf_model_type)
    with replay_environment({url: replay}):
        out = await loop.run({"temperature": 1.0}, **sample_kwargs(row))
    record = out.extra_fields["bfcl_multi_turn"]
    problems = list(replay.mismatches)
    if record["terminated"] is not None:
        problems.append(f"terminated: {record['terminated']}")
    if json.loads(json.dumps(record["model_calls"])) != json.loads(json.dumps(trajectory["calls"])):
        problems.append("executed steps differ from the gold steps")
    if any(turn["end"] != "no_call" or turn["decode_failures"] for turn in record["turns"]):
        problems.append(f"a turn did not end on its answer: {record['turns']}")
    if len(server.prompts) != len(script) or replay.executed != len(replay.expected) or not replay.closed:
        problems.append("the script or the gold steps were not used up")
    if problems:
        raise ReplayMismatch(f"{entry['id']}: {'; '.join(problems)}")
    mask = [0] * len(out.prompt_ids) + list(out.response_mask)
    return {"input_ids": list(out.prompt_ids) + list(out.response_ids), "loss_mask": mask, "id": entry["id"],
            "kind": trajectory["kind"], "num_tokens": len(mask), "num_target_tokens": sum(mask)}


def build_rows(rows: list[dict], entries: list[dict], trajectories: list[dict], *, tokenizer,
               hf_model_type: str | None = None, max_length: int = 1 << 20) -> list[dict]:
    """SFT rows for the RL `rows` of `entries` and their gold `trajectories` (same order). `max_length` bounds the
    loop's prompt and response budgets (far above any trajectory: `--sft-max-tokens` is the length filter)."""
    from agentic_verl.data.sft_trajectories import end_of_turn_id

    eos_id = tokenizer.eos_token_id
    if eos_id is None or eos_id != end_of_turn_id(tokenizer):
        raise ValueError(f"the tokenizer's EOS ({tokenizer.eos_token!r}) is not the token its chat template ends an "
                         "assistant message with: the bfcl_multi_turn loop ends each step on EOS, so the SFT targets "
                         "would teach another ending than the template's; fix the tokenizer's eos_token")

    async def run_all():
        return [await _one(row, entry, trajectory, tokenizer=tokenizer, hf_model_type=hf_model_type, eos_id=eos_id,
                           max_length=max_length)
                for row, entry, trajectory in zip(rows, entries, trajectories, strict=True)]

    return asyncio.run(run_all())
