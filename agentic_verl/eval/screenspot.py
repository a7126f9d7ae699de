"""`agentic-verl eval screenspot`: GUI grounding accuracy on ScreenSpot / ScreenSpot-v2 / ScreenSpot-Pro.

    result = evaluate(ScreenSpotSettings(data=["data/ScreenSpot-v2"], model="outputs/v2p/hf"))
    print(format_paper_table(result))

Each sample's screenshot and instruction go to a click predictor (v2p/predictors.py: a V2P pointer model or any
Qwen2.5-VL folder in-process, or an OpenAI-compatible endpoint); the metric is the one every grounding paper
reports: the click, in original-screenshot pixels, lies inside the ground-truth box (edges included). Reported:
accuracy per benchmark, per group (ScreenSpot: mobile/desktop/web; Pro: Dev/Creative/CAD/Scientific/Office/OS) x
element type (text/icon), per platform, and failures (no_click: the answer held no click; request_error: the
endpoint failed; outside_box; bad_coordinates: a click whose coordinates are not finite once mapped to the
screenshot, e.g. `click(1e306, 0)`). The paper table puts the published rows (docs/methods.md, "V2P") beside ours. The data loaders and
each set's box convention: data/gui_grounding.py.
"""

from __future__ import annotations

import math
import threading
import time
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

from agentic_verl.data.gui_grounding import GroundingSample, load_grounding
from agentic_verl.eval.output import write_run
from agentic_verl.eval.settings_checks import check_counts, checked_paths
from agentic_verl.rewards.gui import point_in_box
from agentic_verl.v2p.sizes import SIZE_BUCKETS, size_bucket

BENCHMARKS = {"screenspot": "ScreenSpot", "screenspot_v2": "ScreenSpot-v2", "screenspot_pro": "ScreenSpot-Pro"}
ELEMENT_TYPES = ("text", "icon")
# Published accuracy in percent (docs/methods.md, "V2P": ScreenSpot-v2 / ScreenSpot-Pro; the V2P paper's first version,
# a later one reports 92.4 / 52.5). ScreenSpot (v1) numbers are not collected there.
SCREENSPOT_PUBLISHED = {
    "V2P-7B (published)": {"screenspot_v2": 92.3, "screenspot_pro": 50.5},
    "GUI-Actor-7B (published)": {"screenspot_v2": 92.1, "screenspot_pro": 44.6},
    "GUI-G2-7B (published)": {"screenspot_v2": 93.3, "screenspot_pro": 47.5},
    "Qwen2.5-VL-7B (published)": {"screenspot_v2": 88.8, "screenspot_pro": 26.8},
}
FAILURES = ("no_click", "request_error", "outside_box", "bad_coordinates")


@dataclass
class ScreenSpotSettings:
    data: list[str]  # dataset folders (or a GUI-Actor JSON file), any layout data/gui_grounding.py reads
    model: str | None = None  # a model folder, run in-process (V2P pointer model or a Qwen2.5-VL)
    endpoint: str | None = None  # or an OpenAI-compatible chat-completions server ...
    model_name: str | None = None  # ... serving this model name
    api_key_env: str | None = None  # the variable holding its bearer token (default OPENAI_API_KEY, if set); not the key
    layout: str = "auto"
    benchmark: str | None = None  # override the benchmark name the loader infers
    label: str = ""
    limit: int | None = None  # first N samples of each dataset
    min_pixels: int | None = None  # None: the processor's (in-process) / Qwen2.5-VL-7B's (endpoint)
    max_pixels: int | None = None
    coord_system: str = "absolute"  # text clicks: pixels of the resized image (Qwen2.5-VL), normalized, thousandths
    max_tokens: int = 64
    threshold: float | None = None  # pointer models: keep patches >= threshold x max (None: the config's, 0.3)
    dtype: str = "auto"
    concurrency: int = 8  # endpoint requests in flight (in-process models run one sample at a time)
    extra: dict = field(default_factory=dict)

    def __post_init__(self):
        self.data = checked_paths(self.data, Path.exists, none_given="no data given", not_found="data not found")
        check_counts(self, "limit", "concurrency", none_allowed=("limit",))


def load_samples(s: ScreenSpotSettings) -> list[GroundingSample]:
    samples = []
    for path in s.data:
        samples += load_grounding(path, layout=s.layout, limit=s.limit, benchmark=s.benchmark)
    return samples


