"""The learning task (`make demo-learn`, tests/cpu/test_learning.py): choosing the right function, which SFT leaves
half done, so that GRPO has something to teach that a CPU can watch it learn.

A toy function-calling world of `N_FUNCTIONS` APIs (plain one-token names, no parameters), each described by an
invented verb ("Vokatorpa it."). Each question asks for one of them by that verb, among filler words ("Could you
vokatorpa now, Mibax?"); the right answer is `[<that function>()]`, scored by BFCL's AST checker (category
`multiple`: exactly one call, of the expected function). The prompt is short (a one-line function list as the
system turn), so a tiny model trains in seconds.

The SFT data teaches the call format always, and the right function only for a share of the examples (the rest
name one at random): the SFT model writes well-formed calls and is right about `right_share + (1 - right_share)
/ N_FUNCTIONS` of the time. What is left, RL must teach: the reward rises only if GRPO's updates reach the policy.
(From a model that picks at random, a random tiny model needs far more samples than a CI run has: 16 GRPO steps of
128 samples moved it from 0.20 to 0.35, and a larger learning rate breaks the format under Adam's first steps.)

`grpo_overrides` holds the GRPO settings of `recipes/funreason/grpo_ast.sh` on this task (the test's and the demo's);
`prepare` writes what a run needs (RL parquet, the AST-only reward config, the SFT start).
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path

# One token each in SmolLM2's and Qwen's vocabularies: the choice is one sampled token, and a partly trained tiny
# model cannot splice pieces of two names into a third (it did with multi-token invented names).
NAMES = ("door", "fan", "radio", "oven")
N_FUNCTIONS = len(NAMES)
_SYLLABLES = ("ka", "vo", "rel", "zu", "mi", "tor", "pa", "quin", "shy", "dro", "lem", "bax")
_TEMPLATES = ("Please {verb} for {name}.", "{name} wants you to {verb}.", "Could you {verb} now, {name}?",
              "Time to {verb}, says {name}.")
# The reward: BFCL's AST match alone (no format bonus), so the reward is the share of right calls.
AST_ONLY = "components:\n  - name: bfcl_ast\n"

LEARNING_RATE = 5e-3
# Adam divides each update by the root of the gradient's running square plus eps. With torch's 1e-8 the 49k output
# rows of tokens the policy never writes, whose gradients are ~1e-6, moved as far as the ones that matter, and the
# format broke within a few steps (reward ~0.5 -> 0.0 and no way back). At 1e-4 the run still dipped for a step
# (0.90 -> 0.28 at the last step in CI): the pushes on the shared format tokens (`[`, `()]`, end of turn) of right and
# wrong answers nearly cancel, and Adam scaled that small remainder up to a full step, so the policy dropped `[` or
# the end token for a step. At 3e-3 such small gradients move little while the choice's do: in a plain-PyTorch copy of
# this update (tests/cpu/learning_sim.py; its notes in the lab notebook, "Learning test") no step of 9 seeds fell
# below 0.54 at lr 5e-3, while 3 of 6 seeds at lr 3e-3 and eps 1e-4 had steps below 0.40.
ADAM_EPS = 3e-3
KL_COEF = 0.1


def _word(rng: random.Random, syllables: int) -> str:
    return "".join(rng.choice(_SYLLABLES) for _ in range(syllables))


@dataclass
class ChoiceTask:
    functions: list[dict]  # BFCL function docs
    verbs: list[str]  # verbs[i] asks for functions[i]
    questions: list[dict]  # {"question", "function": index}

    @property
    def system_prompt(self) -> str:
        return "Call exactly one function: " + "; ".join(
            f"{f['name']}() - {f['description']}" for f in self.functions)

    def messages(self, question: str) -> list[dict]:
        return [{"role": "system", "content": self.system_prompt}, {"role": "user", "content": question}]

    def answer(self, index: int) -> str:
        return f"[{self.functions[index]['name']}()]"


def choice_task(seed: int = 0, n_questions: int = 64) -> ChoiceTask:
    rng = random.Random(seed)
    verbs: list[str] = []
    while len(verbs) < N_FUNCTIONS:
        verb = _word(rng, 3)
        if verb not in verbs:
            verbs.append(verb)
    functions = [{"name": name, "description": f"{verb.capitalize()} it.",
                  "parameters": {"type": "dict", "properties": {}, "required": []}}
                 for name, verb in zip(NAMES, verbs, strict=True)]
    questions = []
    for _ in range(n_questions):
        index = rng.randrange(N_FUNCTIONS)
        text = rng.choice(_TEMPLATES).format(verb=verbs[index], name=_word(rng, 2).capitalize())
        questions.append({"question": text, "function": index})
    return ChoiceTask(functions, verbs, questions)


def rl_rows(task: ChoiceTask) -> list[dict]:
    """verl RL rows for the `function_call` loop (its row prompt kept) and the `bfcl_ast` reward."""
    rows = []
    for i, q in enumerate(task.questions):
        name = task.functions[q["function"]]["name"]
        rows.append({
            "data_source": "fc_choice", "prompt": task.messages(q["question"]), "ability": "function_calling",
            "agent_name": "function_call",
            "reward_model": {"style": "rule", "ground_truth": json.dumps([{name: {}}])},
            "extra_info": {"index": i, "split": "train", "category": "multiple", "language": "python",
                           "functions": json.dumps(task.functions), "function_call": {"system_prompt": "row"}},
        })
    return rows


def write_rl_parquet(task: ChoiceTask, path: Path) -> Path:
    import pandas as pd

    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rl_rows(task)).to_parquet(path)
    return path


def prompt_token_ids(task: ChoiceTask, tokenizer) -> list[list[int]]:
    """Each question's chat prompt with the generation prompt, as token ids (transformers 5 returns an encoding)."""
    prompts = [tokenizer.apply_chat_template(task.messages(q["question"]), add_generation_prompt=True, tokenize=True)
               for q in task.questions]
    return [list(p["input_ids"]) if hasattr(p, "keys") else list(p) for p in prompts]


