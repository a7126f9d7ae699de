"""How well a RAG-R1 demo SFT model learned the one token that decides whether to search again.

Not a test: run by hand (notes/lab_notebook.md, "On the dev split"), e.g.

    .venv/bin/python tests/cpu/rag_r1_decision_prob.py OUT/ckpt/sft/global_step_24/huggingface OUT/data/sft/train.parquet

For each trajectory of the SFT data (`data sft-trajectories`), the turn after the first search starts with
`<think> {fact}.`; the gold token after that sentence is the decision (`agentic_verl.data.sft_trajectories.
decision_index`): ` </think>` (answer now) for a one-hop question, ` Now` ("Now I need to find information about
...") for a two-hop one. Prints, per hop count, the model's mean teacher-forced probability of that gold token and
how many trajectories put it below 0.5. The SFT loss cannot show this: the decision is one of ~87 learned tokens per
trajectory (unless `--decision-weight` weighs it more).
"""

from __future__ import annotations

import argparse

from agentic_verl.data.sft_steps import mask_runs


def decision_position(ids: list[int], loss_mask: list[int], tokenizer) -> int:
    """Index in `ids` of the gold deciding token (loss_mask may hold weights: any value > 0 is learned)."""
    from agentic_verl.data.sft_trajectories import DECISION_TURN, decision_index

    start, end = [(start, end) for learned, start, end in mask_runs(loss_mask) if learned][DECISION_TURN]
    return start + decision_index(tokenizer.decode(ids[start:end]), tokenizer)


def main() -> None:
    import pyarrow.parquet as pq
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("model", help="an SFT checkpoint's huggingface folder")
    parser.add_argument("sft_parquet", help="the SFT data it was trained on (OUT/data/sft/train.parquet)")
    parser.add_argument("--limit", type=int, default=40, help="trajectories to read (default 40)")
    args = parser.parse_args()

    tokenizer = AutoTokenizer.from_pretrained(args.model)
    model = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float32).eval()
    table = pq.read_table(args.sft_parquet).to_pydict()
    probs: dict[int, list[float]] = {}
    rows = list(zip(table["input_ids"], table["loss_mask"], table["hops"], strict=True))[:args.limit]
    for ids, loss_mask, hops in rows:
        position = decision_position(ids, loss_mask, tokenizer)
        with torch.no_grad():
            logits = model(torch.tensor([ids[:position]])).logits[0, -1]
        probs.setdefault(hops, []).append(torch.softmax(logits, -1)[ids[position]].item())
    for hops, values in sorted(probs.items()):
        print(f"{hops}-hop  n={len(values)}  mean p(gold decision token)={sum(values) / len(values):.3f}  "
              f"min={min(values):.3f}  below 0.5: {sum(v < 0.5 for v in values)}")


if __name__ == "__main__":
    main()
