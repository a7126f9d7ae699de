"""GiGPO (Group-in-Group Policy Optimization, arXiv 2505.10978) as verl's advantage estimator `gigpo`.

    algorithm.adv_estimator=gigpo  +algorithm.gigpo.omega=1.0  +algorithm.gigpo.gamma=0.95

GRPO gives every token of a trajectory one advantage. GiGPO adds turn-level credit: the turns of a group's
trajectories (the samples of one prompt, verl's `uid`) that start from the same environment state ("anchor state",
a digest each loop records per turn) form a step group, and each turn's tokens get

    A(turn t of trajectory i) = A_E(i) + omega * A_S(i, t)

- A_E, the episode-level advantage: verl's own GRPO advantage of the trajectory (`compute_grpo_outcome_advantage`,
  with `algorithm.norm_adv_by_std_in_grpo`), so that GiGPO is GRPO plus a term;
- A_S, the step-level advantage (the paper's Eq. for A^S, section 3.2): (R_t - mean(G)) / (std(G) + eps) over the
  step group G of the turn with `step_norm: std` (the paper's default), R_t - mean(G) with `none` (its other
  variant); unset, it follows the episode term (`norm_adv_by_std_in_grpo`), so that both are normalised alike; R_t = sum_{k >= t} gamma^(k - t) r_k the discounted return from turn t; r_k, the reward of turn k, is
  the token-level reward on turn k's tokens and the observations after them (verl puts the trajectory's score on
  its last token, so with one final reward R_t = gamma^(T - t) * score). A step group of one contributes 0: when every
  anchor state is distinct, GiGPO is exactly GRPO. std is torch's (unbiased), as verl's GRPO uses.

A turn is a maximal run of policy tokens (`response_mask` 1) in the response; the loops record one anchor digest per
policy turn (`gigpo_anchors.py`). The first turn's anchor is the prompt itself,
shared by the group: its step group is the whole group.

How the anchors reach the estimator (the one adapter, listed in docs/contracts.md): verl 0.9.1 passes a custom
estimator only `token_level_rewards`, `response_mask`, `index` (uid) and `config`, and reorders the batch's rows
(`_balance_batch`) between sampling and the advantage step, so nothing earlier can hand them over by position.
The estimator therefore reads the batch's keys from verl's own `PPOTrainer._compute_advantage` frame, which fetched
its rows with exactly those keys, and reads each row's `extra_fields` for them from verl's TransferQueue (as
our replay buffer reads the metrics). Outside verl's trainer (tests, other callers) `row_anchors(...)` gives them.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, fields
from typing import Any

import torch

from agentic_verl.training.gigpo_anchors import ANCHORS_FIELD, START  # noqa: F401 (START: the loops' first anchor)

NAME = "gigpo"
STEP_NORMS = ("std", "none")
_ROW_ANCHORS: contextvars.ContextVar[list | None] = contextvars.ContextVar("gigpo_row_anchors", default=None)


class GigpoInputError(ValueError):
    """The batch lacks what GiGPO needs (the anchors of a row, a setting): a configuration error, not a model's."""


@dataclass(frozen=True)
class GigpoSettings:
    omega: float = 1.0  # the weight of the step-level advantage
    gamma: float = 0.95  # the discount of step returns (verl-agent's GiGPO default)
    step_norm: str | None = None  # "std": (R - mean) / (std + eps) | "none": R - mean | None: as the episode term
    epsilon: float = 1e-6

    def __post_init__(self):
        if self.step_norm is not None and self.step_norm not in STEP_NORMS:
            raise GigpoInputError(f"algorithm.gigpo.step_norm must be one of {STEP_NORMS}, got {self.step_norm!r}")
        if not 0.0 <= float(self.gamma) <= 1.0:
            raise GigpoInputError(f"algorithm.gigpo.gamma must be in [0, 1], got {self.gamma}")

    @classmethod
    def from_config(cls, config: Any) -> GigpoSettings:
        """`algorithm.gigpo` of verl's algorithm config (absent: the defaults; `step_norm` unset: std when
        `algorithm.norm_adv_by_std_in_grpo`, as verl's default, else none); an unknown key is an error."""
        has_get = config is not None and hasattr(config, "get")
        section = dict((config.get("gigpo") if has_get else None) or {})
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(section) - known)
        if unknown:
            raise GigpoInputError(f"unknown algorithm.gigpo key(s) {unknown}; known: {sorted(known)}")
        if section.get("step_norm") is None:
            by_std = config.get("norm_adv_by_std_in_grpo", True) if has_get else True
            section["step_norm"] = "std" if by_std else "none"
        return cls(**section)


