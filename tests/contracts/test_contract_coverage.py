"""The contracts list is complete and the texts derived from it are current:

- every verl / vLLM / TransferQueue name our code imports (`from verl... import X`, `import verl.x`) has a contract
  on it (or on an attribute of it) that names the importing file in `used_by`;
- every `used_by` file belongs to a part of agentic_verl (contracts.surface.PARTS);
- the README's sentence on public hooks and docs/contracts.md's generated tables are what the contracts say.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
from pathlib import Path

from agentic_verl.contracts import CONTRACTS, surface
from agentic_verl.contracts.checker import resolve
from agentic_verl.contracts.docs_tables import render

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("verl", "vllm", "transfer_queue")  # theirs: anything imported from them needs a contract
OUR_CODE = ("agentic_verl", "reward_fns")
NOT_OURS_TO_LIST = {"agentic_verl/contracts"}  # the checker itself (its probes import what they check)


def imported_names(path: Path) -> list[tuple[str, str | None, int]]:
    """(module, name or None for `import module`, line) of every import of PACKAGES in one file."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module.split(".")[0] in PACKAGES:
            found += [(node.module, alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.Import):
            found += [(alias.name, None, node.lineno) for alias in node.names if alias.name.split(".")[0] in PACKAGES]
    return found


def _our_files() -> list[Path]:
    files = [p for top in OUR_CODE for p in (ROOT / top).rglob("*.py")]
    return [p for p in files if not any(str(p.relative_to(ROOT)).startswith(skip) for skip in NOT_OURS_TO_LIST)]


def _objects_of(target: str) -> list:
    """The module a contract names and each object along its attribute path (what an import of it can bind)."""
    module, _, path = target.partition(":")
    objects = [importlib.import_module(module)]
    for depth, _part in enumerate(path.split(".") if path else ()):
        objects.append(resolve(f"{module}:{'.'.join(path.split('.')[:depth + 1])}"))
    return objects


def test_every_verl_and_vllm_name_we_import_has_a_contract_naming_the_file():
    by_file: dict[str, list] = {}
    for contract in CONTRACTS:
        if contract.static or contract.kind == "config":
            continue  # not importable here / not a Python name
        objects = _objects_of(contract.target)
        for path in contract.used_by:
            by_file.setdefault(path, []).extend(objects)
    unlisted = []
    for file in _our_files():
        rel = str(file.relative_to(ROOT))
        for module, name, line in imported_names(file):
            if name is None and "." not in module:
                continue  # `import verl`: the version check, nothing of verl's API
            imported = importlib.import_module(module) if name is None else getattr(importlib.import_module(module),
                                                                                  name)
            if not any(imported is obj for obj in by_file.get(rel, [])):
                unlisted.append(f"{rel}:{line} imports {module}{'' if name is None else ':' + name}")
    assert not unlisted, ("add a contract (agentic_verl/contracts/internals.py) naming the file in used_by for:\n"
                          + "\n".join(unlisted))


def test_the_import_scan_sees_every_form_we_use(tmp_path):
    source = tmp_path / "m.py"
    source.write_text("import verl\nimport verl.utils.model as vm\nfrom verl.utils import tensordict_utils as tu\n"
                      "def f():\n    from vllm import SamplingParams\nfrom .local import x\nimport json\n")
    assert imported_names(source) == [("verl", None, 1), ("verl.utils.model", None, 2),
                                      ("verl.utils", "tensordict_utils", 3), ("vllm", "SamplingParams", 5)]


def test_every_file_that_relies_on_a_contract_belongs_to_a_part():
    orphans = sorted({path for c in CONTRACTS for path in c.used_by if surface.part_of(path) is None})
    assert not orphans, f"add these files to a Part in agentic_verl/contracts/surface.py: {orphans}"
    missing = sorted({path for c in CONTRACTS for path in c.used_by if not (ROOT / path).is_file()})
    assert not missing, f"contracts name files that do not exist: {missing}"


def test_the_readme_sentence_on_public_hooks_is_what_the_contracts_say():
    readme = " ".join((ROOT / "README.md").read_text().split())
    expected = surface.readme_sentence()
    assert expected in readme, f"README.md's paragraph on public hooks must start with:\n{expected}"


def test_the_readme_sentence_follows_a_contract_change():
    # a part that relies on no internal is named as public-only; one internal contract moves it to the other list
    search_tool = next(p for p in surface.PARTS if p.paths == ("agentic_verl/tools/",))
    public_tools = [dataclasses.replace(c, public=True)
                    if any(path.startswith("agentic_verl/tools/") for path in c.used_by) else c for c in CONTRACTS]
    assert search_tool in surface.public_only(public_tools)
    assert search_tool not in surface.public_only(CONTRACTS)
    assert f"{search_tool.label} use only them" not in surface.readme_sentence(CONTRACTS)


def test_docs_tables_are_generated_from_the_contracts():
    page = (ROOT / "docs" / "contracts.md").read_text()
    assert render(page) == page, "docs/contracts.md is stale: python -m agentic_verl.contracts.docs_tables"
    for contract in CONTRACTS:
        assert f"`{contract.target}`" in page
