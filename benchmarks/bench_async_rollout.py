"""The rollout phase's wall time per step, sync against async scheduling, on long-tailed multi-turn trajectories.

    .venv/bin/python benchmarks/bench_async_rollout.py [--batch 32] [--steps 6] [--turn-ms 40] [--json PATH]

What runs: our `tool_agent_traced` loop (verl's ToolAgentLoop, hermes calls, the Qwen chat template) with an
in-process echo tool, against a scripted engine that answers each generation after `--turn-ms` milliseconds; each
trajectory makes 1 + a geometric number of tool calls (mean `--mean-turns`, capped at `--max-turns`), so a few
trajectories are much longer than the rest. Two schedules of the same trajectories:

- sync (verl's `trainer.v1.trainer_mode=sync`): a step starts `batch` trajectories and waits for all of them: the
  rollout phase of a step lasts as long as its longest trajectory;
- async (the shape of verl's `colocate_async` with partial rollouts and one warm-up batch): `2 x batch`
  trajectories are in flight; a step takes the first `batch` that finish, the others go on (a finished one is
  replaced at once), so the rollout phase of a step lasts until `batch` more have finished. The same with `batch`
  in flight separates the two effects: not waiting for the slowest, and more trajectories in flight.

This simulates the two schedules with our real loop doing the work; verl's trainer, its weight updates and the
off-policy cost of async (stale trajectories) are not in it. The table: mean and max rollout seconds per step
(after the first), trajectories per second, and the turns per trajectory drawn.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import time
from functools import partial


def make_echo_tool():
    from verl.tools.base_tool import BaseTool
    from verl.tools.schemas import OpenAIFunctionToolSchema, ToolResponse

    class EchoTool(BaseTool):
        async def execute(self, instance_id, parameters, **kwargs):
            return ToolResponse(text=str(parameters.get("text", ""))[:64]), 0.0, {}

    schema = OpenAIFunctionToolSchema.model_validate({"type": "function", "function": {
        "name": "echo", "description": "Echo the text.",
        "parameters": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}}})
    return EchoTool(config={"type": "native"}, tool_schema=schema)


class LatencyEngine:
    """verl's server_manager.generate: after `turn_s`, a tool call until the trajectory's turns are used, then an
    answer. The trajectory is named by the request id its loop gives every generation."""

    def __init__(self, tokenizer, turn_s: float):
        call = '<tool_call>\n{"name": "echo", "arguments": {"text": "x"}}\n</tool_call>'
        self.call = tokenizer.encode(call, add_special_tokens=False) + [tokenizer.eos_token_id]
        self.answer = tokenizer.encode("Done.", add_special_tokens=False) + [tokenizer.eos_token_id]
        self.turn_s, self.asked, self.pending = turn_s, {}, []

    async def generate(self, request_id, *, prompt_ids, sampling_params, **kwargs):
        from verl.workers.rollout.replica import TokenOutput

        if request_id not in self.asked:  # a new trajectory: take the next drawn length
            self.asked[request_id] = [0, self.pending.pop()]
        count = self.asked[request_id]
        count[0] += 1
        await asyncio.sleep(self.turn_s)
        ids = self.call if count[0] <= count[1] else self.answer
        return TokenOutput(token_ids=list(ids), log_probs=[-0.1] * len(ids), stop_reason="completed")


async def trajectories(loop_of, lengths: list[int], engine: LatencyEngine):
    """One coroutine per drawn trajectory, each taking its length when it first generates."""
    engine.pending = list(reversed(lengths))

    async def one():
        loop = loop_of(engine)
        await loop.run({"temperature": 1.0, "top_p": 1.0, "top_k": -1, "logprobs": True},
                       raw_prompt=[{"role": "user", "content": "Call echo, then say done."}], extra_info={},
                       tools_kwargs={}, index=0)
    return one


async def sync_schedule(one, batch: int, steps: int) -> list[float]:
    times = []
    for _ in range(steps):
        started = time.perf_counter()
        await asyncio.gather(*(one() for _ in range(batch)))
        times.append(time.perf_counter() - started)
    return times


async def async_schedule(one, batch: int, steps: int, batches_in_flight: int = 2) -> list[float]:
    in_flight = {asyncio.ensure_future(one()) for _ in range(batches_in_flight * batch)}
    times = []
    for _ in range(steps):
        started, done = time.perf_counter(), 0
        while done < batch:
            finished, in_flight = await asyncio.wait(in_flight, return_when=asyncio.FIRST_COMPLETED)
            done += len(finished)
            in_flight |= {asyncio.ensure_future(one()) for _ in finished}
        times.append(time.perf_counter() - started)
    for task in in_flight:
        task.cancel()
    await asyncio.gather(*in_flight, return_exceptions=True)
    return times


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--turn-ms", type=float, default=40.0)
    parser.add_argument("--mean-turns", type=float, default=3.0)
    parser.add_argument("--max-turns", type=int, default=24)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json")
    args = parser.parse_args(argv)

    from transformers import AutoTokenizer

    from agentic_verl.agent_loops.in_process import make_agent_loop
    from agentic_verl.cpu.models import qwen_tokenizer_dir
    from agentic_verl.demo.retool_task import loop_config

    tokenizer = AutoTokenizer.from_pretrained(qwen_tokenizer_dir())
    from omegaconf import OmegaConf

    config = OmegaConf.merge(loop_config("none", prompt_length=512, response_length=8192), {"actor_rollout_ref": {
        "rollout": {"multi_turn": {"max_assistant_turns": args.max_turns + 1, "max_user_turns": args.max_turns + 1}}}})
    tool = make_echo_tool()
    rng = random.Random(args.seed)
    n = (args.steps + 2) * 3 * args.batch  # enough drawn lengths for either schedule
    lengths = []
    for _ in range(n):
        turns = 0
        while turns < args.max_turns - 1 and rng.random() > 1 / args.mean_turns:
            turns += 1
        lengths.append(turns)

    def loop_of(engine):
        return make_agent_loop("tool_agent_traced", tokenizer=tokenizer, server_manager=engine,
                               trainer_config=config, tools=[tool], hf_model_type="qwen2")

    rows = []
    schedules = (("sync", sync_schedule), ("async, 1 batch in flight", partial(async_schedule, batches_in_flight=1)),
                 ("async, 2 batches in flight (one warm-up batch)", async_schedule))
    for name, schedule in schedules:
        async def run(schedule=schedule):
            engine = LatencyEngine(tokenizer, args.turn_ms / 1000)
            one = await trajectories(loop_of, lengths, engine)
            return await schedule(one, args.batch, args.steps + 1)

        times = asyncio.run(run())[1:]  # the first step fills the pipeline
        rows.append({"schedule": name, "mean_s": statistics.mean(times), "max_s": max(times),
                     "trajectories_per_s": args.batch / statistics.mean(times)})
    turns = [t + 1 for t in lengths]
    print(f"{args.batch} trajectories a step, {args.steps} steps after the first, {args.turn_ms:.0f} ms a turn; "
          f"turns per trajectory drawn: mean {statistics.mean(turns):.1f}, max {max(turns)}")
    print("| schedule | rollout s/step (mean) | rollout s/step (max) | trajectories/s |")
    print("|---|---|---|---|")
    for r in rows:
        print(f"| {r['schedule']} | {r['mean_s']:.2f} | {r['max_s']:.2f} | {r['trajectories_per_s']:.1f} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
