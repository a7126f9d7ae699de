"""Preflight for recipes/v2p/grpo_click.sh (stage grpo), sft_warmup.sh / sft_full.sh (stage sft) and sft_click.sh
(stage sft-click): what would make a launched GUI-grounding run fail, checked in seconds.

- data: the train/val files exist and are parquet verl can read, with the columns `agentic-verl data gui` writes
  for the `gui_grounding` loop (`prompt` with an `<image>` placeholder, `images`, `reward_model` whose ground truth
  is a box, `data_source`), and the rows name that loop (or none); for SFT, `messages` with the pointer action
  instead of `prompt` (sft-click: with a text click, `data gui --target text-click`);
- model: a local folder has config.json, weights and a tokenizer (as for every recipe) and is a Qwen2-VL /
  Qwen2.5-VL (the loop needs its processor: a processor or preprocessor config in the folder); a Hub id is checked
  as `check_model` does; for SFT a V2P pointer model (`python -m agentic_verl.v2p.model` makes one; sft-click: a
  Qwen2-VL / Qwen2.5-VL);
- GPU memory: the same budget as the RAG-R1 recipes (`check_gpu_memory`), skipped on CPU.
"""

from __future__ import annotations

import json
from pathlib import Path

from agentic_verl.preflight.data_checks import _first_row, data_paths
from agentic_verl.preflight.gpu_memory import check_gpu_memory
from agentic_verl.preflight.model_checks import check_model, model_folder
from agentic_verl.preflight.settings import RagR1Settings, Report

STAGES = ("grpo", "sft", "sft-click")
_COLUMNS = {"grpo": ("prompt", "images", "reward_model", "data_source"), "sft": ("messages", "images", "reward_model"),
            "sft-click": ("messages", "images", "reward_model")}
_VL_MODEL_TYPES = {"grpo": ("qwen2_vl", "qwen2_5_vl"), "sft": ("v2p_qwen2_5_vl",),
                   "sft-click": ("qwen2_vl", "qwen2_5_vl")}
_MODEL_HINT = {"grpo": "a Qwen2-VL / Qwen2.5-VL (e.g. Qwen/Qwen2.5-VL-7B-Instruct)",
               "sft": "a V2P pointer model (python -m agentic_verl.v2p.model --base QWEN2.5-VL --out DIR makes one)",
               "sft-click": "a Qwen2-VL / Qwen2.5-VL (e.g. Qwen/Qwen2.5-VL-7B-Instruct)"}
_DATA_HINT = "agentic-verl data gui --data DIR --out FILE"


def check_gui(settings: RagR1Settings, stage: str | None = None) -> Report:
    """Every check for one grpo_click.sh (`stage` "grpo"), sft_warmup/full.sh ("sft") or sft_click.sh ("sft-click")
    launch (see the module docstring); `settings` as the RAG-R1 preflight's (stage None: from settings.stage)."""
    report = Report()
    stage = stage or ("sft" if settings.stage == "sft" else "grpo")
    if stage not in STAGES:
        raise ValueError(f"unknown gui preflight stage {stage!r}; known: {', '.join(STAGES)}")
    for role, path in (("train", settings.train), ("val", settings.val)):
        if path is None and role == "val":
            continue
        for one in data_paths(path):
            check_gui_data(report, f"{role} data", one, stage)
    check_model(report, "model", settings.model, tokenizer=True)
    check_vl_model(report, "model", settings.model, stage)
    check_gpu_memory(report, settings)
    return report


def check_gui_data(report: Report, topic: str, path: str, stage: str = "grpo") -> None:
    """A readable parquet of `gui_grounding` rows for `stage` (see the module docstring)."""
    import pyarrow.parquet as pq

    if not path:
        report.problem(topic, "no file given")
        return
    if "://" in path:
        report.note(topic, f"{path}: a remote path, not checked here")
        return
    if not Path(path).is_file():
        report.problem(topic, f"{path} does not exist (write it with `{_DATA_HINT}`)")
        return
    try:
        rows = pq.ParquetFile(path).metadata.num_rows
        columns = set(pq.read_schema(path).names)
    except Exception as exc:
        report.problem(topic, f"{path} is not a readable parquet file ({type(exc).__name__}: {exc})")
        return
    missing = [c for c in _COLUMNS[stage] if c not in columns]
    if rows == 0 or missing:
        what = "has no rows" if rows == 0 else f"lacks the columns {missing} (found {sorted(columns)})"
        report.problem(topic, f"{path} {what}: not gui_grounding data ({_DATA_HINT} writes it)")
        return
    first = _first_row(path, [c for c in (*_COLUMNS[stage], "agent_name") if c in columns])
    chat_column = "prompt" if stage == "grpo" else "messages"
    chat, images = first.get(chat_column), first.get("images")
    text = " ".join(str(m.get("content", "")) for m in chat or [] if isinstance(m, dict))
    truth = (first.get("reward_model") or {}).get("ground_truth")
    box = truth.get("bbox") if isinstance(truth, dict) else truth
    problems = []
    if "<image>" not in text:
        problems.append(f"the {chat_column} column has no `<image>` placeholder")
    if stage == "sft" and "<|pointer_pad|>" not in text:
        problems.append("the messages have no pointer action (`<|pointer_pad|>`) to train")
    if stage == "sft-click" and ("<|pointer_pad|>" in text or "click(x=" not in text):
        problems.append("the messages have no text click `click(x=.., y=..)` to train (write them with "
                        "`data gui --target text-click`)")
    if not images:
        problems.append("the row has no image")
    if not (isinstance(box, list | tuple) and len(box) == 4):
        problems.append(f"the ground truth is not a box [x1, y1, x2, y2] ({str(truth)[:60]!r})")
    agent = first.get("agent_name")
    if stage == "grpo" and agent is not None and agent != "gui_grounding":
        problems.append(f"rows are for the {agent!r} agent loop, not gui_grounding")
    if problems:
        report.problem(topic, f"{path}: {'; '.join(problems)}")
    else:
        report.ok(topic, f"{path}: {rows} rows")


def check_vl_model(report: Report, topic: str, model: str | None, stage: str = "grpo") -> None:
    """A local folder must be a Qwen2-VL / Qwen2.5-VL (SFT: a V2P pointer model) with its processor (the loop and
    the SFT dataset render image tokens with it)."""
    folder = model_folder(model) if model else None
    if folder is None or not (folder / "config.json").is_file():
        return  # check_model already reported it
    model_type = json.loads((folder / "config.json").read_text()).get("model_type")
    files = {p.name for p in folder.iterdir()}
    if model_type not in _VL_MODEL_TYPES[stage]:
        report.problem(topic, f"{model} is a {model_type!r} model; this stage needs {_MODEL_HINT[stage]}")
    elif not files & {"preprocessor_config.json", "processor_config.json"}:
        report.problem(topic, f"{model} has no processor (preprocessor_config.json / processor_config.json): verl "
                              "would run without one and the loop would refuse every image")
    else:
        report.ok(topic, f"{model}: {model_type} with its processor")
