"""Several seeds of one demo: a row per seed, the mean gain beside one question's worth and the spread across seeds.

    summaries = load_summaries(["outputs/demo_seeds"])      # seed*/summary.json inside, or summary.json files
    print(format_seeds_markdown(summaries))

A row holds, in this order: every stage's score (stages in their order: before / after SFT / after RL ...), the
score by question kind across the stages, tool calls per question across the stages, the truncation rate across the
stages, and the seconds of each stage and training. Below the rows: the mean gain of the last stage over the one
before it and over the first, each with its standard deviation, min and max across seeds and in questions, and one
question's worth (1/n).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path

from agentic_verl.demo.methods import get_method
from agentic_verl.demo.summary import fmt, load_summary

ARROW = " → "


def summary_paths(inputs: list[str]) -> list[Path]:
    """summary.json files: as given, a run folder's summary.json, or every seed*/summary.json of a seeds folder."""
    paths: list[Path] = []
    for item in inputs:
        path = Path(item)
        if path.is_file():
            paths.append(path)
        elif (path / "summary.json").is_file():
            paths.append(path / "summary.json")
        elif path.is_dir() and sorted(path.glob("seed*/summary.json")):
            paths += sorted(path.glob("seed*/summary.json"))
        else:
            raise FileNotFoundError(f"no demo summary at {item} (expected a summary.json, a run folder holding one, "
                                    "or a folder with seed*/summary.json)")
    return paths


def load_summaries(inputs: list[str], method: str | None = None) -> list[dict]:
    """The summaries, sorted by seed, checked to be comparable (one method, `method` when given, the same stages in
    the same order)."""
    paths = summary_paths(inputs)
    summaries = sorted((load_summary(p) | {"_path": str(p)} for p in paths), key=lambda s: s["seed"])
    first = summaries[0]
    if method is not None and first["method"] != method:
        raise ValueError(f"{first['_path']} is a {first['method']} run, not {method}")
    labels = [s["label"] for s in first["stages"]]
    for s in summaries[1:]:
        if s["method"] != first["method"]:
            raise ValueError(f"{s['_path']} is a {s['method']} run, {first['_path']} a {first['method']} run")
        if [st["label"] for st in s["stages"]] != labels:
            raise ValueError(f"{s['_path']} has stages {[st['label'] for st in s['stages']]}, "
                             f"{first['_path']} has {labels}: seeds are compared stage by stage")
    seeds = [s["seed"] for s in summaries]
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"the same seed twice among {', '.join(s['_path'] for s in summaries)}")
    return summaries


def _kinds(summaries: list[dict]) -> list[str]:
    return list(dict.fromkeys(k for s in summaries for st in s["stages"] for k in st["by_kind"]))


def _trainings(summaries: list[dict], key: str = "training") -> list[str]:
    """Labels of the runs' trainings (or, with key="timings", of their timed-only stages), first seen first."""
    return list(dict.fromkeys(t["label"] for s in summaries for t in s.get(key) or []))


def _across(values: list, digits: int = 3) -> str:
    return ARROW.join(fmt(v, digits) for v in values)


def _mean(values: list) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.fmean(present) if present else None


def seeds_table(summaries: list[dict]) -> tuple[list[str], list[list[str]]]:
    """(header, rows): a row per seed, then the mean over seeds."""
    labels = [st["label"] for st in summaries[0]["stages"]]
    kinds, trainings = _kinds(summaries), _trainings(summaries) + _trainings(summaries, "timings")
    tool = get_method(summaries[0]["method"]).tool_calls_name
    header = (["seed", "n", *labels, *(f"{k}" for k in kinds), f"{tool}/q", "truncated",
               "seconds (" + " / ".join(labels + trainings) + ")", "total s"])

    def row(name: str, n: str, stages: list[dict], times: list, total) -> list[str]:
        """`stages`: per stage {"score", "by_kind", "tool_calls_per_question", "truncation_rate"}."""
        return [name, n, *(fmt(st["score"]) for st in stages),
                *(_across([st["by_kind"].get(k) for st in stages]) for k in kinds),
                _across([st["tool_calls_per_question"] for st in stages], 2),
                _across([st["truncation_rate"] for st in stages], 2),
                " / ".join(fmt(t, 0) for t in times), fmt(total, 0)]

    times = [_times(s, trainings) for s in summaries]
    rows = [row(str(s["seed"]), "/".join(dict.fromkeys(str(st["n"]) for st in s["stages"])), s["stages"], t,
                s.get("seconds_total")) for s, t in zip(summaries, times, strict=True)]
    mean_stages = [{"score": _mean([s["stages"][i]["score"] for s in summaries]),
                    "by_kind": {k: _mean([s["stages"][i]["by_kind"].get(k) for s in summaries]) for k in kinds},
                    "tool_calls_per_question": _mean([s["stages"][i]["tool_calls_per_question"] for s in summaries]),
                    "truncation_rate": _mean([s["stages"][i]["truncation_rate"] for s in summaries])}
                   for i in range(len(labels))]
    rows.append(row("mean", "", mean_stages, [_mean(list(column)) for column in zip(*times, strict=True)],
                    _mean([s.get("seconds_total") for s in summaries])))
    return header, rows


