"""Hand-written multi-turn tasks on BFCL's file-system simulator, as `bfcl_multi_turn` RL rows, for the
recipes/funreason_mt tests (no generator, never a BFCL question: the states, requests and ids are ours).

The rows show a subset of GorillaFileSystem's function docs (bfcl-eval's own docs for ls, cd, mkdir, touch: short
prompts for a CPU run) and, for SmolLM2-135M-Instruct, two worked examples of the protocol between the system prompt
and the first request (`few_shot=True`): with them the 135M model writes `[mkdir(dir_name='...')]`-style calls."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

from agentic_verl.agent_loops.prompts import bfcl_multi_turn_messages
from agentic_verl.rewards.bfcl.multi_turn_entry import parse_entry

SHOWN = ("ls", "cd", "mkdir", "touch")
DATA_SOURCE = "bfcl_multi_turn_handwritten"


def _tree(*names: str) -> dict:
    return {"GorillaFileSystem": {"root": {"sam": {"type": "directory", "contents": {
        name: {"type": "directory", "contents": {}} if "." not in name else {"type": "file", "content": "draft"}
        for name in names}}}}}


# (id, turns of user requests, ground truth per turn, initial files, withheld {turn: names})
TASKS = [
    ("hw_multi_turn_base_0", ["Create a folder named 'reports'."], [["mkdir(dir_name='reports')"]], ("notes.txt",), None),
    ("hw_multi_turn_base_1", ["Create a file named 'plan.txt'."], [["touch(file_name='plan.txt')"]], ("old",), None),
    ("hw_multi_turn_base_2", ["Make a new folder called 'music'."], [["mkdir(dir_name='music')"]], ("a.txt",), None),
    ("hw_multi_turn_base_3", ["Create a folder named 'trips'.", "Now create a file named 'rome.txt' inside it."],
     [["mkdir(dir_name='trips')"], ["cd(folder='trips')", "touch(file_name='rome.txt')"]], ("notes.txt",), None),
    ("hw_multi_turn_miss_func_0", ["Create a file named 'todo.txt'.", None],
     [[], ["touch(file_name='todo.txt')"]], ("docs",), {"1": ["touch"]}),
]
FEW_SHOT = [
    {"role": "user", "content": "Create a folder named 'photos'."},
    {"role": "assistant", "content": "[mkdir(dir_name='photos')]"},
    {"role": "tool", "content": "None"},
    {"role": "assistant", "content": "I created the folder photos."},
    {"role": "user", "content": "Create a file named 'list.txt'."},
    {"role": "assistant", "content": "[touch(file_name='list.txt')]"},
    {"role": "tool", "content": "None"},
    {"role": "assistant", "content": "I created the file list.txt."},
]


def shown_docs() -> list[dict]:
    """bfcl-eval's own docs of the file system's functions in SHOWN."""
    path = resources.files("bfcl_eval") / "data" / "multi_turn_func_doc" / "gorilla_file_system.json"
    docs = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [doc for doc in docs if doc["name"] in SHOWN]


def rows(few_shot: bool = False, tasks=TASKS) -> list[dict]:
    docs = shown_docs()
    out = []
    for index, (task_id, requests, truth, files, withheld) in enumerate(tasks):
        question = [[{"role": "user", "content": text}] if text else [] for text in requests]
        extra_info = {"id": task_id, "index": index, "involved_classes": ["GorillaFileSystem"],
                      "question": json.dumps(question), "initial_config": json.dumps(_tree(*files)),
                      "function": json.dumps(docs), "ground_truth": json.dumps(truth), "long_context": False}
        if withheld:
            extra_info["missed_function"] = json.dumps(withheld)
        entry = parse_entry(extra_info, need_ground_truth=True)
        prompt = bfcl_multi_turn_messages(entry.question[0], entry.functions_at_start())
        if few_shot:
            prompt = [prompt[0], *FEW_SHOT, *prompt[1:]]
        out.append({"data_source": DATA_SOURCE, "prompt": prompt, "ability": "function_calling",
                    "reward_model": {"style": "rule", "ground_truth": extra_info["ground_truth"]},
                    "extra_info": extra_info, "agent_name": "bfcl_multi_turn"})
    return out


def write_rows(path: Path, few_shot: bool = False, tasks=TASKS) -> Path:
    import pandas as pd

    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows(few_shot, tasks)).to_parquet(path)
    return path
