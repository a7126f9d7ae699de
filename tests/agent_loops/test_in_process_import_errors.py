"""`make_agent_loop` reports why a loop is missing: a module that failed to import (a missing dependency) is that
ImportError, never "not registered"; only a name no module defines is "not registered"."""

from __future__ import annotations

import importlib

import pytest

from agentic_verl.agent_loops import in_process
from agentic_verl.agent_loops.in_process import loop_trainer_config, make_agent_loop


def make(name: str):
    return make_agent_loop(name, tokenizer=None, server_manager=None, trainer_config=loop_trainer_config(8))


def test_a_registered_loop_whose_module_failed_to_import(monkeypatch):
    # plugin.register_all logs the failure and goes on (verl would swallow it); the loop's user gets the cause
    from verl.experimental.agent_loop.agent_loop import _agent_loop_registry as registry

    import agentic_verl.plugin as plugin

    monkeypatch.delitem(registry, "gui_grounding", raising=False)
    monkeypatch.setitem(plugin.IMPORT_ERRORS, "agentic_verl.agent_loops.gui",
                        "ModuleNotFoundError: No module named 'qwen_vl_utils'")
    with pytest.raises(ImportError, match="gui_grounding.*agentic_verl.agent_loops.gui.*qwen_vl_utils"):
        make("gui_grounding")


@pytest.mark.parametrize("error", [
    ModuleNotFoundError("No module named 'some_missing_dependency'", name="some_missing_dependency"),
    SyntaxError("invalid syntax"),
])
def test_an_unlisted_loop_module_that_fails_to_import(monkeypatch, error):
    real = importlib.import_module

    def import_module(module, package=None):
        if module == "agentic_verl.agent_loops.my_new_loop":
            raise error
        return real(module, package)

    monkeypatch.setattr(in_process.importlib, "import_module", import_module)
    with pytest.raises(ImportError, match=f"my_new_loop.*failed to import: {type(error).__name__}") as info:
        make("my_new_loop")
    assert info.value.__cause__ is error


@pytest.mark.parametrize("name", ["no_such_loop", "../etc", "a.b"])
def test_a_name_no_module_defines_is_not_registered(name):
    with pytest.raises(ValueError, match=f"agent loop {name!r} is not registered; known: .*rag_r1"):
        make(name)
