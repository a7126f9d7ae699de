"""Eval tests reuse the data fixtures: SmolLM2, a toy world, its bm25s index and a live retrieval server; and the
BFCL environment server of tests/bfcl_env."""

from bfcl_env.conftest import bfcl_env  # noqa: F401
from data.conftest import (  # noqa: F401
    smollm2_dir,
    smollm2_tokenizer,
    toy_index_dir,
    toy_retrieval_url,
    toy_world_dir,
)