def turn_spans(mask: Sequence[int]) -> list[tuple[int, int]]:
    """[(start, end)) of each maximal run of policy tokens in one response mask.

    >>> turn_spans([1, 1, 0, 0, 1, 0, 1, 1])
    [(0, 2), (4, 5), (6, 8)]
    """
    return _batch_spans(torch.tensor([list(mask)]))[0]


def _batch_spans(response_mask: torch.Tensor) -> list[list[tuple[int, int]]]:
    """`turn_spans` of every row at once (vectorised: a long batch is millions of tokens)."""
    mask = (response_mask != 0).to(torch.int8)
    edge = torch.zeros(mask.shape[0], 1, dtype=torch.int8)
    change = torch.diff(torch.cat([edge, mask, edge], dim=1), dim=1)
    spans: list[list[tuple[int, int]]] = [[] for _ in range(mask.shape[0])]
    for (row, start), (_, end) in zip((change == 1).nonzero().tolist(), (change == -1).nonzero().tolist(),
                                      strict=True):
        spans[row].append((start, end))
    return spans


def step_advantages(token_level_rewards: torch.Tensor, response_mask: torch.Tensor, index: Sequence,
                    anchors: Sequence[Sequence[str] | None], settings: GigpoSettings) -> torch.Tensor:
    """A_S on every policy token (0 elsewhere and in step groups of one). `anchors[row]`: the row's anchor digest
    per turn, at least as many as it has turns (a response cut at its length limit has fewer); None for a row with
    no policy token (verl's padding rows)."""
    spans = _batch_spans(response_mask)
    # r_t of every turn at once: the rewards from its start to the next turn's start (the last: to the end)
    width = response_mask.shape[1]
    cells = [(row, start, bound) for row, row_spans in enumerate(spans)
             for (start, _), bound in zip(row_spans, [s for s, _ in row_spans[1:]] + [width], strict=True)]
    cumulative = torch.cat([torch.zeros(len(spans), 1, dtype=torch.float64),
                            token_level_rewards.to(torch.float64).cumsum(dim=1)], dim=1)
    rows = [row for row, _, _ in cells]
    turn_rewards = iter((cumulative[rows, [b for *_, b in cells]] - cumulative[rows, [s for _, s, _ in cells]])
                        .tolist())
    groups: dict[tuple, list[tuple[int, int, int, float]]] = defaultdict(list)
    for row, row_spans in enumerate(spans):
        rewards = [next(turn_rewards) for _ in row_spans]
        if not row_spans:
            continue
        row_anchors = anchors[row]
        if row_anchors is None or len(row_anchors) < len(row_spans):
            raise GigpoInputError(f"row {row} (uid {index[row]}) has {len(row_spans)} policy turns but "
                                  f"{0 if row_anchors is None else len(row_anchors)} anchor digests: its agent loop "
                                  f"does not record `{ANCHORS_FIELD}` (docs/gigpo.md lists the loops that do)")
        returns, later = [], 0.0
        for reward in reversed(rewards):
            later = reward + settings.gamma * later
            returns.append(later)
        for (start, end), anchor, value in zip(row_spans, row_anchors, reversed(returns), strict=False):
            groups[(index[row], str(anchor))].append((row, start, end, value))
    advantages = torch.zeros_like(token_level_rewards, dtype=torch.float32)
    for members in groups.values():
        if len(members) < 2:
            continue
        values = torch.tensor([value for *_, value in members], dtype=torch.float32)
        centred = values - values.mean()
        if settings.step_norm != "none":  # std, or unset outside verl's config: the paper's default
            centred = centred / (values.std() + settings.epsilon)
        for (row, start, end, _), value in zip(members, centred.tolist(), strict=True):
            advantages[row, start:end] = value
    return advantages * response_mask


