"""The task behind the learning test (test_learning.py): choosing the right function, which SFT leaves half done.

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

`learning_verdict` is the assertion.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path

from cpu_backend_helpers import weights_in_sync

# One token each in SmolLM2's and Qwen's vocabularies: the choice is one sampled token, and a partly trained tiny
# model cannot splice pieces of two names into a third (it did with multi-token invented names).
NAMES = ("door", "fan", "radio", "oven")
N_FUNCTIONS = len(NAMES)
_SYLLABLES = ("ka", "vo", "rel", "zu", "mi", "tor", "pa", "quin", "shy", "dro", "lem", "bax")
_TEMPLATES = ("Please {verb} for {name}.", "{name} wants you to {verb}.", "Could you {verb} now, {name}?",
              "Time to {verb}, says {name}.")


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
    """Plain-PyTorch SFT of the tiny model on the call format: each example names the question's function with
    probability `right_share`, else one drawn at random; the prompt is masked out of the loss. Saves an HF folder
    at `out`."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    model = AutoModelForCausalLM.from_pretrained(str(model_dir), dtype=torch.float32)
    rng = random.Random(seed)
    torch.manual_seed(seed)
    prompts = prompt_token_ids(task, tokenizer)
    answers = [tokenizer.encode(task.answer(i), add_special_tokens=False) + [tokenizer.eos_token_id]
               for i in range(len(task.functions))]
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    model.train()
    for _ in range(steps):
        batch = []
        for _ in range(batch_size):
            i = rng.randrange(len(prompts))
            right = rng.random() < right_share
            batch.append((prompts[i], answers[task.questions[i]["function"] if right else rng.randrange(len(answers))]))
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


@dataclass
class Verdict:
    learned: bool
    first: float  # mean reward of the first `window` steps
    last: float  # mean reward of the last `window` steps
    tool_calls: float  # mean tool calls per sample over the last `window` steps
    max_probs_diff: float  # the largest rollout/trainer probability gap of any step
    reasons: list[str]


def learning_verdict(steps: list[dict], window: int = 4, margin: float = 0.10, floor: float = 0.75) -> Verdict:
    """Did the run learn? `steps` are verl's per-step metrics (file logger). Learned when the mean reward of the
    last `window` steps exceeds the first `window` steps' by `margin` and ends at `floor` or more, the policy
    calls a tool in every sample at the end (mean tool calls >= 0.9), and the rollout's weights are the trainer's
    at every step (cpu_backend_helpers.weights_in_sync: probability gap < 1e-3, Pearson > 0.999, k3-KL < 5e-3)."""
    if len(steps) < 2 * window:
        raise ValueError(f"need at least {2 * window} steps, got {len(steps)}")
    reward = [s["critic/score/mean"] for s in steps]
    first, last = sum(reward[:window]) / window, sum(reward[-window:]) / window
    calls = sum(s["agent/num_tool_calls/mean"] for s in steps[-window:]) / window
    diff = max(s["training/rollout_probs_diff_max"] for s in steps)
    out_of_sync = [i for i, s in enumerate(steps, start=1) if not weights_in_sync(s)]
    reasons = []
    if last - first < margin:
        reasons.append(f"reward rose {last - first:+.3f} (first {window} steps {first:.3f}, last {last:.3f}); "
                       f"needs +{margin}")
    if last < floor:
        reasons.append(f"final reward {last:.3f} < {floor}")
    if calls < 0.9:
        reasons.append(f"{calls:.2f} tool calls per sample at the end < 0.9")
    if out_of_sync:
        reasons.append(f"rollout and trainer disagree (probability gap up to {diff:.2e}) at steps {out_of_sync}")
    return Verdict(not reasons, first, last, calls, diff, reasons)