def _times(summary: dict, trainings: list[str]) -> list[float | None]:
    """Seconds of each stage, then of each training and timing (None where this run has no such entry)."""
    training_seconds = {t["label"]: t["seconds"] for t in [*(summary.get("training") or []),
                                                           *(summary.get("timings") or [])]}
    return [st["seconds"] for st in summary["stages"]] + [training_seconds.get(label) for label in trainings]


@dataclass
class Gain:
    """The gain of stage `to` over stage `over`, across seeds."""
    over: str
    to: str
    per_seed: list[float]
    per_seed_questions: list[float]  # the gain times each seed's n

    @property
    def mean(self) -> float:
        return statistics.fmean(self.per_seed)

    @property
    def sd(self) -> float | None:
        return statistics.stdev(self.per_seed) if len(self.per_seed) > 1 else None

    def describe(self, metric: str) -> str:
        sd = "-" if self.sd is None else f"{self.sd:.3f}"
        return (f"{self.to} - {self.over}: mean {self.mean:+.3f} {metric} over {len(self.per_seed)} seed(s) "
                f"= {statistics.fmean(self.per_seed_questions):+.1f} questions (sd {sd}, min "
                f"{min(self.per_seed):+.3f}, max {max(self.per_seed):+.3f}; per seed "
                + ", ".join(f"{g:+.3f}" for g in self.per_seed) + ")")


def gains(summaries: list[dict]) -> list[Gain]:
    """The last stage over the one before it and over the first (one entry when those are the same stage)."""
    stages = summaries[0]["stages"]
    if len(stages) < 2:
        return []
    pairs = [(len(stages) - 2, len(stages) - 1), (0, len(stages) - 1)] if len(stages) > 2 else [(0, 1)]
    out = []
    for a, b in pairs:
        per_seed = [s["stages"][b]["score"] - s["stages"][a]["score"] for s in summaries]
        out.append(Gain(stages[a]["label"], stages[b]["label"], per_seed,
                        [g * s["stages"][b]["n"] for g, s in zip(per_seed, summaries, strict=True)]))
    return out


def one_question(summaries: list[dict]) -> str:
    """One question's worth of the score: 1/n of the last stage (a range when n differs across seeds)."""
    ns = sorted({s["stages"][-1]["n"] for s in summaries})
    metric = summaries[0]["metric"]
    if len(ns) == 1:
        return f"one question = 1/{ns[0]} = {1 / ns[0]:.3f} {metric}"
    return f"one question = 1/n for n = {ns[0]}..{ns[-1]}: {1 / ns[-1]:.3f}..{1 / ns[0]:.3f} {metric}"


def gain_lines(summaries: list[dict]) -> list[str]:
    metric = summaries[0]["metric"]
    lines = [g.describe(metric) for g in gains(summaries)] or ["one stage only: no gain to compute"]
    return [*lines, one_question(summaries)]


def format_seeds_markdown(summaries: list[dict]) -> str:
    header, rows = seeds_table(summaries)
    s = summaries[0]
    lines = [f"{s['method']}: {s['metric']} per stage on {len(summaries)} seed(s); kinds, tool calls and truncation "
             f"run across the stages ({ARROW.strip()})", "",
             "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join([*lines, "", *gain_lines(summaries)])
