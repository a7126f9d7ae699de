"""PretokenizedSFTDataset through verl's own SFT data hook (`data.custom_cls`) and collator."""

from __future__ import annotations

import pandas as pd
import pytest
import torch
from omegaconf import OmegaConf

from agentic_verl.training.sft_dataset import PretokenizedSFTDataset

ROWS = [
    {"input_ids": [5, 6, 7, 8, 9], "loss_mask": [0, 0, 1, 0, 1]},
    {"input_ids": [10, 11, 12], "loss_mask": [0, 1, 1]},
]


class _Tok:
    pad_token_id = 0


def _config(**data):
    base = {"pad_mode": "no_padding", "max_length": 8, "truncation": "error",
            "custom_cls": {"path": "pkg://agentic_verl.training.sft_dataset", "name": "PretokenizedSFTDataset"}}
    return OmegaConf.create({**base, **data})


@pytest.fixture
def parquet(tmp_path):
    path = tmp_path / "sft.parquet"
    pd.DataFrame(ROWS).to_parquet(path)
    return str(path)


def test_verl_builds_it_from_the_custom_cls_config_and_collates_nested(parquet):
    from verl.trainer.sft_trainer import create_sft_dataset
    from verl.utils.dataset.dataset_utils import DatasetPadMode, SFTTensorCollator

    dataset = create_sft_dataset([parquet], _config(), _Tok(), None)
    assert isinstance(dataset, PretokenizedSFTDataset) and len(dataset) == 2
    item = dataset[0]
    assert item["input_ids"].tolist() == ROWS[0]["input_ids"]
    assert item["loss_mask"].tolist() == ROWS[0]["loss_mask"]
    assert item["position_ids"].tolist() == [0, 1, 2, 3, 4]
    batch = SFTTensorCollator(DatasetPadMode.NO_PADDING)([dataset[0], dataset[1]])
    assert batch["input_ids"].is_nested
    assert batch["loss_mask"].values().tolist() == ROWS[0]["loss_mask"] + ROWS[1]["loss_mask"]


def test_right_padding(parquet):
    item = PretokenizedSFTDataset(parquet, _Tok(), _config(pad_mode="right"))[1]
    assert item["input_ids"].tolist() == [10, 11, 12, 0, 0, 0, 0, 0]
    assert item["attention_mask"].tolist() == [1, 1, 1, 0, 0, 0, 0, 0]
    assert item["loss_mask"].tolist() == [0, 1, 1, 0, 0, 0, 0, 0]


@pytest.mark.parametrize(
    "truncation, ids, mask",
    [("left", [7, 8, 9], [1, 0, 1]),  # keeps the end (the answer)
     ("right", [5, 6, 7], [0, 0, 1])],
)
def test_truncation(parquet, truncation, ids, mask):
    item = PretokenizedSFTDataset(parquet, _Tok(), _config(max_length=3, truncation=truncation))[0]
    assert item["input_ids"].tolist() == ids and item["loss_mask"].tolist() == mask


def test_too_long_raises_by_default(parquet):
    with pytest.raises(ValueError, match="longer than data.max_length=3"):
        PretokenizedSFTDataset(parquet, _Tok(), _config(max_length=3))[0]


@pytest.mark.parametrize(
    "row, error",
    [({"input_ids": [1, 2], "loss_mask": [1]}, "2 input_ids but 1 loss_mask"),  # misaligned
     ({"input_ids": [1, 2], "loss_mask": [0, 0]}, "all zero")],  # nothing to learn
)
def test_bad_rows(tmp_path, row, error):
    path = tmp_path / "bad.parquet"
    pd.DataFrame([row]).to_parquet(path)
    with pytest.raises(ValueError, match=error):
        PretokenizedSFTDataset(str(path), _Tok(), _config())


def test_max_samples(parquet):
    assert len(PretokenizedSFTDataset(parquet, _Tok(), _config(), max_samples=1)) == 1
    assert torch.equal(PretokenizedSFTDataset(parquet, _Tok(), _config(), max_samples=1)[0]["input_ids"],
                       torch.tensor(ROWS[0]["input_ids"]))
