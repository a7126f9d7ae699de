"""`agentic-verl data toy-world | rag-r1`: the CLI writes the files the recipes read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentic_verl.cli import main as cli_main
from agentic_verl.data.toy_world import build_world


def _read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_cli_writes_the_files(tmp_path, capsys):
    assert cli_main(["data", "toy-world", "--out", str(tmp_path), "--seed", "1", "--entities", "12"]) == 0
    assert "passages" in capsys.readouterr().out
    train, test = _read_jsonl(tmp_path / "train.jsonl"), _read_jsonl(tmp_path / "test.jsonl")
    assert train and test
    for q in train + test:
        assert {"id", "question", "golden_answers", "hops", "supporting_ids"} <= set(q)
    assert len(_read_jsonl(tmp_path / "corpus.jsonl")) == len(build_world(1, 12).corpus)


def test_cli_writes_a_dev_split_when_asked_and_refuses_bad_fractions(tmp_path, capsys):
    assert cli_main(["data", "toy-world", "--out", str(tmp_path), "--seed", "1", "--entities", "12",
                     "--dev-fraction", "0.2"]) == 0
    assert " dev / " in capsys.readouterr().out
    assert _read_jsonl(tmp_path / "dev.jsonl")
    with pytest.raises(SystemExit, match="data toy-world: .*dev_fraction=0.9"):
        cli_main(["data", "toy-world", "--out", str(tmp_path / "bad"), "--dev-fraction", "0.9"])
