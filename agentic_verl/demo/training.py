"""A training stage of a demo: verl's file-logger JSONL -> the reward, response length and tool calls per step.

verl's `FileLogger` (trainer.logger=['file'], path from VERL_FILE_LOGGER_PATH) writes one line per `log` call:
`{"step": N, "data": {metric: value, ...}}`; a step can span several lines (e.g. validation logged apart), so
lines of one step are merged. Read per step:
- reward: `critic/score/mean` (the sequence score GRPO optimises);
- response_length: `response_length/mean` (tokens);
- tool_calls: the agent metric `AgentMetricsReplayBuffer` (agent_loops/trace_sampler.py) logs from the loop's
  trace, chosen per method (methods.py: searches for rag_r1, decoded calls for funreason's function_call loop,
  the share of samples with a click for v2p's gui_grounding); None at a step where the metric is absent.
"""

from __future__ import annotations

import json
from pathlib import Path

from agentic_verl.demo.methods import get_method

REWARD, RESPONSE_LENGTH = "critic/score/mean", "response_length/mean"


def read_steps(path: str | Path) -> dict[int, dict]:
    """step -> its merged metrics; a clear error naming the file on a missing file or a malformed line."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"training log not found: {path} (verl's file logger: trainer.logger=['file'] and "
                                "VERL_FILE_LOGGER_PATH)")
    steps: dict[int, dict] = {}
    for line_no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}:{line_no}: not valid JSON ({exc.msg})") from None
        if not (isinstance(record, dict) and isinstance(record.get("step"), int)
                and isinstance(record.get("data"), dict)):
            raise ValueError(f"{path}:{line_no}: not a verl file-logger line ({{\"step\": N, \"data\": {{...}}}})")
        steps.setdefault(record["step"], {}).update(record["data"])
    return dict(sorted(steps.items()))


def training_record(label: str, path: str | Path, seconds: float | None, method: str) -> dict:
    """{"label", "seconds", "source", "steps": [{"step", "reward", "response_length", "tool_calls"}, ...]}:
    the steps that logged a reward (training steps; a validation-only step has none)."""
    tool_calls = get_method(method).tool_calls
    steps = [{"step": step, "reward": float(m[REWARD]),
              "response_length": float(m[RESPONSE_LENGTH]) if RESPONSE_LENGTH in m else None,
              "tool_calls": tool_calls(m)}
             for step, m in read_steps(path).items() if REWARD in m]
    if not steps:
        raise ValueError(f"{path}: no step logged {REWARD} (is it a GRPO/PPO run's file-logger output?)")
    return {"label": label, "seconds": seconds, "source": str(path), "steps": steps}