def evaluate(settings: ScreenSpotSettings, predictor=None, report=None) -> dict:
    """Every sample through the predictor -> {"settings", "summary", "benchmarks", "samples"}.

    `predictor`: anything with `predict(image, instruction) -> Prediction` (v2p/predictors.py); default: built from
    the settings. `report`: a `ScreenSpotReport` that gets every sample with its image and prediction."""
    samples = load_samples(settings)  # bad data fails before a model loads
    if predictor is None:
        from agentic_verl.v2p.predictors import open_predictor

        predictor = open_predictor(settings.model, settings.endpoint, settings.model_name, dtype=settings.dtype,
                                   min_pixels=settings.min_pixels, max_pixels=settings.max_pixels,
                                   max_tokens=settings.max_tokens, coord_system=settings.coord_system,
                                   threshold=settings.threshold, api_key_env=settings.api_key_env)
    check = getattr(predictor, "check", None)
    if check is not None:
        check()
    lock = threading.Lock()

    def one(index: int, sample: GroundingSample) -> dict:
        image = sample.open_image()
        started = time.perf_counter()
        prediction = predictor.predict(image, sample.instruction)
        seconds = time.perf_counter() - started
        point, failure = prediction.point, prediction.failure
        if point is not None and not all(math.isfinite(v) for v in point):
            point, failure = None, failure or "bad_coordinates"  # a click at 1e306 maps to inf: no point on screen
            prediction.point = None  # (the report draws the prediction)
        hit = point is not None and point_in_box(point, sample.bbox)
        failure = failure or (None if hit else "outside_box")
        record = {**sample.record(), "point": list(point) if point else None, "hit": bool(hit),
                  "failure": failure, "text": prediction.text, "truncated": prediction.truncated,
                  "size": size_bucket(sample.bbox, sample.image_size),
                  "input_size": list(prediction.input_size) if prediction.input_size else None,
                  "seconds": round(seconds, 3)}
        if report is not None:
            with lock:
                report.add(index, sample, image, prediction, record)
        return record

    started = time.perf_counter()
    workers = settings.concurrency if settings.endpoint else 1
    with ThreadPoolExecutor(max_workers=workers) as pool:
        records = list(pool.map(one, range(len(samples)), samples))
    benchmarks = {name: summarize([r for r in records if r["benchmark"] == name])
                  for name in dict.fromkeys(r["benchmark"] for r in records)}
    summary = summarize(records, breakdown=False)
    summary["seconds"] = round(time.perf_counter() - started, 1)
    result_settings = asdict(settings)
    result_settings["model"] = settings.model or settings.model_name
    result_settings["predictor"] = type(predictor).__name__
    return {"settings": result_settings, "summary": summary, "benchmarks": benchmarks, "samples": records}


def _accuracy(records: list[dict]) -> float:
    return round(sum(r["hit"] for r in records) / len(records), 4) if records else 0.0


def summarize(records: list[dict], breakdown: bool = True) -> dict:
    """n, accuracy, failure counts, accuracy per target size (gui.sizes: small/medium/large); with `breakdown`,
    accuracy per group x element type, per platform, per type."""
    failures = Counter(r["failure"] for r in records if r["failure"])
    sized = {size: [r for r in records if r.get("size") == size] for size in SIZE_BUCKETS}
    out = {"n": len(records), "accuracy": _accuracy(records),
           "failures": {name: failures.get(name, 0) for name in FAILURES},
           "sizes": {size: {"accuracy": _accuracy(rs), "n": len(rs)} for size, rs in sized.items() if rs}}
    if not breakdown:
        return out
    out["groups"] = {}
    for group, rs in _grouped(records, "group", sort=False):
        typed = {t: [r for r in rs if r["element_type"] == t] for t in ELEMENT_TYPES}
        out["groups"][group] = {**{t: _accuracy(typed[t]) if typed[t] else None for t in ELEMENT_TYPES},
                                "avg": _accuracy(rs), "n": len(rs)}
    out["element_types"] = {t: {"accuracy": _accuracy(rs), "n": len(rs)} for t, rs in _grouped(records, "element_type")}
    out["platforms"] = {p: {"accuracy": _accuracy(rs), "n": len(rs)} for p, rs in _grouped(records, "platform")}
    return out


def _grouped(records: list[dict], key: str, sort: bool = True) -> list[tuple[str, list[dict]]]:
    groups: dict[str, list[dict]] = defaultdict(list)
    for r in records:
        groups[r[key] or "-"].append(r)
    return sorted(groups.items()) if sort else list(groups.items())


