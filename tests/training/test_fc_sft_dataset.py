"""FunctionCallSFTDataset: the tokens verl's SFT trainer sees for FunReason targets, and the span mask SRML reads
(real Qwen tokenizer)."""

from __future__ import annotations

import pandas as pd
import pytest
import torch

from agentic_verl.agent_loops.prompts import bfcl_messages
from agentic_verl.training.fc_sft_dataset import FunctionCallSFTDataset, reasoning_end, tokenize_example

FUNCTIONS = [{"name": "add", "parameters": {"type": "dict", "properties": {"a": {"type": "integer"}}}}]


@pytest.fixture(scope="module")
def tokenizer():
    from transformers import AutoTokenizer

    from agentic_verl.cpu.models import qwen_tokenizer_dir

    return AutoTokenizer.from_pretrained(str(qwen_tokenizer_dir()))


def _messages(target: str, question: str = "Add 1 and 2.") -> list[dict]:
    return [*bfcl_messages(question, FUNCTIONS), {"role": "assistant", "content": target}]


@pytest.mark.parametrize("target, call_span", [
    ("<think>sum</think>\n\n[add(a=1)]", "[add(a=1)]"),  # the FunReason format
    ("<think>sum</think>[add(a=1)]", "[add(a=1)]"),  # no blank line: split right after </think>
    ("<think>a</think>\n\n<think>b</think>\n\n[f()]", "<think>b</think>\n\n[f()]"),  # the first </think> splits
    ("[add(a=1)]", "[add(a=1)]"),  # no reasoning: all call span
    ("<think>unfinished", ""),  # no </think>: reasoning_end is 0 (the whole target counts as call span)
])  # fmt: skip
def test_reasoning_end(target, call_span):
    at = reasoning_end(target)
    assert target[at:] == (call_span or target)


@pytest.mark.parametrize("target", [
    "<think>The user wants 1 + 2: add takes integers.</think>\n\n[add(a=1, b=2)]",
    "<think>Two sums.</think>\n\n[add(a=1, b=2), add(a=3, b=4)]",
    "[add(a=1, b=2)]",
])  # fmt: skip
def test_spans_decode_to_the_reasoning_and_the_calls(tokenizer, target):
    example = tokenize_example(tokenizer, _messages(target))
    ids, loss, think = (torch.tensor(example[k]) for k in ("input_ids", "loss_mask", "think_mask"))
    prompt = tokenizer.apply_chat_template(_messages(target)[:-1], add_generation_prompt=True, tokenize=False)
    n_prompt = int((loss == 0).sum())
    assert tokenizer.decode(ids[:n_prompt]) == prompt and not loss[:n_prompt].any() and loss[n_prompt:].all()
    assert not (think.bool() & ~loss.bool()).any()  # reasoning tokens are target tokens
    at = reasoning_end(target)
    assert tokenizer.decode(ids[think.bool()]) == target[:at]
    assert tokenizer.decode(ids[loss.bool() & ~think.bool()]) == target[at:] + tokenizer.eos_token
    # the target is tokenized as a whole, as the model would produce it
    assert ids[n_prompt:-1].tolist() == tokenizer(target, add_special_tokens=False)["input_ids"]


def test_dataset_items_as_verls_sft_datasets_return_them(tokenizer, tmp_path):
    targets = ["<think>one</think>\n\n[add(a=1)]", "<think>two, longer reasoning here</think>\n\n[add(a=2)]"]
    pd.DataFrame([{"messages": _messages(t)} for t in targets]).to_parquet(tmp_path / "d.parquet")
    dataset = FunctionCallSFTDataset(str(tmp_path / "d.parquet"), tokenizer, {"max_length": 1024})
    assert len(dataset) == 2
    item = dataset[1]
    assert set(item) == {"input_ids", "position_ids", "loss_mask", "think_mask"}
    assert item["position_ids"].tolist() == list(range(len(item["input_ids"])))
    assert all(item[k].shape == item["input_ids"].shape for k in item)
    padded = FunctionCallSFTDataset(
        [str(tmp_path / "d.parquet")], tokenizer, {"max_length": 1024, "pad_mode": "right"}
    )[1]
    n = len(item["input_ids"])
    assert padded["input_ids"].shape == (1024,) and padded["attention_mask"].sum() == n
    assert padded["think_mask"][:n].equal(item["think_mask"]) and not padded["think_mask"][n:].any()
    assert padded["input_ids"][n:].eq(tokenizer.pad_token_id).all()


def test_too_long_rows_fail_or_are_cut_as_configured(tokenizer, tmp_path):
    pd.DataFrame([{"messages": _messages("<think>x</think>\n\n[add(a=1)]")}]).to_parquet(tmp_path / "d.parquet")
    with pytest.raises(ValueError, match="longer than data.max_length"):
        FunctionCallSFTDataset(str(tmp_path / "d.parquet"), tokenizer, {"max_length": 16})[0]
    cut = FunctionCallSFTDataset(str(tmp_path / "d.parquet"), tokenizer, {"max_length": 16, "truncation": "left"})[0]
    assert len(cut["input_ids"]) == 16 and cut["loss_mask"][-1] == 1  # the target end survives a left cut
    with pytest.raises(ValueError, match="pad_mode"):
        FunctionCallSFTDataset(str(tmp_path / "d.parquet"), tokenizer, {"pad_mode": "left_right"})


def test_the_last_message_must_be_the_target(tokenizer):
    with pytest.raises(ValueError, match="assistant"):
        tokenize_example(tokenizer, bfcl_messages("hi", FUNCTIONS))


def test_reads_the_converters_output(tokenizer, tmp_path):
    """`data fc` writes it, this dataset reads it: the messages column round-trips through parquet."""
    import json

    from agentic_verl.data.fc_parquet import convert

    records = [{"id": i, "query": f"Add {i} and 1.", "tools": json.dumps([{"name": "add", "parameters": {
        "a": {"type": "int"}, "b": {"type": "int"}}}]), "answers": json.dumps([{"name": "add", "arguments": {
        "a": i, "b": 1}}]), "reasoning": "Use add."} for i in range(3)]  # fmt: skip
    (tmp_path / "x.json").write_text(json.dumps(records))
    convert([str(tmp_path / "x.json")], tmp_path / "out", exclude_eval=["none"], val_fraction=0.0)
    dataset = FunctionCallSFTDataset(str(tmp_path / "out/sft_train.parquet"), tokenizer, {"max_length": 2048})
    item = dataset[0]
    calls = tokenizer.decode(item["input_ids"][item["loss_mask"].bool() & ~item["think_mask"].bool()])
    assert calls == "[add(a=0, b=1)]" + tokenizer.eos_token
