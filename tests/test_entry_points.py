"""Outside extensions by name: a tiny external package, pip-installed into a temporary folder (never into the venv),
used from a fresh process started in another working directory, through verl's own loaders.

- its reward by name in a composition YAML, through reward_fns/composed.py as verl loads it and through verl's
  naive reward manager (the code of verl's reward workers);
- its agent loop by name in verl's registry, after a plain `import verl`;
- its tool through verl's `initialize_tools_from_config`, and a tool YAML whose module is not importable refused by
  `check_tool_config` with the fix, not verl's `'NoneType' object has no attribute 'loader'`;
- the clear errors: a name declared twice (ours and an entry point, two entry points), an entry point that fails to
  import (with its distribution's name), and an unknown name (listing the entry-point names).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _pyproject(name: str, version: str, package: str, entry_points: str) -> str:
    """A setuptools pyproject.toml for distribution `name` shipping `package`; `entry_points` holds its
    [project.entry-points."..."] tables, indented as the rest (the files are dedented when written)."""
    return f"""\
        [build-system]
        requires = ["setuptools>=61"]
        build-backend = "setuptools.build_meta"

        [project]
        name = "{name}"
        version = "{version}"
{entry_points}
        [tool.setuptools]
        packages = ["{package}"]
        """


GOOD_PACKAGE = {
    "pyproject.toml": _pyproject("av-test-extension", "0.3", "av_test_ext", """
        [project.entry-points."agentic_verl.rewards"]
        shouting = "av_test_ext.rewards:shouting"

        [project.entry-points."agentic_verl.agent_loops"]
        av_test_echo = "av_test_ext.loops:EchoLoop"
        """),
    "av_test_ext/__init__.py": "",
    "av_test_ext/rewards.py": """\
        def shouting(solution_str, ground_truth, extra_info=None, *, bonus: float = 0.0, **kwargs):
            text = solution_str.strip()
            if not text:
                return {"score": 0.0, "error_type": "shouting:empty"}
            return {"score": (1.0 if text.isupper() else 0.0) + bonus, "error_type": None}
        """,
    "av_test_ext/loops.py": """\
        from verl.experimental.agent_loop.agent_loop import AgentLoopBase


        class EchoLoop(AgentLoopBase):
            async def run(self, sampling_params, **row):
                raise NotImplementedError
        """,
    "av_test_ext/tools.py": """\
        from verl.tools.base_tool import BaseTool
        from verl.tools.schemas import OpenAIFunctionToolSchema, ToolResponse


        class Echo(BaseTool):
            def __init__(self, config, tool_schema=None):
                schema = OpenAIFunctionToolSchema.model_validate({"type": "function", "function": {
                    "name": "echo", "description": "echo the text",
                    "parameters": {"type": "object", "required": ["text"],
                                   "properties": {"text": {"type": "string"}}}}})
                super().__init__(config, tool_schema or schema)

            async def execute(self, instance_id, parameters, **kwargs):
                return ToolResponse(text=str(parameters.get("text"))), 0.0, {}
        """,
}

# Installed into a folder of its own: it declares a name of ours, a name the good package declares, and one that
# cannot import.
BAD_PACKAGE = {
    "pyproject.toml": _pyproject("av-test-clashing", "1.2", "av_test_clash", """
        [project.entry-points."agentic_verl.rewards"]
        qa_em = "av_test_clash:other"
        shouting = "av_test_clash:other"
        broken = "av_test_clash.missing:fn"
        """),
    "av_test_clash/__init__.py": """\
        def other(solution_str, ground_truth, extra_info=None, **kwargs):
            return {"score": 0.5, "error_type": None}
        """,
}

# Run in a fresh interpreter, in an empty folder, with only the install target on PYTHONPATH.
USE_GOOD = """\
import asyncio, json, os, sys
import numpy as np
import torch
from omegaconf import OmegaConf

repo, yaml_dir = sys.argv[1], sys.argv[2]
import verl  # every Ray worker starts like this: our plugin and the entry points, nothing of the user's imported
from verl.experimental.agent_loop.agent_loop import _agent_loop_registry
from verl.experimental.reward_loop.reward_manager import get_reward_manager_cls
from verl.tools.tool_registry import initialize_tools_from_config
from verl.trainer.ppo.reward import get_custom_reward_fn

out = {"user_modules_before": sorted(m for m in sys.modules if m.startswith("av_test"))}
config = OmegaConf.create({"reward": {"custom_reward_function": {
    "path": os.path.join(repo, "reward_fns", "composed.py"), "name": "compute_score",
    "reward_kwargs": {"config": os.path.join(yaml_dir, "shout.yaml")}}}})
compute_score = get_custom_reward_fn(config)
out["direct"] = compute_score(data_source="toy", solution_str="PARIS", ground_truth=None, extra_info={})


class Tokenizer:  # the manager only decodes; a character tokenizer keeps this process light
    def decode(self, ids, skip_special_tokens=True):
        return "".join(chr(int(i)) for i in ids)


