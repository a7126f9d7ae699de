"""One mutation per kind of check: the installed verl object is replaced (monkeypatch) the way a verl release could
change it, and the contracts' check must report exactly that contract broken, with a message that says what changed.

Kinds: a new required field on a class we build (TokenOutput), a changed return shape (ToolAgentLoop._call_tool),
a changed behaviour (tensordict_utils.get no longer unwraps), a config key gone (verl's YAML, a config dataclass),
and a reworded call in a module read from its file (verl's Megatron engine, which cannot be imported here).
The renamed symbol / parameter / text mutations are in tests/test_contracts.py."""

from __future__ import annotations

import dataclasses

import pytest

from agentic_verl.contracts import CONTRACTS, Contract, check, check_contracts, format_report

TOKEN_OUTPUT = "verl.workers.rollout.replica:TokenOutput"
CALL_TOOL = "verl.experimental.agent_loop.tool_agent_loop:ToolAgentLoop._call_tool"
MEGATRON_LOSS_CALL = ("verl.workers.engine.megatron.transformer_impl:MegatronEngineWithLMHead."
                      "postprocess_micro_batch_func")


def _contract(target: str) -> Contract:
    return next(c for c in CONTRACTS if c.target == target)


def _drifted(monkeypatch=None) -> dict[str, list[str]]:
    return {r.contract.target: r.problems for r in check_contracts() if not r.ok}


def test_a_new_required_field_on_token_output_is_reported(monkeypatch):
    import verl.workers.rollout.replica as replica

    assert check(_contract(TOKEN_OUTPUT)).ok

    class TokenOutput(replica.TokenOutput):  # a verl release that makes every server say which request it answers
        request_id: str

    monkeypatch.setattr(replica, "TokenOutput", TokenOutput)
    drifted = _drifted()
    assert set(drifted) == {TOKEN_OUTPUT}, drifted
    assert drifted[TOKEN_OUTPUT] == [
        "requires field(s) 'request_id' that our code does not pass (it builds TokenOutput with token_ids, "
        "log_probs, stop_reason)"]
    assert "- verl.workers.rollout.replica:TokenOutput  (used by agentic_verl/agent_loops/in_process.py)" in (
        format_report(check_contracts()))


def test_a_field_we_pass_that_is_gone_is_reported(monkeypatch):
    import verl.workers.rollout.replica as replica
    from pydantic import BaseModel

    class TokenOutput(BaseModel):  # stop_reason renamed to finish_reason
        token_ids: list[int]
        log_probs: list[float] | None = None
        finish_reason: str | None = None

    monkeypatch.setattr(replica, "TokenOutput", TokenOutput)
    problems = check(_contract(TOKEN_OUTPUT)).problems
    assert "no longer takes field(s) 'stop_reason' that our code passes" in problems, problems


def test_a_changed_return_shape_of_call_tool_is_reported(monkeypatch):
    from verl.experimental.agent_loop.tool_agent_loop import ToolAgentLoop
    from verl.tools.schemas import ToolResponse

    assert check(_contract(CALL_TOOL)).ok

    async def two_items(self, tool_call, tools_kwargs, agent_data):  # metrics dropped from the tuple
        return ToolResponse(text="found"), 0.5

    monkeypatch.setattr(ToolAgentLoop, "_call_tool", two_items)
    drifted = _drifted()
    assert set(drifted) == {CALL_TOOL}, drifted
    assert drifted[CALL_TOOL] == ["returns a 2-tuple (ToolResponse, float); we unpack (ToolResponse, reward, "
                                  "metrics dict)"]


def test_call_tool_that_drops_the_tools_metrics_or_rewords_its_error_is_reported(monkeypatch):
    from verl.experimental.agent_loop.tool_agent_loop import ToolAgentLoop
    from verl.tools.schemas import ToolResponse

    async def no_metrics(self, tool_call, tools_kwargs, agent_data):
        tool = agent_data._active_tools[tool_call.name]
        try:
            response, reward, _ = await tool.execute("i", {}, agent_data=agent_data)
        except Exception as exc:
            return ToolResponse(text=f"Tool '{tool_call.name}' failed: {exc}"), 0.0, {}
        return response, reward, {}

    monkeypatch.setattr(ToolAgentLoop, "_call_tool", no_metrics)
    problems = check(_contract(CALL_TOOL)).problems
    assert len(problems) == 2, problems
    assert problems[0].startswith("its third item is {}, not the tool's metrics dict"), problems
    assert problems[1].startswith("a tool that raises gives"), problems
    assert "Error executing tool '<name>'" in problems[1]


