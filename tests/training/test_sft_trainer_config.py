"""Every shipped config of our SFT trainer (its own sft_trainer.yaml, and the recipes' SFT configs that use its `loss`
group: recipes/funreason/sft.yaml, recipes/v2p/sft_*.yaml) composes over verl's own `sft_trainer_engine`, with each
loss of the `loss` group, into a config whose loss builds."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import agentic_verl.training
from agentic_verl.training.sft_losses import SFT_LOSSES, SRMLLoss, TokenMeanLoss, build_sft_loss
from agentic_verl.training.v2p_loss import V2PLoss

CONFIG_DIR = Path(agentic_verl.training.__file__).parent / "config"
RECIPES = Path(__file__).resolve().parents[2] / "recipes"
# the recipes' configs that run our trainer (recipes/rag_r1/sft.yaml runs verl's own; v2p/pointer_sft.yaml is
# included by the V2P stages)
RECIPE_CONFIGS = ["funreason/sft", "funreason_mt/sft", "v2p/sft_click", "v2p/sft_full", "v2p/sft_warmup"]
CONFIGS = sorted(p.stem for p in CONFIG_DIR.glob("*.yaml")) + RECIPE_CONFIGS
LOSSES = sorted(p.stem for p in (CONFIG_DIR / "loss").glob("*.yaml"))
# every config with every loss, except V2P's stages: they set the v2p loss's stage, so they go with loss v2p only
PAIRS = [(name, loss) for name in CONFIGS for loss in LOSSES if not name.startswith("v2p/sft_w") and
         not name.startswith("v2p/sft_f") or loss == "v2p"]


def _compose(name: str, overrides: list[str]):
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(RECIPES if "/" in name else CONFIG_DIR), version_base=None):
        return compose(config_name=name, overrides=overrides)


def test_the_loss_group_lists_every_registered_loss():
    assert CONFIGS == ["sft_trainer", *RECIPE_CONFIGS]
    assert all((RECIPES / f"{name}.yaml").is_file() for name in RECIPE_CONFIGS)
    assert LOSSES == SFT_LOSSES.names() == ["sft", "srml", "v2p"]


@pytest.mark.parametrize("name, loss", PAIRS)
def test_configs_compose_and_their_loss_builds(name, loss):
    from omegaconf import OmegaConf

    config = _compose(name, [f"loss={loss}", "model.path=/models/m"])
    assert config.model.path == "/models/m" and "engine" in config and "optim" in config  # verl's own sections
    built = build_sft_loss(config.loss.name, OmegaConf.to_container(config.loss.kwargs))
    assert isinstance(built, {"sft": TokenMeanLoss, "srml": SRMLLoss, "v2p": V2PLoss}[loss])
    if loss == "srml":
        assert built.alpha().item() == pytest.approx(0.7) and not built.learnable
    if loss == "v2p":
        assert built.stage == ("warmup" if name == "v2p/sft_warmup" else "full")


def test_defaults_sft_trainer_is_verls_loss_funreason_is_srml():
    assert _compose("sft_trainer", []).loss.name == "sft"
    funreason = _compose("funreason/sft", [])
    assert funreason.loss.name == "srml" and funreason.trainer.experiment_name == "funreason_srml"
    multi_turn = _compose("funreason_mt/sft", [])  # generated trajectories, pretokenized in the loop's layout
    assert multi_turn.loss.name == "sft" and multi_turn.trainer.experiment_name == "funreason_mt_sft"
    assert multi_turn.data.custom_cls.name == "PretokenizedSFTDataset"
    assert multi_turn.data.max_token_len_per_gpu >= multi_turn.data.max_length  # verl packs whole trajectories
    assert funreason.data.custom_cls.path == "pkg://agentic_verl.training.fc_sft_dataset"


def test_the_entry_point_uses_this_folder():
    from agentic_verl.training import sft_trainer

    assert os.path.isfile(Path(sft_trainer.__file__).parent / "config" / "sft_trainer.yaml")