def sft_tiny_model(task: ChoiceTask, model_dir: Path, out: Path, steps: int = 500, batch_size: int = 16,
                   lr: float = 3e-3, seed: int = 0, right_share: float = 0.5) -> Path:
    """Plain-PyTorch SFT of the tiny model on the call format (`sft_on_examples`): each example names the
    question's function with probability `right_share`, else one drawn at random. Saves an HF folder at `out`."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    prompts = prompt_token_ids(task, tokenizer)
    answers = [tokenizer.encode(task.answer(i), add_special_tokens=False) + [tokenizer.eos_token_id]
               for i in range(len(task.functions))]

    def example(rng: random.Random) -> tuple[list[int], list[int]]:
        i = rng.randrange(len(prompts))
        right = rng.random() < right_share
        return prompts[i], answers[task.questions[i]["function"] if right else rng.randrange(len(answers))]

    return sft_on_examples(model_dir, out, example, steps=steps, batch_size=batch_size, lr=lr, seed=seed)


def sft_on_examples(model_dir: Path, out: Path, example, steps: int = 500, batch_size: int = 16,
                    lr: float = 3e-3, seed: int = 0) -> Path:
    """Plain-PyTorch SFT of a (tiny) HF model folder: every step trains on `batch_size` examples drawn by
    `example(rng)` -> (prompt token ids, target token ids), the prompt masked out of the loss. Saves an HF folder
    at `out`."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    model = AutoModelForCausalLM.from_pretrained(str(model_dir), dtype=torch.float32)
    rng = random.Random(seed)
    torch.manual_seed(seed)
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    model.train()
    for _ in range(steps):
        batch = [example(rng) for _ in range(batch_size)]
        width = max(len(p) + len(a) for p, a in batch)
        ids = torch.full((batch_size, width), pad_id)
        labels = torch.full((batch_size, width), -100)
        attention = torch.zeros((batch_size, width), dtype=torch.long)
        for row, (prompt, answer) in enumerate(batch):
            seq = prompt + answer
            ids[row, :len(seq)] = torch.tensor(seq)
            attention[row, :len(seq)] = 1
            labels[row, len(prompt):len(seq)] = torch.tensor(answer)
        # logits only where a target token is predicted: the vocabulary head over the prompt would cost ~8x more
        hidden = model.model(input_ids=ids, attention_mask=attention).last_hidden_state[:, :-1]
        targets = labels[:, 1:]
        predicted = targets != -100
        loss = torch.nn.functional.cross_entropy(model.lm_head(hidden[predicted]), targets[predicted])
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