def gigpo_advantages(token_level_rewards: torch.Tensor, response_mask: torch.Tensor, index: Sequence,
                     anchors: Sequence[Sequence[str] | None], settings: GigpoSettings,
                     norm_adv_by_std_in_grpo: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    """(advantages, returns): verl's GRPO advantage plus omega times the step-level one (module docstring)."""
    from verl.trainer.ppo.core_algos import compute_grpo_outcome_advantage

    episode, _ = compute_grpo_outcome_advantage(token_level_rewards, response_mask, index,
                                                norm_adv_by_std_in_grpo=norm_adv_by_std_in_grpo)
    step = step_advantages(token_level_rewards, response_mask, index, anchors, settings)
    advantages = episode + float(settings.omega) * step
    return advantages, advantages


@contextlib.contextmanager
def row_anchors(anchors: list) -> Iterator[None]:
    """The anchors of the batch's rows, in the order verl passes them to the estimator, for the calls inside."""
    token = _ROW_ANCHORS.set(list(anchors))
    try:
        yield
    finally:
        _ROW_ANCHORS.reset(token)


def anchors_from_verl_trainer() -> list:
    """Each row's anchors, in the estimator's row order, from the batch of verl's `_compute_advantage` frame (the
    module docstring says why); a GigpoInputError when there is no such frame or the rows cannot be read."""
    import sys

    frame = sys._getframe(1)
    while frame is not None and not (frame.f_code.co_name == "_compute_advantage" and "batch" in frame.f_locals
                                     and hasattr(frame.f_locals["batch"], "keys")):
        frame = frame.f_back
    if frame is None:
        raise GigpoInputError("algorithm.adv_estimator=gigpo needs each row's anchor states, which verl passes to no "
                              "estimator: it reads them in verl's trainer (verl.trainer.ppo.v1's "
                              "PPOTrainer._compute_advantage, what main_ppo runs); elsewhere wrap the call in "
                              "gigpo.row_anchors(...)")
    batch = frame.f_locals["batch"]
    del frame
    import transfer_queue as tq

    try:
        data = tq.kv_batch_get(keys=batch.keys, partition_id=batch.partition_id, select_fields=["extra_fields"])
        extra_fields = data.pop("extra_fields").tolist()
    except Exception as exc:
        raise GigpoInputError(f"gigpo: cannot read the batch's extra_fields from verl's TransferQueue: "
                              f"{type(exc).__name__}: {exc}") from exc
    return [(fields or {}).get(ANCHORS_FIELD) if isinstance(fields, dict) else None for fields in extra_fields]


def register() -> None:
    from verl.trainer.ppo.core_algos import register_adv_est

    @register_adv_est(NAME)
    def compute_gigpo_advantage(token_level_rewards, response_mask, index=None, config=None, **kwargs):
        anchors = _ROW_ANCHORS.get()
        if anchors is None:
            anchors = anchors_from_verl_trainer()
        if index is None or len(anchors) != len(index):
            raise GigpoInputError(f"gigpo: {len(anchors)} rows of anchors for a batch of "
                                  f"{None if index is None else len(index)} rows")
        settings = GigpoSettings.from_config(config)
        norm = config.get("norm_adv_by_std_in_grpo", True) if config is not None else True
        return gigpo_advantages(token_level_rewards, response_mask, index, anchors, settings, bool(norm))


register()
