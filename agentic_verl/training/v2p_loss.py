"""V2P's SFT loss for verl's SFT trainer (`loss: v2p`): w_lm * CE + w_ptr * L_ptr, in a warm-up or a full stage.

docs/methods.md ("V2P"): L_ptr = KL(label || softmax(pointer logits)) + valley (`agentic_verl.v2p.loss`); stage 1
("warmup") trains only the pointer head and the three new token embeddings with the LM loss off; stage 2 ("full")
trains everything with w_lm = w_ptr = 1. Here:

- CE is verl's own SFT loss (`verl.workers.utils.losses.sft_loss`: token mean over the step's target tokens, i.e. the
  action `pyautogui.click(<|pointer_start|><|pointer_pad|><|pointer_end|>)<|im_end|>`), read from the log-probs verl's
  engine computes; in the warm-up it is logged (`v2p/lm_loss`) but not trained.
- L_ptr is the mean over the step's samples (all micro-batches, all data-parallel ranks): each micro-batch returns
  the sum over its samples / the step's sample count * dp_size, verl's loss contract (see `sft_losses`). The count
  is added by `prepare_batch`, all-reduced over the data-parallel group.
- The model is `agentic_verl.v2p.model.V2PForConditionalGeneration`; `prepare_model` puts it in the stage before
  verl wraps it in FSDP (`sft_trainer.py`), and the engine hands the model's per-sample `pointer_logits` to the loss
  next to verl's `log_probs` (`model_outputs`). Labels come from the dataset (`v2p_dataset.V2PSFTDataset`).

Metrics, logged by verl's SFT trainer every step (`train/loss` is the trained loss): `v2p/pointer_loss`, `v2p/kl`,
`v2p/valley`, `v2p/lm_loss` (the step's CE, also in the warm-up), `v2p/samples`.

>>> V2PLoss(stage="warmup").stage
'warmup'
"""

from __future__ import annotations

import torch

from agentic_verl.training.sft_losses import SFT_LOSSES
from agentic_verl.v2p.loss import STAGES, pointer_loss

SAMPLES_KEY = "v2p_samples"  # the step's global number of samples (non-tensor data added by prepare_batch)
POINTER_LOGITS_KEY = "pointer_logits"  # model output: one row of patch logits per sample (jagged)