@dataclass(frozen=True)
class TaskFiles:
    train: Path  # the RL parquet
    reward: Path  # the AST-only reward config
    model: Path  # the SFT start (HF folder)


def task_files(out: Path) -> TaskFiles:
    """Where `prepare` writes the task's files under `out`."""
    return TaskFiles(out / "train.parquet", out / "ast_only.yaml", out / "sft")


def prepare(out: Path, seed: int = 0) -> TaskFiles:
    """The task's files under `out`: train.parquet, ast_only.yaml, the tiny llama over SmolLM2's tokenizer (base/)
    and its SFT (sft/, ~30-40 s on 2 cores)."""
    from agentic_verl.cpu.models import make_tiny_model, smollm2_hf_dir

    files = task_files(out)
    task = choice_task(seed=seed)
    write_rl_parquet(task, files.train)
    files.reward.write_text(AST_ONLY)
    base = make_tiny_model(out / "base", arch="llama", tokenizer_dir=smollm2_hf_dir())
    sft_tiny_model(task, base, files.model, seed=seed)
    return files


def grpo_env(files: TaskFiles) -> dict[str, str]:
    """The paths recipes/funreason/grpo_ast.sh takes from the environment (the recipes' machine facts): the SFT start
    and the RL parquet (also the validation file: validation is off)."""
    return {"MODEL_PATH": str(files.model), "TRAIN_FILE": str(files.train), "VAL_FILE": str(files.train)}


def grpo_overrides(files: TaskFiles, *, lr: float = LEARNING_RATE, steps: int = 12, questions: int = 32,
                   samples: int = 4, seed: int = 0) -> list[str]:
    """Hydra overrides for recipes/funreason/grpo_ast.sh on this task (with `grpo_env`'s paths): `questions` x
    `samples` a step, 8 new tokens at most, the settings of a stable run (each kept because a run without it
    failed)."""
    return [
        # `++`: set whether or not the recipe's YAML names a reward config
        f"++reward.custom_reward_function.reward_kwargs.config={files.reward}",
        f"data.train_batch_size={questions}", f"actor_rollout_ref.actor.ppo_mini_batch_size={questions}",
        f"actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu={questions}",
        f"actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu={questions}",
        f"actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu={questions}",
        f"actor_rollout_ref.rollout.n={samples}", "data.max_prompt_length=128", "data.max_response_length=8",
        "+actor_rollout_ref.rollout.custom.function_call.max_tokens=8",
        f"trainer.total_training_steps={steps}",
        f"actor_rollout_ref.actor.optim.lr={lr}", "actor_rollout_ref.actor.optim.lr_warmup_steps_ratio=0",
        # the KL loss to the SFT start keeps the call format while the choice moves: without it the format broke
        # and never came back (all tokens garbage, reward 0 for every sample, nothing left to learn from)
        "actor_rollout_ref.actor.use_kl_loss=True", f"actor_rollout_ref.actor.kl_loss_coef={KL_COEF}",
        "actor_rollout_ref.actor.kl_loss_type=low_var_kl",
        f"++actor_rollout_ref.actor.optim.override_optimizer_config={{eps:{ADAM_EPS}}}",
        # Dr. GRPO's advantage (no division by the group's std): a lone wrong sample in a group that is otherwise
        # right is pushed down by 0.75, not 1.5; with the std, the reward fell from 0.88 to 0.03 for two steps
        "algorithm.norm_adv_by_std_in_grpo=False",
        f"data.seed={seed}", f"actor_rollout_ref.rollout.seed={seed}",
    ]