async def manager_scores():
    manager = get_reward_manager_cls("naive")(config=config, tokenizer=Tokenizer(), compute_score=compute_score)
    scores = []
    for text in ("LOUD", "quiet"):
        prompts, responses = torch.tensor([[ord("q")]]), torch.tensor([[ord(c) for c in text]])
        ids = torch.cat([prompts, responses], dim=1)
        reward_model = np.empty(1, dtype=object)
        reward_model[0] = {"ground_truth": None}
        data = verl.DataProto.from_dict(
            tensors={"prompts": prompts, "responses": responses, "input_ids": ids,
                     "attention_mask": torch.ones_like(ids)},
            non_tensors={"data_source": np.array(["toy"], dtype=object), "reward_model": reward_model,
                         "extra_info": np.array([{}], dtype=object)})
        result = await manager.run_single(data)
        scores.append([result["reward_score"], result["reward_extra_info"]["shouting"]])
    return scores


out["manager"] = asyncio.run(manager_scores())
out["loop"] = dict(_agent_loop_registry.get("av_test_echo") or {})
[tool] = initialize_tools_from_config(os.path.join(yaml_dir, "tools.yaml"))
out["tool"] = type(tool).__module__ + "." + type(tool).__name__
from agentic_verl.commands.doctor import probe_registries

out["doctor"] = probe_registries()["entry_points"]
print(json.dumps(out))
"""

USE_BAD = """\
import json
from agentic_verl.rewards import REWARDS

out = {}
for name in ("qa_em", "shouting", "broken", "nothing_by_this_name"):
    try:
        REWARDS.get(name)
        out[name] = "found"
    except KeyError as exc:
        out[name] = str(exc)
print(json.dumps(out))
"""


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(textwrap.dedent(text))
    return root


def _pip_install(source: Path, target: Path) -> None:
    """Into `target` only (PYTHONPATH makes it visible to one subprocess); the venv's setuptools builds it, offline."""
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                    "--no-index", "--target", str(target), str(source)], check=True, timeout=300)


def _fresh_process(code: str, cwd: Path, pythonpath: list[Path], *args: str) -> dict:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(map(str, pythonpath))}
    proc = subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    root = tmp_path_factory.mktemp("entry_points")
    good, bad = root / "site_good", root / "site_bad"
    _pip_install(_write(root / "src_good", GOOD_PACKAGE), good)
    _pip_install(_write(root / "src_bad", BAD_PACKAGE), bad)
    yamls = _write(root / "configs", {
        "shout.yaml": """\
            components:
              - name: shouting          # the entry point's name, nothing imported beforehand
                kwargs: {bonus: 0.5}
              - name: format
                weight: 0.0
            """,
        "tools.yaml": """\
            tools:
              - class_name: av_test_ext.tools.Echo
                config: {type: native}
            """,
    })
    elsewhere = root / "elsewhere"  # the working directory: neither the repo, nor the package, nor the YAMLs
    elsewhere.mkdir()
    return {"good": good, "bad": bad, "yamls": yamls, "cwd": elsewhere}


@pytest.fixture(scope="module")
def used_good(installed):
    return _fresh_process(USE_GOOD, installed["cwd"], [installed["good"]], str(REPO), str(installed["yamls"]))


def test_the_package_is_not_in_the_venv():
    import importlib.util

    assert importlib.util.find_spec("av_test_ext") is None  # installed into a temporary folder only


def test_a_reward_by_its_entry_point_name_through_verls_loader_and_reward_manager(used_good):
    assert used_good["user_modules_before"] == []  # `import verl` imported nothing of the package: found lazily
    assert used_good["direct"]["score"] == 1.5 and used_good["direct"]["shouting"] == 1.5
    assert used_good["direct"]["reward/shouting/exceptions"] == 0.0
    assert used_good["manager"] == [[1.5, 1.5], [0.5, 0.5]]


def test_an_agent_loop_by_its_entry_point_name_in_verls_registry(used_good):
    assert used_good["loop"] == {"_target_": "av_test_ext.loops.EchoLoop"}


def test_doctor_lists_and_imports_the_entry_point_components(used_good):
    listed = {(entry["kind"], entry["name"]): entry for entry in used_good["doctor"]}
    assert set(listed) == {("reward", "shouting"), ("agent_loop", "av_test_echo")}
    assert all(entry["ok"] and "av-test-extension 0.3" in entry["origin"] for entry in listed.values())


def test_a_tool_of_an_installed_package_loads_from_any_working_directory(used_good):
    assert used_good["tool"] == "av_test_ext.tools.Echo"


def test_duplicate_and_broken_entry_points_are_clear_errors(installed):
    out = _fresh_process(USE_BAD, installed["cwd"], [installed["good"], installed["bad"]])
    assert "reward 'qa_em' is registered twice" in out["qa_em"]
    assert "agentic_verl.rewards.qa.qa_em" in out["qa_em"] and "av-test-clashing 1.2" in out["qa_em"]
    assert "reward 'shouting' is declared by 2 entry points" in out["shouting"]
    assert "av-test-extension 0.3" in out["shouting"] and "av-test-clashing 1.2" in out["shouting"]
    assert "cannot import the entry point 'broken = av_test_clash.missing:fn'" in out["broken"]
    assert "of distribution av-test-clashing 1.2: ModuleNotFoundError" in out["broken"]
    unknown = out["nothing_by_this_name"]
    assert "unknown reward 'nothing_by_this_name'" in unknown and "qa_em" in unknown
    assert "entry points (agentic_verl.rewards): broken (av-test-clashing 1.2)" in unknown
    assert "shouting (av-test-extension 0.3)" in unknown


