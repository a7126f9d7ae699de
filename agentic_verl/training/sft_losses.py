"""SFT losses for verl's SFT trainer, chosen by name in the `loss` section of our SFT config
(`agentic_verl/training/config/sft_trainer.yaml`, run by `agentic_verl.training.sft_trainer`).

- `sft`: verl's own token-mean loss (`verl.workers.utils.losses.sft_loss`), unchanged.
- `srml`: FunReason's Self-Refinement Multiscale Loss (arXiv 2505.20192; docs/methods.md "FunReason"). Each target
  is split at `</think>` + blank line into a reasoning span and a call span (the dataset's per-token `think_mask`,
  built at data time by `agentic_verl.training.fc_sft_dataset`), and

      L = alpha * mean CE(reasoning tokens) + (1 - alpha) * mean CE(call tokens)

  with both means over the whole step's batch (all micro-batches, all data-parallel ranks), as verl's own loss
  averages over the step's `batch_num_tokens`. With alpha = N_think / (N_think + N_call) it is exactly verl's plain
  token-mean loss. alpha is fixed, or learnable (`learnable: true`, initialised at `alpha`).

verl's loss contract, which both follow: the engine calls `loss(config, model_output, data, dp_group)` once per
micro-batch, back-propagates each result, sums the reported values over micro-batches and averages them (and the
gradients) over data-parallel ranks. So each micro-batch returns its share of the step's loss: a sum over its own
tokens divided by the step's global token count, times dp_size. The step's global counts per span are not in the
batch verl hands the loss, so `prepare_batch` adds them (all-reduced over the data-parallel group) before verl cuts
the batch into micro-batches; the trainer adapter (`sft_trainer.py`) calls it.

Metrics, logged by verl's SFT trainer every step (`train/loss` is L itself): `srml/alpha`, `srml/loss_think`,
`srml/loss_call` (the step's mean CE per span), `srml/think_tokens`, `srml/call_tokens`, and `srml/plain_alpha`
(N_think / (N_think + N_call): the alpha at which this step's L equals plain SFT's).
"""

from __future__ import annotations

import math
from functools import partial

import torch

from agentic_verl.registry import Registry

THINK_MASK_KEY = "think_mask"  # per token: 1 = reasoning span (`<think>...</think>` + blank line), 0 = anything else
THINK_TOKENS_KEY = "srml_think_tokens"  # the step's global count of reasoning target tokens (non-tensor data)
CALL_TOKENS_KEY = "srml_call_tokens"  # ... of the other target tokens (the calls, end of turn)

SFT_LOSSES: Registry = Registry("SFT loss")


def span_counts(loss_mask: torch.Tensor, think_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(reasoning target tokens, other target tokens) in a batch; nested (jagged) or padded tensors."""
    loss_mask, think_mask = _flat(loss_mask).bool(), _flat(think_mask).bool()
    return (loss_mask & think_mask).sum(), (loss_mask & ~think_mask).sum()


def srml_terms(
    log_prob: torch.Tensor,
    loss_mask: torch.Tensor,
    think_mask: torch.Tensor,
    n_think: int,
    n_call: int,
    dp_size: int = 1,
) -> tuple[torch.Tensor, torch.Tensor]:
    """This micro-batch's shares of the step's mean CE over reasoning tokens and over call tokens.

    Inputs are verl's flattened no-padding tensors: `log_prob[t]` is the log-probability of token t+1, so both
    masks are shifted left by one as in verl's `sft_loss`. `n_think` / `n_call` are the step's global counts.

    >>> lp = torch.log(torch.tensor([0.5, 0.25, 0.5, 1.0]))
    >>> think, call = srml_terms(lp, torch.tensor([0, 1, 1, 1]), torch.tensor([0, 1, 0, 0]), n_think=1, n_call=2)
    >>> round(think.item(), 4), round(call.item(), 4)  # -log 0.5, mean(-log 0.25, -log 0.5)
    (0.6931, 1.0397)
    """
    loss_mask = torch.roll(loss_mask, shifts=-1, dims=0).bool()
    think_mask = torch.roll(think_mask, shifts=-1, dims=0).bool()
    nll = -torch.where(loss_mask, log_prob, torch.zeros_like(log_prob))  # no NaN from masked-out positions
    think = (nll * think_mask).sum() / max(int(n_think), 1) * dp_size
    call = (nll * ~think_mask).sum() / max(int(n_call), 1) * dp_size
    return think, call


@SFT_LOSSES.register("sft")
class TokenMeanLoss:
    """verl's own SFT loss (token mean over the step's target tokens), as verl's SFT trainer uses it."""

    def __init__(self):
        from verl.workers.utils.losses import sft_loss

        self._loss = partial(sft_loss, config=None)

    def __call__(self, model_output, data, dp_group=None):
        return self._loss(model_output=model_output, data=data, dp_group=dp_group)

    def prepare_batch(self, data, dp_group=None) -> None:
        """Nothing to add: verl's engine counts the step's target tokens itself."""

    def after_step(self, dp_group=None) -> None:
        """No state of its own."""


