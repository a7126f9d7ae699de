"""The verl/vLLM symbols we rely on (agentic_verl.contracts) against the installed verl and vLLM, and proof that the
check fails, readably, when one of them drifts: a renamed symbol, a renamed parameter, a reworded text (here), a new
required field, a changed return shape, a gone config key, a changed behaviour (tests/contracts/).

The first check imports verl, vLLM and our adapters (~15-25 s here); the rest reuse them."""

from __future__ import annotations

import dataclasses
import doctest
from pathlib import Path

import pytest

from agentic_verl.commands import doctor
from agentic_verl.contracts import CONTRACTS, Contract, check, check_contracts, checker, format_report

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs" / "contracts.md"


def _contract(target: str) -> Contract:
    return next(c for c in CONTRACTS if c.target == target)


def test_installed_verl_and_vllm_meet_every_contract():
    results = check_contracts()
    assert all(r.checked for r in results), [r.contract.target for r in results if not r.checked]  # vLLM too
    assert all(r.ok for r in results), format_report(results)


def test_a_removed_private_method_is_reported_with_the_file_that_needs_it(monkeypatch):
    from verl.trainer.sft_trainer import SFTTrainer

    monkeypatch.delattr(SFTTrainer, "_build_engine")  # as a verl release that renames it would
    results = check_contracts()
    drifted = {r.contract.target: r.problems for r in results if not r.ok}
    assert set(drifted) == {"verl.trainer.sft_trainer:SFTTrainer", "verl.trainer.sft_trainer:SFTTrainer._build_engine"}
    assert drifted["verl.trainer.sft_trainer:SFTTrainer._build_engine"] == [
        "verl.trainer.sft_trainer:SFTTrainer has no attribute '_build_engine'"]
    # our override would silently become a method nobody calls: the subclass rule catches it
    assert drifted["verl.trainer.sft_trainer:SFTTrainer"] == [
        "agentic_verl.training.sft_trainer:LossSFTTrainer._build_engine overrides nothing: "
        "SFTTrainer._build_engine is gone"]
    report = format_report(results)
    assert report.startswith(f"2 of {len(CONTRACTS)} verl/vLLM contracts drifted (verl "), report
    assert ("- verl.trainer.sft_trainer:SFTTrainer._build_engine  (used by agentic_verl/training/sft_trainer.py)\n"
            "    verl.trainer.sft_trainer:SFTTrainer has no attribute '_build_engine'\n"
            "    we rely on: builds self.training_client") in report


def test_a_renamed_function_a_renamed_parameter_and_a_missing_module(monkeypatch):
    import verl.utils.distributed
    from verl.workers.engine.fsdp.transformer_impl import FSDPEngineWithLMHead

    monkeypatch.delattr(verl.utils.distributed, "initialize_global_process_group_ray")
    monkeypatch.setattr(FSDPEngineWithLMHead, "prepare_model_outputs",
                        lambda self, output, output_args, micro_batch, logits_fn: None)
    drifted = {r.contract.target: r.problems for r in check_contracts() if not r.ok}
    assert drifted.pop("verl.utils.distributed:initialize_global_process_group_ray") == [
        "module verl.utils.distributed has no attribute 'initialize_global_process_group_ray'"]
    (problem,) = drifted.pop("verl.workers.engine.fsdp.transformer_impl:FSDPEngineWithLMHead.prepare_model_outputs")
    assert problem.startswith("signature (self, output, output_args, micro_batch, logits_fn) has no parameter(s) "
                              "'logits_processor_func'"), problem
    assert not drifted, drifted

    gone = check(dataclasses.replace(_contract("verl.trainer.sft_trainer:SFTTrainer._build_engine"),
                                     target="verl.trainer.sft_trainer_v2:SFTTrainer._build_engine"))
    assert gone.problems == ["cannot import verl.trainer.sft_trainer_v2 (ModuleNotFoundError: No module named "
                             "'verl.trainer.sft_trainer_v2')"]


def test_a_reworded_text_we_match_is_reported():
    # tool_agent_traced copies verl's early-stop conditions to tell a parse error from an early stop
    real = _contract("verl.experimental.agent_loop.tool_agent_loop:ToolAgentLoop._handle_generating_state")
    assert check(real).ok
    reworded = dataclasses.replace(real, source_has=("if len(agent_data.response_mask) > self.response_length:",))
    assert check(reworded).problems == [
        "source no longer contains 'if len(agent_data.response_mask) > self.response_length:'"]
    # whitespace does not matter (verl reformatting a line is not drift), tokens do
    spaced = "if self.max_user_turns   and\n agent_data.user_turns >= self.max_user_turns:"
    assert check(dataclasses.replace(real, source_has=(spaced,))).ok


def test_a_package_that_is_not_installed_is_not_checked_rather_than_drifted():
    result = check(Contract("no_such_package_xyz.mod:thing", relies_on="-", why="-", used_by=("x.py",)))
    assert not result.checked and result.ok


def test_doctor_runs_the_same_check(monkeypatch):
    import verl.utils.model

    report = doctor.probe_contracts()
    assert report["drift"] is None and report["checked"] == len(CONTRACTS) and not report["unchecked"]
    assert doctor._contracts_check(report).ok

    monkeypatch.delattr(verl.utils.model, "load_valuehead_model")
    check_ = doctor._contracts_check(doctor.probe_contracts())
    assert not check_.ok and check_.required
    assert "- verl.utils.model:load_valuehead_model  (used by agentic_verl/cpu/_verl_workarounds.py)" in check_.detail


def test_every_used_by_file_exists_and_every_contract_is_documented():
    root = Path(__file__).resolve().parents[1]
    missing = sorted({f for c in CONTRACTS for f in c.used_by if not (root / f).is_file()})
    assert not missing, f"contracts name files that do not exist: {missing}"
    assert len({c.target for c in CONTRACTS}) == len(CONTRACTS), "one contract per target"
    docs = DOCS.read_text()
    undocumented = [c.target for c in CONTRACTS if f"`{c.target}`" not in docs]
    assert not undocumented, f"docs/contracts.md does not list: {undocumented}"


def test_a_contract_must_name_its_kind_and_users():
    with pytest.raises(ValueError, match="unknown kind 'function'"):
        Contract("json:dumps", relies_on="-", why="-", used_by=("x.py",), kind="function")
    with pytest.raises(ValueError, match="used_by"):
        Contract("json:dumps", relies_on="-", why="-", used_by=())


def test_docstring_examples():
    from agentic_verl.contracts import shapes, sources, surface

    for module in (checker, shapes, sources, surface):
        assert doctest.testmod(module).failed == 0, module.__name__
