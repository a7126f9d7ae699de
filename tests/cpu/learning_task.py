"""The learning test's verdict (test_learning.py): did a GRPO run on the learning task
(agentic_verl/demo/learning.py, the task's one home, shared with `make demo-learn`) learn?"""

from __future__ import annotations

from dataclasses import dataclass

from cpu_backend_helpers import weights_in_sync


@dataclass
class Verdict:
    learned: bool
    first: float  # mean reward of the first `window` steps
    last: float  # mean reward of the last `window` steps
    tool_calls: float  # mean tool calls per sample over the last `window` steps
    max_probs_diff: float  # the largest rollout/trainer probability gap of any step
    reasons: list[str]


def learning_verdict(steps: list[dict], window: int = 4, margin: float = 0.10, floor: float = 0.75) -> Verdict:
    """Did the run learn? `steps` are verl's per-step metrics (file logger). Learned when the mean reward of the
    last `window` steps exceeds the first `window` steps' by `margin` and ends at `floor` or more, the policy
    calls a tool in every sample at the end (mean tool calls >= 0.9), and the rollout's weights are the trainer's
    at every step (cpu_backend_helpers.weights_in_sync: probability gap < 1e-3, Pearson > 0.999, k3-KL < 5e-3)."""
    if len(steps) < 2 * window:
        raise ValueError(f"need at least {2 * window} steps, got {len(steps)}")
    reward = [s["critic/score/mean"] for s in steps]
    first, last = sum(reward[:window]) / window, sum(reward[-window:]) / window
    calls = sum(s["agent/num_tool_calls/mean"] for s in steps[-window:]) / window
    diff = max(s["training/rollout_probs_diff_max"] for s in steps)
    out_of_sync = [i for i, s in enumerate(steps, start=1) if not weights_in_sync(s)]
    reasons = []
    if last - first < margin:
        reasons.append(f"reward rose {last - first:+.3f} (first {window} steps {first:.3f}, last {last:.3f}); "
                       f"needs +{margin}")
    if last < floor:
        reasons.append(f"final reward {last:.3f} < {floor}")
    if calls < 0.9:
        reasons.append(f"{calls:.2f} tool calls per sample at the end < 0.9")
    if out_of_sync:
        reasons.append(f"rollout and trainer disagree (probability gap up to {diff:.2e}) at steps {out_of_sync}")
    return Verdict(not reasons, first, last, calls, diff, reasons)