@SFT_LOSSES.register("srml")
class SRMLLoss:
    """FunReason's SRML. `alpha` in [0, 1]: the reasoning span's weight (the paper's later revision learns it from
    0.7). `learnable`: alpha = alpha_min + (alpha_max - alpha_min) * sigmoid(theta), theta trained by Adam at
    `alpha_lr` on L itself (dL/dalpha = CE_think - CE_call, so alpha drifts toward the span with the lower loss;
    the bounds keep both spans in the objective). theta is not part of verl's checkpoint: a resumed run restarts
    alpha at `alpha`. A step whose batch has no call (or no reasoning) tokens puts all weight on the other span,
    so L stays a mean CE."""

    def __init__(
        self,
        alpha: float = 0.7,
        learnable: bool = False,
        alpha_lr: float = 1e-3,
        alpha_min: float = 0.05,
        alpha_max: float = 0.95,
    ):
        if not 0.0 <= alpha <= 1.0:
            raise ValueError(f"srml alpha must be in [0, 1], got {alpha}")
        self.learnable = bool(learnable)
        self.alpha_min, self.alpha_max = float(alpha_min), float(alpha_max)
        if self.learnable:
            if not 0.0 <= self.alpha_min < alpha < self.alpha_max <= 1.0:
                raise ValueError(
                    f"learnable srml alpha needs 0 <= alpha_min < alpha < alpha_max <= 1, got "
                    f"{self.alpha_min} < {alpha} < {self.alpha_max}"
                )
            p = (alpha - self.alpha_min) / (self.alpha_max - self.alpha_min)
            self.theta = torch.tensor(math.log(p / (1 - p)), dtype=torch.float32, requires_grad=True)
            self.optimizer = torch.optim.Adam([self.theta], lr=float(alpha_lr))
        else:
            self.fixed_alpha = float(alpha)

    def alpha(self) -> torch.Tensor:
        if not self.learnable:
            return torch.tensor(self.fixed_alpha, dtype=torch.float64)
        return self.alpha_min + (self.alpha_max - self.alpha_min) * torch.sigmoid(self.theta)

    def prepare_batch(self, data, dp_group=None) -> None:
        """Add the step's global span counts to `data` (the whole batch of this rank, before verl splits it)."""
        from verl.utils import tensordict_utils as tu

        if THINK_MASK_KEY not in data.keys():
            raise KeyError(
                f"the srml loss needs a per-token {THINK_MASK_KEY!r} in each sample: use a dataset that "
                "splits targets into reasoning and call spans (agentic_verl.training.fc_sft_dataset)"
            )
        counts = torch.stack(span_counts(data["loss_mask"], data[THINK_MASK_KEY])).to(torch.int64)
        if dp_group is not None and torch.distributed.is_initialized():
            counts = counts.to(_device_of(data["loss_mask"]))
            torch.distributed.all_reduce(counts, op=torch.distributed.ReduceOp.SUM, group=dp_group)
        n_think, n_call = (int(c) for c in counts.tolist())
        tu.assign_non_tensor(data, **{THINK_TOKENS_KEY: n_think, CALL_TOKENS_KEY: n_call})

    def __call__(self, model_output, data, dp_group=None):
        from verl.utils import tensordict_utils as tu
        from verl.utils.dataset.dataset_utils import DatasetPadMode
        from verl.utils.metric import AggregationType, Metric

        pad_mode = tu.get_non_tensor_data(data=data, key="pad_mode", default=DatasetPadMode.NO_PADDING)
        if pad_mode != DatasetPadMode.NO_PADDING:
            raise ValueError(f"the srml loss supports data.pad_mode=no_padding only, got {pad_mode}")
        n_think, n_call = data[THINK_TOKENS_KEY], data[CALL_TOKENS_KEY]
        log_prob = model_output["log_probs"].values()
        think, call = srml_terms(
            log_prob,
            data["loss_mask"].values(),
            data[THINK_MASK_KEY].values(),
            n_think,
            n_call,
            dp_size=data["dp_size"],
        )
        alpha = self.alpha().to(device=think.device, dtype=think.dtype)
        w_think = alpha if n_call else torch.ones_like(alpha)
        w_call = 1 - alpha if n_think else torch.ones_like(alpha)
        loss = w_think * think + w_call * call
        total = max(n_think + n_call, 1)
        # Metric(SUM): summed over micro-batches and averaged over dp ranks, as verl reduces `loss`
        metrics = {
            "srml/loss_think": Metric(AggregationType.SUM, think.detach()),
            "srml/loss_call": Metric(AggregationType.SUM, call.detach()),
            "srml/alpha": Metric(AggregationType.MEAN, alpha.detach()),
            "srml/think_tokens": Metric(AggregationType.MEAN, n_think),
            "srml/call_tokens": Metric(AggregationType.MEAN, n_call),
            "srml/plain_alpha": Metric(AggregationType.MEAN, n_think / total),
        }
        return loss, metrics

    def after_step(self, dp_group=None) -> None:
        """Step learnable alpha once per training step, on its gradient averaged over data-parallel ranks (the
        engine's optimizer steps the model only)."""
        if not self.learnable or self.theta.grad is None:
            return
        if dp_group is not None and torch.distributed.is_initialized():
            grad = self.theta.grad.to(_device_of(None))
            torch.distributed.all_reduce(grad, op=torch.distributed.ReduceOp.AVG, group=dp_group)
            self.theta.grad.copy_(grad.cpu())
        self.optimizer.step()
        self.optimizer.zero_grad()


