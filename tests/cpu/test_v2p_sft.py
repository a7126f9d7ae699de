"""recipes/v2p/sft_warmup.sh and sft_full.sh: their overrides compose with our V2P SFT configs (the paper's settings by
default), and both stages run through verl's own SFT trainer (torchrun, FSDP2) on CPU with a tiny Qwen2.5-VL on
synthetic screenshots with known boxes (`agentic-verl data gui` parquet):

- warm-up: step 1's loss is the plain-PyTorch pointer loss of the same 8 samples (the mean over the step, across
  micro-batches); the pointer loss goes down; only the pointer head and the pointer-token embedding rows change (every
  other weight bit-identical after FSDP steps); the LM loss is logged, not trained;
- full: train/loss = CE + L_ptr, the language model and the vision tower change, the LM loss goes down;
- the saved checkpoint loads as `V2PForConditionalGeneration` and `agentic-verl eval screenspot --model` runs on it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from cpu_backend_helpers import REPO
from test_funreason_sft import _compose, recorded_sft_overrides  # the torchrun stand-in, our SFT configs

RECIPES = {"v2p/sft_warmup.sh": ("v2p/sft_warmup", "warmup"), "v2p/sft_full.sh": ("v2p/sft_full", "full")}
EMBEDDING = "model.language_model.embed_tokens.weight"  # transformers' in-memory name; on disk see _weights


@pytest.mark.parametrize("recipe", sorted(RECIPES))
@pytest.mark.parametrize("device", ["gpu", "cpu"])
def test_recipe_overrides_compose_with_our_sft_config(recipe, device, tmp_path):
    env = {
        "AGENTIC_VERL_DEVICE": device,
        "MODEL_PATH": "/models/some-v2p-model",  # a given model: no pointer-model init, no checkpoint search
        "PREFLIGHT": "0",  # the model and data named here do not exist: only the command line is under test
    }
    overrides = recorded_sft_overrides(recipe, tmp_path, env, ["trainer.total_epochs=3"])
    config_name, stage = RECIPES[recipe]
    config_path = ["--config-path", str(REPO / "recipes"), "--config-name", config_name]
    assert overrides[:4] == config_path and overrides[-1] == "trainer.total_epochs=3"
    config = _compose(overrides)
    assert config.loss.name == "v2p" and config.loss.kwargs.stage == stage and config.trainer.total_epochs == 3
    assert config.model.path == "/models/some-v2p-model" and config.model.external_lib == "agentic_verl.v2p.model"
    assert config.data.custom_cls.name == "V2PSFTDataset" and config.data.pad_mode == "no_padding"
    assert config.engine.strategy == "fsdp2"  # FSDP1's flat parameters cannot mix frozen and trained weights
    assert "hf_model" in config.checkpoint.save_contents  # the folder stage 2 and evaluation load
    if device == "gpu":  # the paper's settings (docs/methods.md "V2P"), from recipes/v2p/sft_warmup.yaml, sft_full.yaml
        assert (config.optim.lr, config.data.train_batch_size) == {"warmup": (1e-4, 128), "full": (5e-6, 128)}[stage]
        assert _compose(config_path).trainer.total_epochs == 1
        assert (config.loss.kwargs.lm_weight, config.loss.kwargs.pointer_weight) == (1.0, 1.0)
        if stage == "full":
            assert (config.optim.lr_scheduler_type, config.optim.lr_warmup_steps_ratio) == ("cosine", 0.03)
        else:
            assert config.optim.weight_decay == 0.0  # the frozen embedding rows must not decay
        assert config.trainer.device == "cuda"
    else:
        assert config.trainer.device == "cpu" and config.data.train_batch_size == 4
        assert config.model.override_config.attn_implementation == "sdpa"


def test_full_stage_without_a_warmup_checkpoint_is_an_error(tmp_path):
    env = {**os.environ, "AGENTIC_VERL_DEVICE": "gpu", "WARMUP_DIR": str(tmp_path / "none")}
    env.pop("MODEL_PATH", None)
    proc = subprocess.run(["bash", str(REPO / "recipes/v2p/sft_full.sh")], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 2 and "run recipes/v2p/sft_warmup.sh first" in proc.stderr


def test_preflight_refuses_missing_data_and_a_model_without_the_pointer(tmp_path):
    """The real preflight, before torchrun: a missing parquet, and a plain Qwen2.5-VL where the SFT needs a V2P
    pointer model (an error at the first batch otherwise, minutes into a GPU job)."""
    from agentic_verl.commands.cpu_model import _tiny_vl

    plain_vl = _tiny_vl(None, "float32", False)
    env = {**os.environ, "AGENTIC_VERL_DEVICE": "cpu", "TRAIN_FILE": str(tmp_path / "none.parquet"),
           "MODEL_PATH": str(plain_vl), "PATH": os.pathsep.join([os.path.dirname(sys.executable), os.environ["PATH"]])}
    proc = subprocess.run(["bash", str(REPO / "recipes/v2p/sft_warmup.sh")], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert f"FAIL  train data: {tmp_path / 'none.parquet'} does not exist" in proc.stdout
    assert "FAIL  model:" in proc.stdout and "'qwen2_5_vl' model; this stage needs a V2P pointer model" in proc.stdout
    assert "not launching" in proc.stderr and "sft_trainer" not in proc.stdout + proc.stderr


def test_sft_preflight_checks_the_sft_columns(screenshots, tmp_path):
    import pandas as pd

    from agentic_verl.preflight.gui import check_gui_data
    from agentic_verl.preflight.settings import Report

    good = screenshots[1]
    row = pd.read_parquet(good).iloc[0].to_dict()
    no_pointer = tmp_path / "no_pointer.parquet"
    messages = [{**m, "content": m["content"].replace("<|pointer_pad|>", "")} for m in row["messages"]]
    pd.DataFrame([{**row, "messages": messages}]).to_parquet(no_pointer)
    grpo_only = tmp_path / "grpo_only.parquet"
    pd.DataFrame([{k: v for k, v in row.items() if k != "messages"}]).to_parquet(grpo_only)
    for path, level, words in [(good, "ok", "8 rows"), (no_pointer, "FAIL", "no pointer action"),
                               (grpo_only, "FAIL", "lacks the columns ['messages']")]:
        report = Report()
        check_gui_data(report, "train data", str(path), "sft")
        [(found_level, _, message)] = report.findings
        assert found_level == level and words in message, (path, report.findings)


@pytest.mark.parametrize("stage", ["warmup", "full"])
@pytest.mark.parametrize("dp_size, micro", [(1, 1), (1, 3), (2, 1), (3, 2)])
def test_loss_is_the_step_mean_however_verl_splits_the_batch(stage, dp_size, micro):
    """The v2p loss in verl's own terms (collator, micro-batch splitter, `sft_loss`): each micro-batch's share, summed
    over micro-batches and averaged over simulated data-parallel ranks, is the mean pointer loss over the step's
    samples (+ the token-mean CE in the full stage), in value and gradient, with samples of different sizes."""
    import torch
    from verl.utils import tensordict_utils as tu
    from verl.utils.dataset.dataset_utils import SFTTensorCollator
    from verl.workers.engine.utils import prepare_micro_batches

    from agentic_verl.training.sft_losses import reduce_metrics
    from agentic_verl.training.v2p_loss import POINTER_LOGITS_KEY, SAMPLES_KEY, V2PLoss
    from agentic_verl.v2p.loss import pointer_loss

    gen = torch.Generator().manual_seed(0)
    n = 6
    lengths, patches = [9, 5, 12, 7, 6, 10], [4, 6, 3, 8, 5, 6]
    samples = []
    for i in range(n):
        label = torch.rand(patches[i], generator=gen) * (torch.rand(patches[i], generator=gen) > 0.4)
        label[0] += 0.1  # at least one positive patch
        loss_mask = torch.zeros(lengths[i], dtype=torch.long)
        loss_mask[-(2 + i % 3):] = 1  # answer tokens at the end, different counts
        samples.append({"input_ids": torch.full((lengths[i],), i), "loss_mask": loss_mask,  # ids: the sample's index
                        "pointer_labels": label / label.sum()})
    logits = [torch.randn(p, generator=gen, dtype=torch.float64).requires_grad_() for p in patches]
    log_probs = [(-torch.rand(t, generator=gen, dtype=torch.float64) * 3).requires_grad_() for t in lengths]

    collate, per_rank = SFTTensorCollator("no_padding"), n // dp_size
    meta = {"micro_batch_size_per_gpu": micro, "use_dynamic_bsz": False, "pad_mode": "no_padding"}
    ranks = [tu.get_tensordict(collate(samples[r * per_rank:(r + 1) * per_rank]), meta) for r in range(dp_size)]
    batch_num_tokens = sum(int(b["loss_mask"].values().sum()) for b in ranks)  # verl's engine all-reduces these
    loss_fn = V2PLoss(stage=stage)
    total, gathered = 0.0, {}
    for batch in ranks:
        loss_fn.prepare_batch(batch)  # no process group here: one rank's count ...
        tu.assign_non_tensor(batch, **{SAMPLES_KEY: n}, batch_num_tokens=batch_num_tokens, dp_size=dp_size)  # all
        micro_batches, _ = prepare_micro_batches(batch)
        rank_loss, rank_metrics = 0.0, []
        for mb in micro_batches:
            idx = [int(ids[0]) for ids in mb["input_ids"].unbind()]
            output = {POINTER_LOGITS_KEY: torch.nested.as_nested_tensor([logits[i] for i in idx], layout=torch.jagged),
                      "log_probs": torch.nested.as_nested_tensor([log_probs[i] for i in idx], layout=torch.jagged)}
            loss, m = loss_fn(output, mb)
            rank_loss, rank_metrics = rank_loss + loss, [*rank_metrics, m]
        total = total + rank_loss / dp_size  # verl: backward per micro-batch, gradients averaged over ranks
        per_rank = {}  # as verl's postprocess_batch_func: one Metric per key per rank
        for m in rank_metrics:
            for key, value in m.items():
                per_rank.setdefault(key, value.init_list()).append(value)
        for key, value in per_rank.items():  # ... all-gathered over ranks: a list of them
            gathered.setdefault(key, []).append(value)

    ptr = pointer_loss(logits, [s["pointer_labels"] for s in samples])["loss"]
    target = torch.cat([torch.roll(s["loss_mask"], -1).bool() for s in samples])
    ce = -torch.cat(log_probs)[target].sum() / batch_num_tokens
    expected = ptr + ce if stage == "full" else ptr
    torch.testing.assert_close(total, expected, rtol=1e-6, atol=0)  # L_ptr is computed in float32
    got = torch.autograd.grad(total, logits + log_probs, allow_unused=True, materialize_grads=True)
    want = torch.autograd.grad(expected, logits + log_probs, allow_unused=True, materialize_grads=True)
    for g, w in zip(got, want, strict=True):
        torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-8)
    logged = reduce_metrics(gathered)  # what verl's SFT trainer logs
    assert logged["v2p/pointer_loss"] == pytest.approx(ptr.item(), rel=1e-6)  # L_ptr is computed in float32
    assert logged["v2p/lm_loss"] == pytest.approx(ce.item(), rel=1e-9)
    assert logged["v2p/samples"] == n


def test_the_warmup_refuses_weight_decay_and_a_non_pointer_model():
    from omegaconf import OmegaConf
    from transformers import Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration

    from agentic_verl.training.v2p_loss import V2PLoss

    with pytest.raises(ValueError, match="weight_decay=0"):
        V2PLoss(stage="warmup").check_optimizer(OmegaConf.create({"weight_decay": 0.01}))
    V2PLoss(stage="full").check_optimizer(OmegaConf.create({"weight_decay": 0.01}))
    with pytest.raises(ValueError, match="unknown v2p stage"):
        V2PLoss(stage="stage3")
    tiny = Qwen2_5_VLConfig(text_config={"hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 1,
                                         "num_key_value_heads": 1, "intermediate_size": 16, "vocab_size": 32},
                            vision_config={"depth": 1, "hidden_size": 16, "out_hidden_size": 16, "num_heads": 1})
    with pytest.raises(TypeError, match="needs a V2P pointer model"):
        V2PLoss().prepare_model(Qwen2_5_VLForConditionalGeneration(tiny))


# ---------------------------------------------------------------- the two stages on CPU


@pytest.fixture(scope="module")
def screenshots(tmp_path_factory):
    """Two synthetic screenshots (2 buttons + 2 icons each, known boxes) in ScreenSpot-v2's layout, and the parquet
    `agentic-verl data gui` writes from them: 8 samples."""
    sys.path.insert(0, str(REPO / "tests" / "gui"))
    from gui_helpers import write_seeclick

    from agentic_verl.cli import main
    from agentic_verl.v2p.synthetic import synthetic_screen

    root = tmp_path_factory.mktemp("v2p_data")
    screens = [synthetic_screen(seed, size) for seed, size in enumerate([(336, 224), (280, 196)])]
    folder = write_seeclick(root / "ScreenSpot-v2", screens)
    assert main(["data", "gui", "--data", str(folder), "--out", str(root / "train.parquet")]) == 0
    return folder, root / "train.parquet"


def _run(recipe: str, out: Path, train: Path, steps: int, lr: float, extra_env: dict) -> list[dict]:
    """The recipe on CPU: every step trains on the whole 8-sample set in two micro-batches of 4; verl's file-logger
    metrics per step."""
    metrics_path = out / "metrics.jsonl"
    env = {
        **os.environ,
        **extra_env,
        "PATH": f"{os.path.dirname(sys.executable)}{os.pathsep}{os.environ.get('PATH', '')}",
        "AGENTIC_VERL_DEVICE": "cpu",
        "TRAIN_FILE": str(train),
        "VERL_FILE_LOGGER_PATH": str(metrics_path),
        "SFT_CHECKPOINT_DIR": str(out / "ckpt"),
        "TMPDIR": tempfile.gettempdir(),
        "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1"),
    }
    env.pop("MODEL_PATH", None)  # the warm-up starts from INIT_DIR, the full stage from the warm-up's checkpoint
    overrides = [
        "data.train_batch_size=8", "data.micro_batch_size_per_gpu=4", f"trainer.total_training_steps={steps}",
        f"optim.lr={lr!r}",
        f"trainer.total_epochs={steps}",
        "optim.lr_scheduler_type=constant",
        "checkpoint.save_contents=[hf_model]",  # at the last step: the folder the next stage and evaluation load
        # CPU speed only: no torch.compile builds, no activation recomputation
        "engine.use_torch_compile=False",
        "model.enable_gradient_checkpointing=False",
    ]
    proc = subprocess.run(["bash", str(REPO / "recipes" / recipe), *overrides], cwd=REPO, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)
    (out / "run.log").write_text(proc.stdout)
    assert proc.returncode == 0, proc.stdout[-6000:]
    assert "agentic-verl preflight gui (sft):" in proc.stdout
    steps_logged = [json.loads(line) for line in metrics_path.read_text().splitlines()]
    assert [m["step"] for m in steps_logged] == list(range(1, steps + 1)), steps_logged
    return [m["data"] for m in steps_logged]


@pytest.fixture(scope="module")
def warmup(screenshots, tmp_path_factory):
    from agentic_verl.v2p.model import main

    out = tmp_path_factory.mktemp("v2p_warmup")
    init = out / "init"
    # what the recipe runs when INIT_DIR has no model yet (`python -m agentic_verl.v2p.model --tiny --out INIT_DIR`),
    # in this process to save an interpreter start; the recipe then finds it and starts from it
    assert main(["--tiny", "--out", str(init)]) == 0
    metrics = _run("v2p/sft_warmup.sh", out, screenshots[1], steps=3, lr=1e-2, extra_env={"INIT_DIR": str(init)})
    return metrics, init, out / "ckpt"


@pytest.fixture(scope="module")
def full(warmup, screenshots, tmp_path_factory):
    out = tmp_path_factory.mktemp("v2p_full")
    # no MODEL_PATH: the recipe starts from the warm-up's last global_step_N/huggingface
    metrics = _run("v2p/sft_full.sh", out, screenshots[1], steps=2, lr=1e-3, extra_env={"WARMUP_DIR": str(warmup[2])})
    return metrics, out / "ckpt" / "global_step_2" / "huggingface"


def _weights(folder: Path) -> dict:
    from safetensors.torch import load_file

    files = sorted(folder.glob("*.safetensors"))
    assert files, f"no safetensors in {folder}"
    return {k: v for f in files for k, v in load_file(f).items()}


def _reference_losses(init: Path, train: Path) -> tuple[float, float]:
    """Pointer loss and answer CE of the initial model on the 8 samples in plain PyTorch (gui.batch), no verl."""
    import io

    import pandas as pd
    import torch
    from PIL import Image
    from transformers import AutoProcessor

    from agentic_verl.v2p.batch import build_batch
    from agentic_verl.v2p.model import V2PForConditionalGeneration

    samples = [(Image.open(io.BytesIO(row["images"][0]["bytes"])).convert("RGB"), row["extra_info"]["instruction"],
                list(row["reward_model"]["ground_truth"]["bbox"])) for row in pd.read_parquet(train).to_dict("records")]
    processor = AutoProcessor.from_pretrained(init)
    model = V2PForConditionalGeneration.from_pretrained(init, attn_implementation="sdpa").eval()  # stage "full"
    with torch.no_grad():
        out = model(**build_batch(processor, samples))
    return float(out.pointer_loss), float(out.lm_loss)


@pytest.mark.slow
def test_warmup_lowers_the_pointer_loss_with_the_lm_loss_off(warmup, screenshots):
    metrics, init, _ = warmup
    pointer, lm = _reference_losses(init, screenshots[1])
    first = metrics[0]
    # step 1 (before any update) is the same model on the same 8 samples: verl's loss is the mean over the step
    assert first["train/loss"] == pytest.approx(pointer, rel=1e-4)
    assert first["v2p/lm_loss"] == pytest.approx(lm, rel=1e-4)
    for m in metrics:
        assert m["train/loss"] == pytest.approx(m["v2p/pointer_loss"], rel=1e-6)  # the LM loss is not trained
        assert m["v2p/pointer_loss"] == pytest.approx(m["v2p/kl"] + m["v2p/valley"], rel=1e-5)
        assert m["v2p/samples"] == 8 and m["train/grad_norm"] > 0
    losses = [m["train/loss"] for m in metrics]
    assert losses[0] > losses[1] > losses[2], losses


@pytest.mark.slow
def test_warmup_changes_only_the_head_and_the_pointer_token_rows(warmup):
    import torch

    _, init, ckpt = warmup
    before, after = _weights(init), _weights(ckpt / "global_step_3" / "huggingface")
    assert before.keys() == after.keys()
    config = json.loads((init / "config.json").read_text())
    start, pad = config["pointer_start_token_id"], config["pointer_pad_token_id"]
    embedding = next(k for k in before if k.endswith("embed_tokens.weight"))
    head = [k for k in before if k.startswith("pointer_head.")]
    assert head and all(not torch.equal(before[k], after[k]) for k in head)
    changed_rows = (before[embedding] != after[embedding]).any(1).nonzero().ravel().tolist()
    assert changed_rows == [start, pad]  # <|pointer_end|> comes after the query token: no gradient reaches it
    frozen = [k for k in before if k not in head and k != embedding]
    assert len(frozen) > 20
    for key in frozen:
        assert torch.equal(before[key], after[key]), key  # bit-identical through FSDP2 + AdamW


@pytest.mark.slow
def test_full_stage_trains_the_lm_on_both_losses(warmup, full):
    import torch

    metrics, hf = full
    for m in metrics:
        assert m["train/loss"] == pytest.approx(m["v2p/lm_loss"] + m["v2p/pointer_loss"], rel=1e-5)  # w = 1, 1
    assert metrics[1]["v2p/lm_loss"] < metrics[0]["v2p/lm_loss"]
    assert metrics[1]["train/loss"] < metrics[0]["train/loss"]
    before, after = _weights(warmup[2] / "global_step_3" / "huggingface"), _weights(hf)
    changed = {k for k in before if not torch.equal(before[k], after[k])}
    embedding = next(k for k in before if k.endswith("embed_tokens.weight"))
    assert any(".layers.0.mlp." in k for k in changed) and any("visual.blocks.0." in k for k in changed)
    assert int((before[embedding] != after[embedding]).any(1).sum()) > 3  # not just the pointer rows


@pytest.mark.slow
def test_the_checkpoint_loads_as_a_pointer_model_and_evaluates(full, screenshots, tmp_path):
    from transformers import AutoModelForImageTextToText

    from agentic_verl.cli import main
    from agentic_verl.v2p.model import V2PForConditionalGeneration

    _, hf = full
    model = AutoModelForImageTextToText.from_pretrained(hf)
    assert type(model) is V2PForConditionalGeneration and model.config.lm_loss_weight == 1.0
    assert main(["eval", "screenspot", "--model", str(hf), "--data", str(screenshots[0]),
                 "--out", str(tmp_path / "eval")]) == 0
    result = json.loads((tmp_path / "eval" / "result.json").read_text())
    assert result["summary"]["n"] == 8 and 0.0 <= result["summary"]["accuracy"] <= 1.0
    assert result["settings"]["predictor"] == "PointerPredictor"
