"""GUI fixtures: a real tiny Qwen2.5-VL (random weights, real Qwen tokenizer and Qwen2.5-VL processor) and its V2P
pointer version, built once per session; synthetic screenshots with known boxes written in each dataset's layout.

The layout writers are in gui_helpers.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def tiny_vl_dir(tmp_path_factory) -> Path:
    from agentic_verl.v2p.tiny import make_tiny_qwen2_5_vl

    return make_tiny_qwen2_5_vl(tmp_path_factory.mktemp("tiny_qwen2_5_vl"))


@pytest.fixture(scope="session")
def pointer_dir(tiny_vl_dir, tmp_path_factory) -> Path:
    from agentic_verl.v2p.model import make_pointer_model

    return make_pointer_model(tiny_vl_dir, tmp_path_factory.mktemp("v2p_tiny"))


@pytest.fixture(scope="session")
def screens():
    """Three synthetic screenshots of different sizes, 4 elements each (2 text buttons, 2 icons)."""
    from agentic_verl.v2p.synthetic import synthetic_screen

    return [synthetic_screen(seed, size) for seed, size in enumerate([(336, 224), (280, 196), (392, 252)])]
