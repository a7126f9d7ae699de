"""verl RL parquet for the rag_r1 agent loop, read back through verl's own RLHFDataset."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from omegaconf import OmegaConf

from agentic_verl.agent_loops.prompts import rag_r1_prompt
from agentic_verl.cli import main as cli_main
from agentic_verl.data.rag_r1_parquet import to_rows, write_parquet
from agentic_verl.data.toy_world import build_world, write_world


@pytest.fixture
def flashrag_file(tmp_path):
    path = tmp_path / "hotpotqa" / "dev.jsonl"
    path.parent.mkdir()
    rows = [{"id": "dev_0", "question": "Which city hosts the Louvre", "golden_answers": ["Paris"]},
            {"id": "dev_1", "question": "Who wrote Hamlet?", "golden_answers": ["Shakespeare", "W. Shakespeare"]}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.mark.parametrize("mode", ["sq", "mq"])
def test_rows_have_the_columns_verl_and_the_loop_read(mode):
    (row,) = to_rows([{"id": "q7", "question": " Who wrote Hamlet ", "golden_answers": ["Shakespeare"], "hops": 1}],
                     split="test", data_source="demo", mode=mode)
    assert row["data_source"] == "demo" and row["agent_name"] == "rag_r1" and row["ability"] == "fact-reasoning"
    assert row["prompt"] == [{"role": "user", "content": rag_r1_prompt("Who wrote Hamlet", mode=mode)}]
    assert row["reward_model"] == {"style": "rule", "ground_truth": {"target": ["Shakespeare"]}}
    assert row["extra_info"] == {"index": 0, "split": "test", "id": "q7", "question": "Who wrote Hamlet",
                                 "hops": 1, "rag_r1": {"mode": mode}}


def test_unknown_mode():
    with pytest.raises(ValueError, match="sq"):
        to_rows([{"id": "1", "question": "q", "golden_answers": ["a"]}], "train", "x", mode="xq")


def test_cli_flashrag_file_to_parquet_read_by_rlhf_dataset(tmp_path, flashrag_file, smollm2_tokenizer):
    from verl.utils.dataset.rl_dataset import RLHFDataset

    out = tmp_path / "parquet"
    assert cli_main(["data", "rag-r1", "--questions", str(flashrag_file), "--out", str(out), "--mode", "mq"]) == 0
    frame = pd.read_parquet(out / "dev.parquet")
    assert list(frame["data_source"]) == ["hotpotqa", "hotpotqa"]  # FlashRAG folder name
    assert list(frame["reward_model"][1]["ground_truth"]["target"]) == ["Shakespeare", "W. Shakespeare"]

    config = OmegaConf.create({"prompt_key": "prompt", "max_prompt_length": 512, "filter_overlong_prompts": True,
                               "filter_overlong_prompts_workers": 1, "cache_dir": str(tmp_path / "cache")})
    dataset = RLHFDataset(str(out / "dev.parquet"), smollm2_tokenizer, config)
    assert len(dataset) == 2  # nothing filtered as overlong
    item = dataset[1]
    assert item["raw_prompt"][0]["content"].endswith("Question: Who wrote Hamlet?\n")
    assert item["agent_name"] == "rag_r1" and item["index"] == 1 and item["extra_info"]["split"] == "dev"


def test_toy_world_questions_keep_their_data_source_and_hops(tmp_path):
    paths = write_world(build_world(2, 12), tmp_path / "world")
    assert cli_main(["data", "rag-r1", "--questions", str(paths["train"]), str(paths["test"]),
                     "--out", str(tmp_path / "pq")]) == 0
    for split in ("train", "test"):
        frame = pd.read_parquet(tmp_path / "pq" / f"{split}.parquet")
        questions = [json.loads(line) for line in paths[split].read_text().splitlines()]
        assert len(frame) == len(questions)
        assert set(frame["data_source"]) == {"toy_world"}
        assert [e["hops"] for e in frame["extra_info"]] == [q["hops"] for q in questions]
        assert [e["index"] for e in frame["extra_info"]] == list(range(len(questions)))


def test_write_parquet_creates_folders(tmp_path):
    rows = to_rows([{"id": "1", "question": "q", "golden_answers": ["a"]}], "train", "x")
    assert write_parquet(rows, tmp_path / "a" / "b.parquet").is_file()
