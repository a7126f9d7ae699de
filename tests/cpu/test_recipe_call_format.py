"""The RL recipes take the tool-call format as a config setting: `funreason/grpo_ast` and `funreason_mt/grpo` compose
with verl's config to the loop settings their agent loops read (`resolve_config`, as the loops do), prompting by
default and native (with its tool parser) by one Hydra override."""

from __future__ import annotations

import pytest
from test_recipe_configs import recipe_config

from agentic_verl.agent_loops._common import resolve_config
from agentic_verl.agent_loops.bfcl_multi_turn import BfclMultiTurnConfig
from agentic_verl.agent_loops.function_call import FunctionCallConfig

CASES = [("funreason/grpo_ast.sh", "function_call", FunctionCallConfig),
         ("funreason_mt/grpo.sh", "bfcl_multi_turn", BfclMultiTurnConfig)]


@pytest.mark.parametrize("recipe, loop, config_cls", CASES)
def test_the_format_is_a_recipe_setting(recipe, loop, config_cls, tmp_path):
    def loop_config(*args):
        rollout = recipe_config(recipe, "gpu", tmp_path, args).actor_rollout_ref.rollout
        return resolve_config(config_cls, loop, rollout, {}, {})

    default = loop_config()
    assert (default.format, default.tool_parser) == ("prompting", "hermes")
    key = f"actor_rollout_ref.rollout.custom.{loop}"
    native = loop_config(f"{key}.format=native", f"{key}.tool_parser=qwen3_coder")
    assert (native.format, native.tool_parser) == ("native", "qwen3_coder")
    with pytest.raises(ValueError, match="unknown .* format 'fc'; known: prompting, native"):
        loop_config(f"{key}.format=fc")
