"""The learning test's GRPO update in plain PyTorch, to compare optimizer settings in a minute a run instead of eight.

Not a test: run by hand (notes/lab_notebook.md, "Learning test"), e.g.

    .venv/bin/python tests/cpu/learning_sim.py --lr 5e-3 --eps 3e-3 --seeds 1 2 3

It builds the same SFT start as test_learning.py (agentic_verl/demo/learning.py, seed 0), then per seed runs the update the test
asks of verl: 32 questions x 4 samples at temperature 1 (8 new tokens at most), reward 1 for the exact call, Dr. GRPO
advantage (reward minus the group's mean), one on-policy step per batch (token-mean loss, k3 KL to the SFT start),
AdamW with weight decay 0.01 and grad-norm clip 1.0 as verl's defaults. Exact match stands in for BFCL's AST checker
(the same verdict on this task's one-token names without arguments), and transformers' sampler for vLLM's. Prints a
row per seed: reward per step, the first and last 4-step means, the lowest step after the first 4."""

from __future__ import annotations

import argparse
import copy
import random
import tempfile
from pathlib import Path

from agentic_verl.demo.learning import choice_task, prompt_token_ids, sft_tiny_model


def _response_logprobs(model, ids, attention, start):
    import torch

    positions = (attention.cumsum(-1) - 1).clamp(min=0)
    # the vocabulary head only where a response token is predicted (as sft_tiny_model does): not over the prompt
    hidden = model.model(input_ids=ids, attention_mask=attention, position_ids=positions).last_hidden_state
    logits = model.lm_head(hidden[:, start - 1:-1])
    return torch.log_softmax(logits, -1).gather(-1, ids[:, start:, None]).squeeze(-1)


def grpo_run(model_dir: Path, lr: float, eps: float, seed: int, steps: int = 12, questions: int = 32,
             samples: int = 4, kl_coef: float = 0.1, max_new_tokens: int = 8) -> list[float]:
    """Mean reward per step of one seeded run from the SFT model at `model_dir`."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.manual_seed(seed)
    rng = random.Random(seed)
    task = choice_task(seed=0)
    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    policy = AutoModelForCausalLM.from_pretrained(str(model_dir), dtype=torch.float32)
    reference = copy.deepcopy(policy).eval()
    optimizer = torch.optim.AdamW(policy.parameters(), lr=lr, eps=eps, weight_decay=0.01)
    prompts = prompt_token_ids(task, tokenizer)
    eos = tokenizer.eos_token_id
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else eos
    rewards_per_step = []
    for _ in range(steps):
        batch, rewards, advantages = [], [], []
        policy.eval()
        with torch.no_grad():
            for index in rng.sample(range(len(prompts)), questions):
                prompt = torch.tensor([prompts[index]] * samples)
                out = policy.generate(prompt, attention_mask=torch.ones_like(prompt), do_sample=True, temperature=1.0,
                                      top_p=1.0, top_k=0, max_new_tokens=max_new_tokens, pad_token_id=pad,
                                      eos_token_id=eos)
                group = []
                for row in out:
                    response = row[prompt.shape[1]:].tolist()
                    response = response[:response.index(eos) + 1] if eos in response else response
                    text = tokenizer.decode(response, skip_special_tokens=True).strip()
                    group.append(float(text == task.answer(task.questions[index]["function"])))
                    batch.append((prompts[index], response))
                rewards += group
                advantages += [r - sum(group) / len(group) for r in group]
        policy.train()
        width_p, width_r = max(len(p) for p, _ in batch), max(len(r) for _, r in batch)
        ids = torch.full((len(batch), width_p + width_r), pad)
        attention, mask = torch.zeros_like(ids), torch.zeros((len(batch), width_r))
        for row, (prompt, response) in enumerate(batch):  # prompts left-padded: every response starts at width_p
            ids[row, width_p - len(prompt):width_p] = torch.tensor(prompt)
            ids[row, width_p:width_p + len(response)] = torch.tensor(response)
            attention[row, width_p - len(prompt):width_p + len(response)] = 1
            mask[row, :len(response)] = 1
        logprobs = _response_logprobs(policy, ids, attention, width_p)
        with torch.no_grad():
            reference_logprobs = _response_logprobs(reference, ids, attention, width_p)
        policy_loss = -torch.tensor(advantages)[:, None] * torch.exp(logprobs - logprobs.detach())
        log_ratio = reference_logprobs - logprobs
        k3 = (torch.exp(log_ratio) - log_ratio - 1).clamp(-10, 10)
        loss = ((policy_loss + kl_coef * k3) * mask).sum() / mask.sum()
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(policy.parameters(), 1.0)
        optimizer.step()
        rewards_per_step.append(sum(rewards) / len(rewards))
    return rewards_per_step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lr", type=float, default=5e-3)
    parser.add_argument("--eps", type=float, default=3e-3)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--steps", type=int, default=12)
    args = parser.parse_args()
    from agentic_verl.cpu.models import make_tiny_model, smollm2_hf_dir

    with tempfile.TemporaryDirectory(prefix="learning_sim") as work:
        base = make_tiny_model(Path(work) / "base", arch="llama", tokenizer_dir=smollm2_hf_dir())
        model = sft_tiny_model(choice_task(seed=0), base, Path(work) / "sft")
        print(f"lr {args.lr:g}, Adam eps {args.eps:g}, {args.steps} steps")
        print("| seed | reward per step | first 4 | last 4 | lowest after step 4 |\n|---|---|---|---|---|")
        for seed in args.seeds:
            rewards = grpo_run(model, args.lr, args.eps, seed, steps=args.steps)
            print(f"| {seed} | {' '.join(f'{r:.2f}' for r in rewards)} | {sum(rewards[:4]) / 4:.3f} | "
                  f"{sum(rewards[-4:]) / 4:.3f} | {min(rewards[4:]):.3f} |", flush=True)


if __name__ == "__main__":
    main()
