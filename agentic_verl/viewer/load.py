"""Read trajectory dumps (JSONL written by `agentic_verl.agent_loops.trace`) into a list of trajectories.

Two kinds of lines: `kind: "trajectory"` (one per finalized trajectory) and `kind: "reward"` (written by
the `agentic_trace` reward manager once the reward is known, often by another process, so in another
file). Reward records are joined to their trajectory by `request_id`. A malformed line is skipped and
reported with its file and line number; every well-formed record is kept (a reward record whose
trajectory is not among the inputs is reported as unmatched, not dropped silently).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

KINDS = ("trajectory", "reward")


@dataclass
class LoadResult:
    trajectories: list[dict] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # "file:line: reason", one per malformed line
    rewards_joined: int = 0
    unmatched_rewards: list[dict] = field(default_factory=list)
    files: list[str] = field(default_factory=list)


def expand_inputs(inputs: list[str]) -> list[Path]:
    """Files as given; a directory stands for the *.jsonl files in it. Missing paths raise FileNotFoundError."""
    paths: list[Path] = []
    for item in inputs:
        path = Path(item)
        if path.is_dir():
            found = sorted(path.glob("*.jsonl"))
            if not found:
                raise FileNotFoundError(f"no *.jsonl dump files in directory {item}")
            paths.extend(found)
        elif path.is_file():
            paths.append(path)
        else:
            raise FileNotFoundError(f"trajectory dump not found: {item}")
    return paths


def load_dumps(inputs: list[str]) -> LoadResult:
    result = LoadResult()
    rewards: list[dict] = []
    for path in expand_inputs(inputs):
        result.files.append(str(path))
        with open(path, encoding="utf-8", errors="replace") as handle:
            for line_no, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                record, problem = parse_line(line)
                if problem:
                    result.skipped.append(f"{path}:{line_no}: {problem}")
                    continue
                record["_source"] = f"{path.name}:{line_no}"
                (rewards if record["kind"] == "reward" else result.trajectories).append(record)
    _join_rewards(result, rewards)
    return result


def parse_line(line: str) -> tuple[dict | None, str | None]:
    """(record, None) for a usable line, (None, reason) otherwise."""
    try:
        record = json.loads(line.rstrip("\r\n"))
    except json.JSONDecodeError as exc:  # a line cut short (a killed writer) lands here
        return None, f"not valid JSON ({exc.msg.removesuffix(' at')} at column {exc.colno})"
    if not isinstance(record, dict):
        return None, f"expected a JSON object, got {type(record).__name__}"
    record.setdefault("kind", "trajectory")
    if record["kind"] not in KINDS:
        return None, f"unknown record kind {record['kind']!r} (known: {', '.join(KINDS)})"
    if not isinstance(record.get("request_id"), str) or not record["request_id"]:
        return None, "missing request_id"
    reward = record.get("reward")
    if reward is not None and (isinstance(reward, bool) or not isinstance(reward, (int, float))):
        return None, f"reward must be a number or null, got {type(reward).__name__}"
    if record["kind"] == "reward":
        return record, None
    ids, mask = record.get("response_ids", []), record.get("response_mask", [])
    if not isinstance(ids, list) or not isinstance(mask, list):
        return None, "response_ids and response_mask must be lists"
    if len(ids) != len(mask):
        return None, f"response_ids has {len(ids)} tokens but response_mask has {len(mask)}"
    for key, kind in (("turns", list), ("metrics", dict), ("reward_components", dict), ("messages", list),
                      ("response_segments", list), ("pre_turn_tool_calls", list)):
        if record.get(key) is None:
            record[key] = kind()
        elif not isinstance(record[key], kind):
            return None, f"{key} must be a JSON {'array' if kind is list else 'object'}"
    for i, segment in enumerate(record["response_segments"]):
        if not isinstance(segment, dict) or not all(_is_count(segment.get(key, 0)) for key in ("start", "num_tokens")):
            return None, f"response_segments[{i}] must be an object with non-negative integer start and num_tokens"
    return record, None


def _is_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _join_rewards(result: LoadResult, rewards: list[dict]) -> None:
    by_id: dict[str, list[dict]] = {}
    for trajectory in result.trajectories:
        by_id.setdefault(trajectory["request_id"], []).append(trajectory)
    for reward in rewards:
        targets = by_id.get(reward["request_id"])
        if not targets:
            result.unmatched_rewards.append(reward)
            continue
        for trajectory in targets:
            if isinstance(reward.get("reward"), (int, float)):
                trajectory["reward"] = reward["reward"]
            components = reward.get("reward_components")
            if isinstance(components, dict):
                trajectory["reward_components"] = {**trajectory["reward_components"], **components}
        result.rewards_joined += 1


def failures_of(trajectory: dict) -> list[str]:
    """Failure categories with a non-zero count in the trajectory's metrics (or on its tool calls)."""
    found = {key.split("/", 1)[1] for key, value in trajectory.get("metrics", {}).items()
             if key.startswith("failure/") and isinstance(value, (int, float)) and value > 0}
    for turn in trajectory.get("turns", []):
        for call in (turn.get("tool_calls") or []) if isinstance(turn, dict) else []:
            if isinstance(call, dict) and call.get("failure"):
                found.add(str(call["failure"]))
    return sorted(found)
