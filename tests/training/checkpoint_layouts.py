"""Checkpoints in the layouts verl's own checkpoint code writes, built on a CPU (tests/training/test_checkpoint_handoff.py).

FSDP: verl's FSDPCheckpointManager saves a tiny model on a one-process gloo group (`python -m` this module in a child
process: the process group must not outlive the save). Megatron: verl's checkpoint module imports megatron-core, which
has no CPU build here, so its path helpers and the manager's manifest writer are compiled from verl's source file and
run as they are; the HF weights go where they say (mbridge writes `save_weights` there)."""

from __future__ import annotations

import ast
import importlib.util
import json
import logging
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

TINY_LLAMA = {"vocab_size": 64, "hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 1,
              "num_attention_heads": 2, "num_key_value_heads": 2, "architectures": ["LlamaForCausalLM"]}


def _tiny_model():
    from transformers import LlamaConfig, LlamaForCausalLM

    return LlamaForCausalLM(LlamaConfig(**TINY_LLAMA))


def _write_tracker(checkpoint_dir: Path, step: int) -> None:
    """latest_checkpointed_iteration.txt, named by verl's helper (its trainers write it after a save)."""
    tracker = _verl_source_functions("verl.utils.checkpoint.checkpoint_manager", {"get_checkpoint_tracker_filename"})
    Path(tracker["get_checkpoint_tracker_filename"](str(checkpoint_dir))).write_text(str(step))


def _fsdp_save(checkpoint_dir: Path, step: int, port: str) -> None:
    import torch.distributed as dist
    from torch.distributed.fsdp import fully_shard
    from verl.utils.checkpoint.fsdp_checkpoint_manager import FSDPCheckpointManager

    os.environ.update({"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port})
    dist.init_process_group("gloo", rank=0, world_size=1)
    try:
        model = _tiny_model()
        fully_shard(model)
        manager = FSDPCheckpointManager(model, None, checkpoint_config={"save_contents": ["hf_model"],
                                                                        "load_contents": []})
        manager.save_checkpoint(str(checkpoint_dir / f"global_step_{step}"), global_step=step)
        _write_tracker(checkpoint_dir, step)
    finally:
        dist.destroy_process_group()


def save_fsdp_checkpoint(checkpoint_dir: Path, step: int = 3) -> None:
    """verl's FSDP checkpoint (HF weights requested, as recipes/_common/sft.yaml does) of step `step`."""
    from agentic_verl.net import free_port

    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parent)}
    proc = subprocess.run([sys.executable, "-m", "checkpoint_layouts", str(checkpoint_dir), str(step),
                           str(free_port())], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]


def _verl_source_functions(module: str, names: set[str], class_name: str | None = None) -> dict:
    """verl's functions `names` (methods of `class_name` if given) and the module's string constants, compiled from
    the installed source file without importing the module."""
    spec = importlib.util.find_spec("verl")
    path = Path(next(iter(spec.submodule_search_locations)), *module.split(".")[1:]).with_suffix(".py")
    tree = ast.parse(path.read_text())
    body = tree.body
    if class_name is not None:
        body = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == class_name).body
    constants = [n for n in tree.body if isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant)]
    functions = [n for n in body if isinstance(n, ast.FunctionDef) and n.name in names]
    assert {f.name for f in functions} == names, f"{path} lacks {names - {f.name for f in functions}}"
    from verl.utils.fs import local_mkdir_safe

    namespace = {"os": os, "json": json, "local_mkdir_safe": local_mkdir_safe, "logger": logging.getLogger(__name__),
                 "log_with_rank": lambda *args, **kwargs: None}
    exec(compile(ast.Module(body=[*constants, *functions], type_ignores=[]), str(path), "exec"), namespace)
    return namespace


MEGATRON_PATH_HELPERS = {
    "get_model_checkpoint_path", "get_optimizer_checkpoint_path", "get_extra_checkpoint_path",
    "get_model_dist_checkpoint_path", "get_optimizer_dist_checkpoint_path", "get_extra_dist_checkpoint_path",
    "get_hf_model_checkpoint_path", "get_transformer_config_checkpoint_path", "get_checkpoint_contents_manifest_path",
}


def save_megatron_checkpoint(checkpoint_dir: Path, step: int = 3, manifest: bool = True) -> Path:
    """A Megatron checkpoint step as verl's MegatronCheckpointManager lays it out (save_contents [model, optimizer,
    extra, hf_model], mbridge on, no PEFT); the HF folder its helper named."""
    local_path = str(checkpoint_dir / f"global_step_{step}")
    helpers = _verl_source_functions("verl.utils.megatron_utils", MEGATRON_PATH_HELPERS)
    hf_dir = Path(helpers["get_hf_model_checkpoint_path"](local_path))
    _tiny_model().save_pretrained(hf_dir)  # what bridge.save_weights(model, hf_ckpt_path) writes
    if manifest:
        methods = _verl_source_functions("verl.utils.checkpoint.megatron_checkpoint_manager",
                                         {"_build_checkpoint_manifest", "_write_checkpoint_manifest"},
                                         class_name="MegatronCheckpointManager")
        manager = SimpleNamespace(
            rank=0, role="actor", arch="LlamaForCausalLM", world_size=1, MANIFEST_SCHEMA_VERSION=2,
            checkpoint_save_contents=["model", "optimizer", "extra", "hf_model"], should_save_hf_model=True,
            should_save_dist_ckpt_model=False, should_save_optimizer=True, should_save_extra=True, peft_cls=None,
            lr_scheduler=None, processing_class=None, bridge=object(), use_dist_checkpointing=False)
        for name, helper in helpers.items():  # the manager module imports these helpers from megatron_utils
            if name in MEGATRON_PATH_HELPERS:
                methods[name] = helper
        manager._build_checkpoint_manifest = lambda *args: methods["_build_checkpoint_manifest"](manager, *args)
        methods["_write_checkpoint_manifest"](manager, local_path, step, False)
    _write_tracker(checkpoint_dir, step)
    return hf_dir


if __name__ == "__main__":
    _fsdp_save(Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3])
