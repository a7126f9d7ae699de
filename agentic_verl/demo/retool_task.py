"""The ReTool-style miniature's task (recipes/retool/): arithmetic word problems that a 135M model cannot do in its
head, solved by writing Python for the code tool and answering with what it printed.

Each problem is a one-sentence story around a product of a 3-4 digit and a 2-3 digit number ("A farm has 4127
rows of 38 trees. How many trees are there?"), generated from a seed, so the train and held-out sets of a seed are
the same on every machine and never share a number pair. The answer is read from the policy's final text as
`<answer>N</answer>` (agentic_verl/rewards/numeric.py, reward_fns/numeric_em.py).

The tool: `PythonTool` (agentic_verl/tools/code.py) through verl's `ToolAgentLoop` (`tool_agent_traced`) and its
hermes parser. A call is `<tool_call>{"name": "python", "arguments": {"code": "print(4127 * 38)"}}</tool_call>`.
SmolLM2-135M-Instruct's chat template ignores `tools=` (it renders only role and content), so the tool and the
answer format are described in the system prompt (`SYSTEM_PROMPT`); the tool's output comes back as a `tool`
message, which that template renders as `<|im_start|>tool ... <|im_end|>`.

SFT traces (`sft_rows`) are made by running that same loop with a scripted policy (the gold turns: the call, then
the answer) against the real tool, so the prompt, the tool response and its tokens are the ones a rollout has; a
trace is kept only when the tool printed the answer. Evaluation (`evaluate`) runs the loop greedily with an
in-process engine on held-out problems: accuracy and tool calls per question.
"""

from __future__ import annotations

import asyncio
import json
import random
from dataclasses import dataclass
from pathlib import Path

DATA_SOURCE = "retool_arith"
AGENT_NAME = "tool_agent_traced"
SYSTEM_PROMPT = (
    "You solve arithmetic with Python. To run code, write "
    '<tool_call>{"name": "python", "arguments": {"code": "print(...)"}}</tool_call> and read its output. '
    "Then give the number as <answer>N</answer>.")
_STORIES = (
    ("A farm has {a} rows of {b} trees.", "How many trees are there?"),
    ("A shop orders {a} boxes with {b} pencils in each box.", "How many pencils does it get?"),
    ("A train carries {a} people on each trip and makes {b} trips.", "How many people does it carry?"),
    ("A printer prints {a} pages an hour for {b} hours.", "How many pages does it print?"),
    ("A library has {a} shelves holding {b} books each.", "How many books are there?"),
    ("A baker bakes {a} trays of {b} cookies.", "How many cookies are baked?"),
)


@dataclass(frozen=True)
class Problem:
    question: str
    a: int
    b: int

    @property
    def answer(self) -> int:
        return self.a * self.b

    def messages(self) -> list[dict]:
        return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": self.question}]

    def gold_turns(self) -> list[str]:
        """The policy's turns of a right solution: one code call, then the answer."""
        call = json.dumps({"name": "python", "arguments": {"code": f"print({self.a} * {self.b})"}})
        return [f"<tool_call>\n{call}\n</tool_call>", f"<answer>{self.answer}</answer>"]


def problems(seed: int, n_train: int, n_test: int) -> tuple[list[Problem], list[Problem]]:
    """(train, held-out) problems for `seed`; no (a, b) pair is in both, nor twice in one."""
    rng = random.Random(f"retool-{seed}")
    seen: set[tuple[int, int]] = set()
    drawn: list[Problem] = []
    while len(drawn) < n_train + n_test:
        a, b = rng.randint(100, 9999), rng.randint(12, 999)
        if (a, b) in seen:
            continue
        seen.add((a, b))
        setting, ask = rng.choice(_STORIES)
        drawn.append(Problem(f"{setting.format(a=a, b=b)} {ask}", a, b))
    return drawn[:n_train], drawn[n_train:]


def rl_rows(items: list[Problem], split: str) -> list[dict]:
    """verl RL rows: the chat prompt, `tool_agent_traced`, and the answer as the numeric_em ground truth."""
    return [{"data_source": DATA_SOURCE, "prompt": p.messages(), "ability": "math", "agent_name": AGENT_NAME,
             "reward_model": {"style": "rule", "ground_truth": str(p.answer)},
             "extra_info": {"index": i, "split": split, "question": p.question}}
            for i, p in enumerate(items)]


def _write(rows: list[dict], path: Path) -> Path:
    import pandas as pd

    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_parquet(path)
    return path


# -- the loop, in process, with the recipe's rollout settings -------------------------------------------------------
RECIPE = Path(__file__).resolve().parents[2] / "recipes" / "retool" / "grpo.yaml"
TOOL_CONFIG = "configs/tools/python_tool.yaml"
# the miniature's lengths (recipes/retool/demo.sh passes the same to GRPO): a trace is ~160 SmolLM2 tokens
PROMPT_LENGTH, RESPONSE_LENGTH = 160, 96


def recipe_multi_turn() -> dict:
    """`actor_rollout_ref.rollout.multi_turn` of recipes/retool/grpo.yaml: the one home of the loop's settings, read
    here so that traces and evaluations see the prompts and limits GRPO's rollouts see."""
    from omegaconf import OmegaConf

    return dict(OmegaConf.to_container(OmegaConf.load(RECIPE).actor_rollout_ref.rollout.multi_turn))


def loop_config(tool_config_path: str, prompt_length: int = PROMPT_LENGTH, response_length: int = RESPONSE_LENGTH):
    from omegaconf import OmegaConf

    from agentic_verl.agent_loops.in_process import loop_trainer_config

    config = loop_trainer_config(response_length, prompt_length)
    multi_turn = {**recipe_multi_turn(), "tool_config_path": tool_config_path}
    return OmegaConf.merge(config, {"actor_rollout_ref": {"rollout": {
        "multi_turn": multi_turn, "full_determinism": False, "trace": {"backend": None}}}})