def build_sft_loss(name: str = "sft", kwargs: dict | None = None):
    """The loss object named `name` (or a `module:attr` / `file.py:attr` reference) built with `kwargs`: the
    config's `loss: {name, kwargs}`.

    >>> build_sft_loss("srml", {"alpha": 0.5}).alpha().item()
    0.5
    """
    return SFT_LOSSES.get(name)(**(kwargs or {}))


def reduce_metrics(metrics: dict) -> dict:
    """verl `Metric`s as plain floats (verl's SFT trainer logs its metrics dict as it is): a Metric per micro-batch
    list (one rank), or a list of them (one per data-parallel rank, reduced with verl's `Metric.aggregate_dp`)."""
    from verl.utils.metric import Metric

    out = {}
    for key, value in metrics.items():
        if isinstance(value, Metric):
            value = float(value.aggregate())
        elif isinstance(value, list) and value and all(isinstance(v, Metric) for v in value):
            value = float(Metric.aggregate_dp(value))
        out[key] = value
    return out


def _flat(tensor: torch.Tensor) -> torch.Tensor:
    return tensor.values() if tensor.is_nested else tensor


def _device_of(tensor: torch.Tensor | None) -> torch.device:
    """Where collectives run: the tensor's device, or the platform's device (gloo on CPU, nccl on CUDA)."""
    from verl.utils.device import get_device_name

    if tensor is not None and tensor.device.type != "cpu":
        return tensor.device
    return torch.device(get_device_name())
