"""Per-request sampling seeds, so that a seeded GRPO run samples the same rollouts when it is run again.

verl seeds vLLM's engine once per replica (`actor_rollout_ref.rollout.seed`). Requests without a seed of their own
then draw from the engine's one generator in the order they reach it, and concurrent agent loops reach it in a
different order every run: three GRPO runs from the same weights on the same questions had step-1 rewards 0.31,
0.88 and 0.56. verl's `full_determinism` is no cure: it gives every request the *same* seed, so a GRPO group's
samples come out identical.

Our loops give each sampled request a seed made from what names it in the run:

- the rollout seed (`actor_rollout_ref.rollout.seed`; the demos set it from their SEED),
- the sample (its prompt messages and dataset index),
- how many trajectories on that sample this process started before: the k-th of a GRPO group, and the samples of
  later steps, count on,
- the generation's number within the trajectory.

The count is taken when `run()` starts, before its first await: verl's agent-loop worker starts its samples in
batch order and gets the same chunk of every batch when the run repeats, so the seeds repeat. Greedy requests
(temperature 0) and requests whose caller set a seed are left as they are. What stays nondeterministic is the
engine's arithmetic: a batch of other sizes can flip a near-tie token (notes/lab_notebook.md gives the spread).
"""

from __future__ import annotations

import collections
import hashlib
import json
from collections.abc import Mapping
from typing import Any

_STARTED: collections.Counter[str] = collections.Counter()  # per process: trajectories started per sample


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


def _sample_key(kwargs: Mapping[str, Any]) -> str:
    # Images and other objects count by type only: their repr can hold a memory address, which differs per run.
    messages = json.dumps(kwargs.get("raw_prompt"), sort_keys=True, default=lambda value: type(value).__name__)
    return _digest(f"{kwargs.get('index')!r}|{messages}")


class TrajectorySeeds:
    """The seeds of one trajectory's generations: `params(sampling_params)` adds the next one."""

    def __init__(self, material: str):
        self._material = material
        self.generations = 0

    def params(self, sampling_params: dict[str, Any]) -> dict[str, Any]:
        """`sampling_params` with this trajectory's next seed, unless greedy or already seeded."""
        generation = self.generations
        self.generations += 1
        if "seed" in sampling_params or float(sampling_params.get("temperature", 1.0)) <= 0:
            return dict(sampling_params)
        seed = int(_digest(f"{self._material}|{generation}")[:8], 16) & 0x7FFFFFFF
        return {**sampling_params, "seed": seed}


def start_trajectory(rollout_config: Mapping[str, Any] | None, kwargs: Mapping[str, Any]) -> TrajectorySeeds:
    """Count a new trajectory on the sample in `kwargs` (the dataset row verl passes to `run`) and return its seeds.
    Call it at the start of `run()`, before any await."""
    rollout_seed = int((rollout_config or {}).get("seed", 0) or 0)
    key = _sample_key(kwargs)
    occurrence = _STARTED[key]
    _STARTED[key] += 1
    return TrajectorySeeds(f"{rollout_seed}|{key}|{occurrence}")


def reset() -> None:
    """Forget the counts (tests; a process that starts a new run)."""
    _STARTED.clear()