def test_call_tool_that_keeps_agent_data_from_the_tool_is_reported(monkeypatch):
    # McpTool and PythonTool key their per-trajectory state by the agent_data verl hands to execute
    from verl.experimental.agent_loop.tool_agent_loop import ToolAgentLoop

    original = ToolAgentLoop._call_tool

    async def without_agent_data(self, tool_call, tools_kwargs, agent_data):
        tool = agent_data._active_tools[tool_call.name]
        execute = tool.execute
        tool.execute = lambda instance_id, parameters, **kwargs: execute(instance_id, parameters)
        try:
            return await original(self, tool_call, tools_kwargs, agent_data)
        finally:
            tool.execute = execute

    monkeypatch.setattr(ToolAgentLoop, "_call_tool", without_agent_data)
    problems = check(_contract(CALL_TOOL)).problems
    assert len(problems) == 1, problems
    assert problems[0].startswith("the tool's execute got {}, not agent_data="), problems


def test_a_changed_behaviour_of_tensordict_get_is_reported(monkeypatch):
    import verl.utils.tensordict_utils as tu

    target = "verl.utils.tensordict_utils:get"
    monkeypatch.setattr(tu, "get", lambda tensordict, key, default=None: tensordict.get(key, default))  # no unwrap
    problems = check(_contract(target)).problems
    assert len(problems) == 1 and problems[0].startswith("get(data, 'metrics') gives NonTensorData(NonTensorData(data={'loss': [1.0]}"), problems


def test_a_probe_that_raises_is_drift_not_a_crash(monkeypatch):
    import verl.utils.rollout_trace as rollout_trace

    def needs_a_name(name):  # a decorator that now takes arguments
        raise TypeError("rollout_trace_op() needs name=")

    monkeypatch.setattr(rollout_trace, "rollout_trace_op", needs_a_name)
    assert check(_contract("verl.utils.rollout_trace:rollout_trace_op")).problems == [
        "behaviour probe rollout_trace_op_keeps_an_async_method raised TypeError: rollout_trace_op() needs name="]


def test_a_config_key_gone_is_reported():
    sft_config = _contract("verl.trainer.config:sft_trainer_engine.yaml")
    assert check(sft_config).ok
    renamed = dataclasses.replace(sft_config, config_keys=("data.pad_mode", "data.padding_mode"))
    assert check(renamed).problems == ["config key 'data.padding_mode' is gone ('padding_mode' missing)"]
    moved = dataclasses.replace(sft_config, target="verl.trainer.config:sft_trainer.yaml")
    (problem,) = check(moved).problems
    assert problem.startswith("cannot read sft_trainer.yaml (LookupError: verl.trainer.config: no file"), problem

    rollout = _contract("verl.workers.config.rollout:RolloutConfig")
    assert check(rollout).ok
    assert check(dataclasses.replace(rollout, config_keys=("custom", "agent.loop_config_path"))).problems == [
        "config key 'agent.loop_config_path' is gone ('loop_config_path' is not a field of RolloutConfig.agent)"]


def test_megatrons_loss_call_is_checked_without_importing_megatron():
    import importlib.util

    assert importlib.util.find_spec("megatron") is None  # the point: this install cannot import verl's engine
    real = _contract(MEGATRON_LOSS_CALL)
    assert real.static and check(real).ok
    reworded = dataclasses.replace(real, source_has=("loss_function(model_output, data)",))
    assert check(reworded).problems == ["source no longer contains 'loss_function(model_output, data)'"]
    renamed = dataclasses.replace(real, params=("output", "micro_batch"))
    (problem,) = check(renamed).problems
    assert problem.startswith("parameters (self, output, data, forward_only, loss_function") and \
        problem.endswith("have no 'micro_batch'"), problem
    gone = dataclasses.replace(real, target=MEGATRON_LOSS_CALL.replace("postprocess_micro_batch_func", "postprocess"))
    assert check(gone).problems == ["verl.workers.engine.megatron.transformer_impl:MegatronEngineWithLMHead has no "
                                    "attribute 'postprocess' (read from its source, not imported)"]


def test_a_contract_names_a_probe_that_exists_and_static_ones_check_only_text():
    assert check(dataclasses.replace(_contract(CALL_TOOL), probe="no_such_probe")).problems == [
        "no behaviour probe named 'no_such_probe' in agentic_verl.contracts.probes"]
    with pytest.raises(ValueError, match="a static contract checks params and source_has only"):
        dataclasses.replace(_contract(MEGATRON_LOSS_CALL), probe="call_tool_returns_response_reward_metrics")