def _declare(site: Path, dist: str, lines: str, group: str = "agentic_verl.agent_loops") -> None:
    """A distribution's metadata as an installer writes it: enough for importlib.metadata to list its entry points."""
    info = site / f"{dist.replace('-', '_')}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[{group}]\n{lines}\n")


def test_agent_loop_entry_points_that_clash_are_refused_loudly(tmp_path, monkeypatch):
    from verl.experimental.agent_loop.agent_loop import _agent_loop_registry

    from agentic_verl import plugin

    _declare(tmp_path, "av-test-one", "rag_r1 = one.loops:Mine\ntwin = one.loops:Twin")
    _declare(tmp_path, "av-test-two", "twin = two.loops:Twin")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(plugin, "IMPORT_ERRORS", {})
    before = dict(_agent_loop_registry)
    plugin.register_entry_point_loops()
    assert dict(_agent_loop_registry) == before  # ours kept, neither twin registered
    errors = plugin.IMPORT_ERRORS
    assert "already exists" in errors["agentic_verl.agent_loops:rag_r1"]
    assert "'rag_r1 = one.loops:Mine' of distribution av-test-one 0.1" in errors["agentic_verl.agent_loops:rag_r1"]
    assert "declared by 2 entry points" in errors["agentic_verl.agent_loops:twin"]


def test_a_tool_module_that_is_not_importable_is_refused_with_the_fix(tmp_path, monkeypatch):
    from agentic_verl.tools.config import ToolConfigError, check_tool_config

    (tmp_path / "next_to_yaml_tools.py").write_text("class Echo:\n    pass\n")
    yaml = tmp_path / "tools.yaml"
    yaml.write_text("tools:\n  - class_name: next_to_yaml_tools.Echo\n    config: {type: native}\n")
    monkeypatch.chdir(REPO)  # another working directory than the YAML's
    with pytest.raises(ToolConfigError) as info:
        check_tool_config(yaml)
    message = str(info.value)
    assert "no module 'next_to_yaml_tools' on this process's sys.path" in message
    assert f"add PYTHONPATH={tmp_path}" in message


@pytest.mark.parametrize("entry, message", [
    ("- class_name: agentic_verl.tools.serch.SearchTool\n  config: {type: native}", "ModuleNotFoundError"),
    ("- class_name: agentic_verl.tools.search.Nope\n  config: {type: native}", "has no attribute 'Nope'"),
    ("- class_name: agentic_verl.tools.config.ToolConfigError\n  config: {type: native}", "not a subclass"),
    ("- class_name: SearchTool\n  config: {type: native}", "dotted"),
    ("- class_name: agentic_verl.tools.search.SearchTool\n  config: {type: mcp}", "type: native"),
    ("- class_name: agentic_verl.tools.search.SearchTool\n  config: {type: native}\n  tool_shema: {}", "tool_shema"),
])
def test_bad_tool_entries_are_named(tmp_path, entry, message):
    from agentic_verl.tools.config import ToolConfigError, check_tool_config

    yaml = tmp_path / "tools.yaml"
    yaml.write_text("tools:\n" + textwrap.indent(entry, "  ") + "\n")
    with pytest.raises(ToolConfigError, match=message):
        check_tool_config(yaml)


def test_the_shipped_tool_yamls_load_from_another_working_directory(tmp_path, monkeypatch):
    from verl.tools.tool_registry import initialize_tools_from_config

    from agentic_verl.tools.config import check_tool_config

    monkeypatch.chdir(tmp_path)
    for yaml in sorted((REPO / "tools").glob("*.yaml")):
        classes = check_tool_config(yaml)
        assert [type(tool) for tool in initialize_tools_from_config(str(yaml))] == classes


def test_doctor_fails_on_a_broken_outside_component(tmp_path, monkeypatch):
    from agentic_verl import plugin
    from agentic_verl.commands.doctor import _registration_checks
    from agentic_verl.rewards import REWARDS

    _declare(tmp_path, "av-test-broken", "broken_reward = nowhere_xyz:fn", group="agentic_verl.rewards")
    monkeypatch.syspath_prepend(str(tmp_path))
    REWARDS.refresh()
    try:
        entries = plugin.check_entry_points()
    finally:
        monkeypatch.undo()
        REWARDS.refresh()
    [check] = [c for c in _registration_checks({"plugin_loaded": True, "import_errors": {}, "components": [],
                                                "entry_points": entries}) if c.name == "reward broken_reward"]
    assert not check.ok and check.required
    assert "of distribution av-test-broken 0.1: ModuleNotFoundError: No module named 'nowhere_xyz'" in check.detail