def _loop(tokenizer, server, config, tools):
    from agentic_verl.agent_loops.in_process import make_agent_loop

    return make_agent_loop(AGENT_NAME, tokenizer=tokenizer, server_manager=server, trainer_config=config, tools=tools)


def _row_kwargs(problem: Problem, index: int) -> dict:
    from agentic_verl.agent_loops.in_process import sample_kwargs

    return sample_kwargs(rl_rows([problem], "eval")[0] | {"extra_info": {"index": index}})


async def _sft_row(problem: Problem, index: int, tokenizer, config, tools) -> dict | None:
    from agentic_verl.agent_loops.in_process import ScriptedServerManager

    server = ScriptedServerManager(tokenizer, problem.gold_turns(), tokenizer.eos_token_id, eos_every_turn=True)
    loop = _loop(tokenizer, server, config, tools)
    out = await loop.run({"temperature": 0.0, "max_tokens": RESPONSE_LENGTH}, **_row_kwargs(problem, index))
    calls = loop.trace.tool_calls
    if len(calls) != 1 or calls[0].failure is not None or str(problem.answer) not in (calls[0].result or ""):
        return None  # the tool did not print the answer: never teach an answer the tool did not show
    return {"input_ids": list(out.prompt_ids) + list(out.response_ids),
            "loss_mask": [0] * len(out.prompt_ids) + list(out.response_mask)}


def sft_rows(items: list[Problem], tokenizer, tool_config_path: str) -> list[dict]:
    """Pretokenized SFT rows (input_ids, loss_mask: the policy's turns only) through the real loop and tool."""
    from verl.tools.tool_registry import initialize_tools_from_config

    tools = initialize_tools_from_config(tool_config_path)
    config = loop_config(tool_config_path)

    async def go():
        return await asyncio.gather(*[_sft_row(p, i, tokenizer, config, tools) for i, p in enumerate(items)])

    rows = [r for r in asyncio.run(go()) if r is not None]
    if len(rows) < len(items):
        raise RuntimeError(f"{len(items) - len(rows)} of {len(items)} gold traces did not get the answer from the tool")
    return rows


def evaluate(model_dir: str, items: list[Problem], tool_config_path: str = TOOL_CONFIG, engine: str = "hf", *,
             prompt_length: int = PROMPT_LENGTH, response_length: int = RESPONSE_LENGTH) -> dict:
    """Greedy runs of the loop on `items`: {"accuracy", "tool_calls_per_question", "questions", "failures"}."""
    from collections import Counter

    from transformers import AutoTokenizer
    from verl.tools.tool_registry import initialize_tools_from_config

    from agentic_verl.agent_loops.in_process import EngineServerManager
    from agentic_verl.generation import open_engine
    from agentic_verl.rewards.numeric import numeric_em

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    tools = initialize_tools_from_config(tool_config_path)
    config = loop_config(tool_config_path, prompt_length, response_length)
    params = {"temperature": 0.0, "top_p": 1.0, "top_k": -1, "max_tokens": response_length}

    async def one(server, problem, index):
        loop = _loop(tokenizer, server, config, tools)
        out = await loop.run(dict(params), **_row_kwargs(problem, index))
        text = tokenizer.decode(out.response_ids, skip_special_tokens=True)  # as verl's reward manager decodes
        verdict = numeric_em(text, str(problem.answer))
        return verdict["score"], len(loop.trace.tool_calls), verdict["error_type"]

    with open_engine(engine, model_dir, tokenizer, max_batch_size=len(items)) as eng:
        server = EngineServerManager(eng)

        async def go():
            return await asyncio.gather(*[one(server, p, i) for i, p in enumerate(items)])

        results = asyncio.run(go())
    n = len(results)
    return {"accuracy": sum(r[0] for r in results) / n, "tool_calls_per_question": sum(r[1] for r in results) / n,
            "questions": n, "failures": dict(Counter(r[2] for r in results if r[2]))}


@dataclass(frozen=True)
class TaskFiles:
    train: Path  # RL rows for GRPO
    test: Path  # held-out RL rows (evaluations; GRPO's val file)
    sft: Path  # pretokenized SFT traces


def prepare(out: Path, seed: int, tokenizer_dir: str, n_train: int = 64, n_test: int = 32,
            tool_config_path: str = TOOL_CONFIG) -> TaskFiles:
    """The seed's files under `out`: train.parquet, test.parquet (RL rows) and sft.parquet (traces of the train
    problems, tokenized for `tokenizer_dir`'s model)."""
    from transformers import AutoTokenizer

    train, test = problems(seed, n_train, n_test)
    files = TaskFiles(out / "train.parquet", out / "test.parquet", out / "sft.parquet")
    _write(rl_rows(train, "train"), files.train)
    _write(rl_rows(test, "test"), files.test)
    _write(sft_rows(train, AutoTokenizer.from_pretrained(tokenizer_dir), tool_config_path), files.sft)
    return files


def load_problems(path: Path) -> list[Problem]:
    """The problems of an RL parquet written by `prepare` (the numbers are read back from the code-free question)."""
    import pandas as pd

    frame = pd.read_parquet(path)
    out = []
    for question, truth in zip(frame["extra_info"].map(lambda e: e["question"]),
                               frame["reward_model"].map(lambda r: r["ground_truth"]), strict=True):
        a, b = (int(w) for w in question.split() if w.isdigit())
        if a * b != int(truth):
            raise ValueError(f"{path}: {question!r} does not match its answer {truth}")
        out.append(Problem(question, a, b))
    return out
