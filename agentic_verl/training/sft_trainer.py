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

The config is verl's `sft_trainer_engine` plus `loss: {name, ...kwargs}` (`config/sft_trainer.yaml`), so every
override verl's SFT trainer accepts works here too; `loss.name=sft` is verl's loss exactly.
"""

from __future__ import annotations

import hydra
from omegaconf import OmegaConf
from verl.trainer.sft_trainer import SFTTrainer
from verl.utils import tensordict_utils as tu
from verl.utils.device import auto_set_device
from verl.utils.distributed import destroy_global_process_group, initialize_global_process_group

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
        self.training_client = _LossHooks(self.training_client, self.sft_loss)


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
