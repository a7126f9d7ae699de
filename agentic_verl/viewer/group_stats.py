"""How many GRPO groups had anything to learn: per training step, the groups (samples of one prompt) whose rewards
differ. GRPO's advantage is a sample's reward minus its group's mean, so a group whose samples all score the same
(all 0: nothing found; all 1: nothing left to improve) contributes no gradient.

Reads the trajectory dumps a run writes with `AGENTIC_VERL_TRAJECTORY_DIR` (agent_loops/trace.py) as the viewer
does (viewer/load.py: trajectories with their rewards joined by request_id; prompt_ids and global_step, the weights
version that generated them, group them).

    python -m agentic_verl.viewer.group_stats OUT/trajectories      # one line per step

>>> trajectories = [{"request_id": str(i), "global_step": 0, "prompt_ids": [i // 2], "reward": r}
...                 for i, r in enumerate([0.0, 1.0, 0.5, 0.5])]
>>> group_spread(trajectories)
{0: {'groups': 2, 'mixed': 1, 'samples': 4, 'mean_reward': 0.5, 'mean_group_std': 0.25}}
"""

from __future__ import annotations

import statistics
import sys
from collections import defaultdict

from agentic_verl.viewer.load import load_dumps


def group_spread(trajectories: list[dict], tolerance: float = 1e-6) -> dict[int, dict]:
    """step -> {groups, mixed (groups whose rewards differ by more than `tolerance`), samples, mean_reward,
    mean_group_std}; trajectories without a reward are left out."""
    groups: dict[int, dict[tuple, list[float]]] = defaultdict(lambda: defaultdict(list))
    for t in trajectories:
        if t.get("reward") is not None:
            groups[int(t["global_step"])][tuple(t["prompt_ids"])].append(float(t["reward"]))
    out = {}
    for step, by_prompt in sorted(groups.items()):
        scores = [s for group in by_prompt.values() for s in group]
        out[step] = {"groups": len(by_prompt),
                     "mixed": sum(max(g) - min(g) > tolerance for g in by_prompt.values()),
                     "samples": len(scores), "mean_reward": round(statistics.fmean(scores), 4),
                     "mean_group_std": round(statistics.fmean(statistics.pstdev(g) for g in by_prompt.values()), 4)}
    return out


def main(argv=None) -> int:
    folder = (argv or sys.argv[1:] or [None])[0]
    if folder is None:
        raise SystemExit("usage: python -m agentic_verl.viewer.group_stats TRAJECTORY_DIR")
    for step, s in group_spread(load_dumps([folder]).trajectories).items():
        print(f"  weights v{step}: {s['mixed']}/{s['groups']} groups with mixed rewards, {s['samples']} samples, "
              f"mean reward {s['mean_reward']:.3f}, mean within-group std {s['mean_group_std']:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