@SFT_LOSSES.register("v2p")
class V2PLoss:
    """`stage`: "warmup" (head + pointer-token embedding rows, LM loss off) or "full" (every weight, both losses).
    `lm_weight` (w_lm), `pointer_weight` (w_ptr), `valley_weight` (the valley term's weight inside L_ptr)."""

    model_outputs = (POINTER_LOGITS_KEY,)

    def __init__(self, stage: str = "full", lm_weight: float = 1.0, pointer_weight: float = 1.0,
                 valley_weight: float = 1.0):
        if stage not in STAGES:
            raise ValueError(f"unknown v2p stage {stage!r}; known: {', '.join(STAGES)}")
        for name, value in (("lm_weight", lm_weight), ("pointer_weight", pointer_weight),
                            ("valley_weight", valley_weight)):
            if not float(value) >= 0:
                raise ValueError(f"v2p {name} must be >= 0, got {value}")
        self.stage = stage
        self.lm_weight, self.pointer_weight = float(lm_weight), float(pointer_weight)
        self.valley_weight = float(valley_weight)

    def prepare_model(self, module) -> None:
        """The HF model verl built, before FSDP: set the stage and record the loss weights in its config (so the
        saved checkpoint says what it was trained with)."""
        from agentic_verl.v2p.model import V2PForConditionalGeneration

        if not isinstance(module, V2PForConditionalGeneration):
            raise TypeError(f"loss v2p needs a V2P pointer model, got {type(module).__name__}: set model.path to a "
                            "folder from `python -m agentic_verl.v2p.model --base ... --out ...` and "
                            "model.external_lib=agentic_verl.v2p.model")
        module.set_stage(self.stage)
        module.config.lm_loss_weight = self.lm_weight
        module.config.pointer_loss_weight = self.pointer_weight
        module.config.valley_weight = self.valley_weight

    def check_optimizer(self, optim_config) -> None:
        """The warm-up leaves all but three embedding rows frozen through a zero gradient; AdamW's decoupled weight
        decay would still shrink them (verl builds one parameter group)."""
        if self.stage == "warmup" and float(optim_config.weight_decay) != 0.0:
            raise ValueError(f"the v2p warm-up needs optim.weight_decay=0 (got {optim_config.weight_decay}): weight "
                             "decay would move the frozen embedding rows")

    def prepare_batch(self, data, dp_group=None) -> None:
        """Add the step's global sample count to `data` (the whole batch of this rank, before verl splits it)."""
        from verl.utils import tensordict_utils as tu

        from agentic_verl.training.v2p_dataset import POINTER_LABELS_KEY

        if POINTER_LABELS_KEY not in data.keys():
            raise KeyError(f"the v2p loss needs {POINTER_LABELS_KEY!r} in each sample: set data.custom_cls to "
                           "agentic_verl.training.v2p_dataset.V2PSFTDataset")
        count = torch.tensor(len(data), dtype=torch.int64)
        if dp_group is not None and torch.distributed.is_initialized():
            from agentic_verl.training.sft_losses import _device_of

            count = count.to(_device_of(data["loss_mask"]))
            torch.distributed.all_reduce(count, op=torch.distributed.ReduceOp.SUM, group=dp_group)
        tu.assign_non_tensor(data, **{SAMPLES_KEY: int(count)})

    def __call__(self, model_output, data, dp_group=None):
        from verl.utils import tensordict_utils as tu
        from verl.utils.dataset.dataset_utils import DatasetPadMode
        from verl.utils.metric import AggregationType, Metric
        from verl.workers.utils.losses import sft_loss

        from agentic_verl.training.v2p_dataset import POINTER_LABELS_KEY

        pad_mode = tu.get_non_tensor_data(data=data, key="pad_mode", default=DatasetPadMode.NO_PADDING)
        if pad_mode != DatasetPadMode.NO_PADDING:
            raise ValueError(f"the v2p loss supports data.pad_mode=no_padding only, got {pad_mode}")
        logits = model_output[POINTER_LOGITS_KEY].unbind()
        labels = data[POINTER_LABELS_KEY].unbind()
        if len(logits) != len(labels):
            raise ValueError(f"{len(logits)} pointer predictions for {len(labels)} samples: each sample needs one "
                             "screenshot and one <|pointer_pad|>")
        share = len(labels) / max(int(data[SAMPLES_KEY]), 1) * data["dp_size"]  # mean -> this micro-batch's share
        ptr = {k: v * share for k, v in pointer_loss(logits, labels, valley_weight=self.valley_weight).items()}
        ce, _ = sft_loss(config=None, model_output=model_output, data=data, dp_group=dp_group)
        loss = self.pointer_weight * ptr["loss"]
        if self.stage == "full" and self.lm_weight:
            loss = loss + self.lm_weight * ce
        # Metric(SUM): summed over micro-batches and averaged over dp ranks, as verl reduces `loss`
        metrics = {
            "v2p/pointer_loss": Metric(AggregationType.SUM, ptr["loss"].detach()),
            "v2p/kl": Metric(AggregationType.SUM, ptr["kl"].detach()),
            "v2p/valley": Metric(AggregationType.SUM, ptr["valley"].detach()),
            "v2p/lm_loss": Metric(AggregationType.SUM, ce.detach()),
            "v2p/samples": Metric(AggregationType.MEAN, int(data[SAMPLES_KEY])),
        }
        return loss, metrics

    def after_step(self, dp_group=None) -> None:
        """No state of its own."""
