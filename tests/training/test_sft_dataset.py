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


def test_an_integer_loss_mask_weight_counts_its_token_that_many_times_in_verls_sft_loss(tmp_path):
    """`agentic-verl data sft-trajectories --decision-weight W` writes W into loss_mask; verl's collator keeps it and
    verl's sft_loss (with the FSDP engine's token count, loss_mask.sum()) makes it a weighted token mean."""
    from verl.utils import tensordict_utils as tu
    from verl.utils.dataset.dataset_utils import SFTTensorCollator
    from verl.workers.utils.losses import sft_loss

    rows = [{"input_ids": [5, 6, 7, 8, 9], "loss_mask": [0, 0, 4, 0, 1]},
            {"input_ids": [10, 11, 12], "loss_mask": [0, 1, 1]}]
    path = tmp_path / "weighted.parquet"
    pd.DataFrame(rows).to_parquet(path)
    dataset = PretokenizedSFTDataset(str(path), _Tok(), {"max_length": 8})
    batch = tu.get_tensordict(SFTTensorCollator("no_padding")([dataset[0], dataset[1]]), {"pad_mode": "no_padding"})
    assert batch["loss_mask"].values().tolist() == [0, 0, 4, 0, 1, 0, 1, 1]
    tu.assign_non_tensor(batch, batch_num_tokens=int(batch["loss_mask"].values().sum()), dp_size=1)
    # log-prob at position i predicts token i + 1 (verl shifts the mask left by one)
    log_probs = [torch.tensor([-0.1, -0.2, -0.3, -0.4, -0.5]), torch.tensor([-0.6, -0.7, -0.8])]
    output = {"log_probs": torch.nested.as_nested_tensor(log_probs, layout=torch.jagged)}
    loss, _ = sft_loss(config=None, model_output=output, data=batch)
    expected = (4 * 0.2 + 1 * 0.4 + 0.6 + 0.7) / (4 + 1 + 1 + 1)
    assert loss.item() == pytest.approx(expected)
