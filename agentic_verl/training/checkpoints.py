"""The SFT -> RL handoff: the HF weights of a trainer's latest checkpoint, wherever the training engine wrote them.

verl 0.9.1 names the latest step of a checkpoint folder in `latest_checkpointed_iteration.txt` and saves step N under
`global_step_N/`. Where the HF folder sits inside it depends on the engine's checkpoint manager:

- FSDP (`verl/utils/checkpoint/fsdp_checkpoint_manager.py`): `huggingface/` at the step's root;
- Megatron (`verl/utils/megatron_utils.py`, checkpoint layout schema v2): `get_hf_model_checkpoint_path`, i.e.
  `model/huggingface/`, and the manager records it in the step's `ckpt_contents.json` manifest.

The Megatron layout is read from verl's own module (its constants and the helper that joins them), because importing
that module needs megatron-core, which a FSDP machine does not have; a changed layout is an error, not a guess.
tests/training/test_checkpoint_handoff.py builds both layouts with verl's own code and finds the weights in each.

The recipes run `python3 -m agentic_verl.training.checkpoints hf-dir DIR`: it prints the folder, or says where it
looked and exits 2. `hf-dir DIR actor` finds an RL run's actor weights (`global_step_N/actor/...`) the same way.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import sys
from functools import cache
from pathlib import Path

LATEST_STEP_FILE = "latest_checkpointed_iteration.txt"  # verl's trainers write it beside the global_step_N folders
MANIFEST_FILE = "ckpt_contents.json"  # verl's Megatron manifest (megatron_utils.get_checkpoint_contents_manifest_path)
# FSDPCheckpointManager.save_checkpoint joins this literal to the step folder (no helper to ask); the handoff test
# saves with that manager and checks where the weights land.
FSDP_HF_SUBDIR = "huggingface"
WEIGHT_GLOBS = ("*.safetensors", "*.bin")  # HF weights: safetensors (verl's default) or torch pickles


class CheckpointLayoutError(RuntimeError):
    """verl's Megatron checkpoint code no longer has the shape this module reads."""


def _verl_module_file(dotted: str) -> Path:
    verl = importlib.util.find_spec("verl")
    if verl is None or not verl.submodule_search_locations:
        raise CheckpointLayoutError("verl is not installed: cannot read its checkpoint layout")
    return Path(next(iter(verl.submodule_search_locations)), *dotted.split(".")[1:]).with_suffix(".py")


@cache
def megatron_hf_subdir() -> str:
    """The HF folder of a Megatron checkpoint step, relative to it, as verl's `get_hf_model_checkpoint_path` builds it.

    >>> megatron_hf_subdir()
    'model/huggingface'
    """
    source = _verl_module_file("verl.utils.megatron_utils")
    tree = ast.parse(source.read_text())
    constants = {target.id: node.value.value for node in tree.body if isinstance(node, ast.Assign)
                 for target in node.targets if isinstance(target, ast.Name)
                 and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)}
    functions = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}
    # get_hf_model_checkpoint_path(p) = join(get_model_checkpoint_path(p), _HUGGINGFACE_SUBDIR) and
    # get_model_checkpoint_path(p) = join(p, _MODEL_SUBDIR): each helper's join(...) names one constant
    parts = []
    for name in ("get_model_checkpoint_path", "get_hf_model_checkpoint_path"):
        joined = _joined_constants(functions.get(name), constants)
        if len(joined) != 1:
            raise CheckpointLayoutError(f"{source}: {name} no longer joins one layout constant to the checkpoint "
                                        f"path (found {joined}); read verl's checkpoint layout and update {__name__}")
        parts.append(constants[joined[0]])
    return "/".join(parts)


def _joined_constants(function: ast.FunctionDef | None, constants: dict[str, str]) -> list[str]:
    """The module constants a function passes to `os.path.join` after the first argument."""
    if function is None:
        return []
    return [arg.id for node in ast.walk(function)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "join"
            for arg in node.args[1:] if isinstance(arg, ast.Name) and arg.id in constants]


def hf_subdirs() -> dict[str, str]:
    """engine -> where its checkpoint manager writes a step's HF folder (relative to `global_step_N`)."""
    return {"fsdp": FSDP_HF_SUBDIR, "megatron": megatron_hf_subdir()}


def _has_weights(folder: Path) -> bool:
    return folder.is_dir() and any(next(folder.glob(pattern), None) for pattern in WEIGHT_GLOBS)


def _manifest_hf_dir(step_dir: Path) -> Path | None:
    """The HF folder a Megatron step's manifest names (verl writes the manifest last: a finished save)."""
    path = step_dir / MANIFEST_FILE
    if not path.is_file():
        return None
    contents = json.loads(path.read_text()).get("contents", {})
    for key in ("hf_model", "model"):
        entry = contents.get(key) or {}
        if entry.get("format") == "huggingface" and entry.get("path"):
            return step_dir / entry["path"]
    return None


def latest_step_dir(checkpoint_dir: Path) -> Path | None:
    """`global_step_N` named by the folder's latest_checkpointed_iteration.txt, or None without one."""
    try:
        step = (checkpoint_dir / LATEST_STEP_FILE).read_text().strip()
    except OSError:
        return None
    return checkpoint_dir / f"global_step_{step}" if step.isdigit() else None


def hf_weights_dir(checkpoint_dir: str | Path, role: str | None = None) -> Path | None:
    """The HF folder with weights of the latest step in `checkpoint_dir`, saved by either engine; None if none.
    `role`: the RL trainer's subfolder of a step (`actor`, `critic`); None for the SFT trainer's steps.

    The Megatron manifest's entry comes first; then each engine's layout (SFT on one engine may feed RL on the
    other: HF weights are engine-neutral)."""
    step_dir = latest_step_dir(Path(checkpoint_dir))
    if step_dir is None:
        return None
    if role:
        step_dir = step_dir / role
    candidates = [_manifest_hf_dir(step_dir), *(step_dir / sub for sub in hf_subdirs().values())]
    return next((folder for folder in candidates if folder is not None and _has_weights(folder)), None)


def describe_search(checkpoint_dir: str | Path) -> str:
    """Where `hf_weights_dir` looks, for the recipes' error message."""
    layouts = ", ".join(f"global_step_N/{sub} ({engine})" for engine, sub in hf_subdirs().items())
    return (f"looked for {Path(checkpoint_dir) / LATEST_STEP_FILE} and HF weights ({', '.join(WEIGHT_GLOBS)}) in "
            f"{layouts} or where global_step_N/{MANIFEST_FILE} says")


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) not in (2, 3) or args[0] != "hf-dir":
        print(f"usage: python -m {__name__} hf-dir CHECKPOINT_DIR [ROLE]   (ROLE: an RL checkpoint's actor or "
              "critic)", file=sys.stderr)
        return 2
    found = hf_weights_dir(args[1], *args[2:])
    if found is None:
        print(f"MODEL_PATH is not set and {args[1]} holds no SFT checkpoint with HF weights: "
              f"{describe_search(args[1])}", file=sys.stderr)
        return 2
    print(found)
    return 0


if __name__ == "__main__":
    sys.exit(main())