def _label(result: dict) -> str:
    return result["settings"].get("label") or Path(str(result["settings"]["model"])).name


def format_paper_table(result: dict) -> str:
    """Accuracy (%) per benchmark: the published rows, then ours (benchmarks we did not run: -)."""
    ours = result["benchmarks"]
    columns = list(BENCHMARKS) + [b for b in ours if b not in BENCHMARKS]
    lines = ["| model | " + " | ".join(BENCHMARKS.get(c, c) for c in columns) + " |",
             "|" + "---|" * (len(columns) + 1)]
    for name, row in SCREENSPOT_PUBLISHED.items():
        lines.append(f"| {name} | " + " | ".join(f"{row[c]:.1f}" if c in row else "-" for c in columns) + " |")
    lines.append(f"| {_label(result)} | " + " | ".join(
        f"{100 * ours[c]['accuracy']:.1f}" if c in ours else "-" for c in columns) + " |")
    return "\n".join(lines)


def format_breakdown_table(result: dict) -> str:
    """Ours: accuracy (%) per benchmark and group, text / icon / both, with the sample counts and failures; then
    accuracy per target size (gui.sizes)."""
    lines = ["| benchmark | group | text | icon | avg | n | no click | outside box |", "|---|---|---|---|---|---|---|---|"]
    pct = (lambda v: "-" if v is None else f"{100 * v:.1f}")  # noqa: E731
    for name, b in result["benchmarks"].items():
        for group, g in b["groups"].items():
            lines.append(f"| {BENCHMARKS.get(name, name)} | {group} | {pct(g['text'])} | {pct(g['icon'])} | "
                         f"{pct(g['avg'])} | {g['n']} | | |")
        types = b["element_types"]
        lines.append(f"| {BENCHMARKS.get(name, name)} | **all** | {pct(types.get('text', {}).get('accuracy'))} | "
                     f"{pct(types.get('icon', {}).get('accuracy'))} | {pct(b['accuracy'])} | {b['n']} | "
                     f"{b['failures']['no_click']} | {b['failures']['outside_box']} |")
    lines += ["", "| benchmark | " + " | ".join(f"{size} (n)" for size in SIZE_BUCKETS) + " |",
              "|---|" + "---|" * len(SIZE_BUCKETS)]
    for name, b in result["benchmarks"].items():
        cells = [f"{pct(b['sizes'][size]['accuracy'])} ({b['sizes'][size]['n']})" if size in b["sizes"] else "-"
                 for size in SIZE_BUCKETS]
        lines.append(f"| {BENCHMARKS.get(name, name)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def format_stage_table(runs: list[dict], baselines: dict | None = None) -> str:
    """One row per evaluation of the same samples (e.g. before / after SFT / after RL): accuracy overall and per
    target size, the share of samples with a click and of answers cut at the token limit; then `baselines` rows
    ({name: {"accuracy", "n", "by_size"}}, as `data gui-world` writes for its held-out splits)."""
    header = "| model | n | accuracy | " + " | ".join(SIZE_BUCKETS) + " | clicked | truncated | seconds |"
    lines = [header, "|" + "---|" * (header.count("|") - 1)]
    for run in runs:
        s, records = run["summary"], run["samples"]
        sizes = [f"{s['sizes'][b]['accuracy']:.3f}" if b in s.get("sizes", {}) else "-" for b in SIZE_BUCKETS]
        clicked = sum(r["point"] is not None for r in records) / max(len(records), 1)
        truncated = sum(bool(r.get("truncated")) for r in records) / max(len(records), 1)
        lines.append(f"| {_label(run)} | {s['n']} | {s['accuracy']:.3f} | " + " | ".join(sizes) +
                     f" | {clicked:.2f} | {truncated:.2f} | {s.get('seconds', 0):.0f} |")
    for name, b in (baselines or {}).items():
        sizes = [f"{b['by_size'][size]:.3f}" if size in b["by_size"] else "-" for size in SIZE_BUCKETS]
        lines.append(f"| baseline: {name.replace('_', ' ')} | {b['n']} | {b['accuracy']:.3f} | " + " | ".join(sizes)
                     + " | - | - | - |")
    return "\n".join(lines)


def write_result(result: dict, out_dir: str | Path) -> Path:
    """OUT/result.json (settings, summaries, per-sample records) and OUT/table.md (paper table + breakdown)."""
    return write_run(result, out_dir, format_paper_table(result), format_breakdown_table(result))
