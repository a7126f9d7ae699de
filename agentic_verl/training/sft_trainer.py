"""verl's SFT trainer with a loss chosen in the config: `torchrun ... -m agentic_verl.training.sft_trainer ...`.

Why this module exists: verl 0.9.1's `SFTTrainer._build_engine` hard-codes its loss
(`partial(sft_loss, config=None)` handed to `TrainingWorker.set_loss_fn`) and offers no config key, registry or
plugin hook to choose another; `main_ppo`'s `register_policy_loss` does not reach the SFT trainer. So this is the
smallest adapter: verl's own `SFTTrainer`, whose `_build_engine` hands verl's worker the loss named in the config's
`loss` section (`agentic_verl.training.sft_losses.SFT_LOSSES`), and a thin wrapper around that worker's
`train_batch` / `infer_batch` that (1) lets the loss add batch-level data before verl cuts the batch into
micro-batches (SRML's global span counts), (2) reduces the loss's verl `Metric`s to floats, which verl's SFT loop
logs as they are, and (3) steps the loss's own parameters (learnable alpha) after each training step. Everything
else (data, engine, optimizer, checkpoints, logging) is verl's `SFTTrainer`, unchanged.

A loss that needs more of the model than verl's log-probs (V2P's pointer head, `loss: v2p`) declares it, and the
hooks verl lacks for that are adapted on verl's FSDP engine object (its methods, wrapped on the instance; the class
and its other instances are untouched):
- `loss.prepare_model(module)`: called on the HF model verl's FSDP engine built (`_build_module`), before FSDP wraps
  it and before the optimizer is built (V2P: the warm-up's frozen weights). verl has no post-build model hook.
- `loss.model_outputs`: names of extra fields of the model's output (a tuple of per-sample tensors) that the loss
  reads next to `log_probs`; the engine's `prepare_model_outputs` keeps only log-probs/entropy, so they are added as
  jagged tensors (one row per sample). Not with Ulysses sequence parallelism (the fields would be per SP shard).
- `loss.check_optimizer(optim_config)`: a loss can refuse optimizer settings that break it, before anything runs.

The config is verl's `sft_trainer_engine` plus `loss: {name, ...kwargs}` (`config/sft_trainer.yaml`), so every
override verl's SFT trainer accepts works here too; `loss.name=sft` is verl's loss exactly.
"""

from __future__ import annotations

import functools

import hydra
import torch
from omegaconf import OmegaConf
from verl.trainer.sft_trainer import SFTTrainer
from verl.utils import tensordict_utils as tu
from verl.utils.device import auto_set_device
from verl.utils.distributed import destroy_global_process_group, initialize_global_process_group

from agentic_verl.training import v2p_loss  # noqa: F401  (registers loss "v2p")
from agentic_verl.training.sft_losses import build_sft_loss, reduce_metrics


class _LossHooks:
    """verl's TrainingWorker with the loss's batch preparation, metric reduction and own step around
    `train_batch` / `infer_batch`; every other attribute is the worker's."""

    def __init__(self, worker, loss):
        self._worker, self._loss = worker, loss

    def __getattr__(self, name):
        return getattr(self._worker, name)

    def _dp_group(self):
        return self._worker.engine.get_data_parallel_group()

    def _run(self, method, data):
        self._loss.prepare_batch(data, dp_group=self._dp_group())
        output = method(data=data)
        if output is not None:
            metrics = tu.get(output, "metrics")
            if metrics is not None:
                tu.assign_non_tensor(output, metrics=reduce_metrics(metrics))
        return output

    def train_batch(self, data):
        output = self._run(self._worker.train_batch, data)
        self._loss.after_step(dp_group=self._dp_group())
        return output

    def infer_batch(self, data):
        return self._run(self._worker.infer_batch, data)


class LossSFTTrainer(SFTTrainer):
    """verl's SFTTrainer; the loss comes from `config.loss` (name + kwargs)."""

    def _build_engine(self):
        super()._build_engine()  # verl's worker, with verl's sft_loss set
        loss_config = OmegaConf.to_container(self.config.get("loss") or {"name": "sft"}, resolve=True)
        self.sft_loss = build_sft_loss(loss_config.get("name", "sft"), loss_config.get("kwargs"))
        self.loss_fn = self.sft_loss
        self.training_client.set_loss_fn(loss_fn=self.sft_loss)
        if hasattr(self.sft_loss, "check_optimizer"):
            self.sft_loss.check_optimizer(self.optimizer_config)
        if hasattr(self.sft_loss, "prepare_model"):
            _after_model_built(self.engine, self.sft_loss.prepare_model)
        if getattr(self.sft_loss, "model_outputs", ()):
            if getattr(self.engine_config, "ulysses_sequence_parallel_size", 1) > 1:
                raise ValueError(f"loss {loss_config.get('name')!r} reads model outputs per sample: run it without "
                                 "Ulysses sequence parallelism (engine.ulysses_sequence_parallel_size=1)")
            _pass_model_outputs(self.engine, self.sft_loss.model_outputs)
        self.training_client = _LossHooks(self.training_client, self.sft_loss)


def _after_model_built(engine, prepare_model) -> None:
    """`prepare_model(module)` on the HF model verl's engine builds, before FSDP wraps it (see the module docstring)."""
    build = getattr(engine, "_build_module", None)
    if build is None:
        raise ValueError(f"this loss prepares the model inside verl's FSDP engine; {type(engine).__name__} has no "
                         "_build_module (use engine.strategy=fsdp2)")

    @functools.wraps(build)
    def _build_module(*args, **kwargs):
        module = build(*args, **kwargs)
        prepare_model(module)
        return module

    engine._build_module = _build_module


def _pass_model_outputs(engine, keys) -> None:
    """Add the model output's `keys` (tuples of per-sample tensors) to what verl's engine hands the loss."""
    prepare = engine.prepare_model_outputs

    @functools.wraps(prepare)
    def prepare_model_outputs(output, output_args, micro_batch, logits_processor_func):
        model_output = prepare(output=output, output_args=output_args, micro_batch=micro_batch,
                               logits_processor_func=logits_processor_func)
        for key in keys:
            per_sample = getattr(output, key, None)
            if per_sample is None:
                raise ValueError(f"the model's output has no {key!r}; the loss needs a model that returns it")
            model_output[key] = _jagged(per_sample)
        return model_output

    engine.prepare_model_outputs = prepare_model_outputs


def _jagged(tensors) -> torch.Tensor:
    """Per-sample 1-D tensors -> one jagged nested tensor (differentiable: built on their concatenation)."""
    lengths = torch.tensor([0] + [t.shape[0] for t in tensors], device=tensors[0].device)
    return torch.nested.nested_tensor_from_jagged(torch.cat(list(tensors)), offsets=lengths.cumsum(0))


def run_sft(config) -> None:
    initialize_global_process_group()
    LossSFTTrainer(config=config).fit()
    destroy_global_process_group()


@hydra.main(config_path="config", config_name="sft_trainer", version_base=None)
def main(config) -> None:
    auto_set_device(config)  # as verl's main: trainer.device=npu on Ascend
    run_sft(config)


if __name__ == "__main__":
    main()
