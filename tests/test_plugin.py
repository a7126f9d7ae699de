"""verl must register our components by itself: a fresh interpreter that imports only `verl`."""

import json
import subprocess
import sys

import pytest

from agentic_verl.plugin import COMPONENTS

# Reads verl's own registries after `import verl`; nothing from agentic_verl is imported by hand.
_PROBE = """
import json, verl
from verl.experimental.agent_loop.agent_loop import _agent_loop_registry
from verl.plugin.platform.platform_manager import PlatformRegistry
from verl.workers.rollout.replica import RolloutReplicaRegistry
from verl.experimental.reward_loop.reward_manager.registry import REWARD_MANAGER
from verl.trainer.ppo.core_algos import ADV_ESTIMATOR_REGISTRY, POLICY_LOSS_REGISTRY
print(json.dumps({
    "agent_loop": sorted(_agent_loop_registry),
    "platform": sorted(PlatformRegistry.registered_names()),
    "rollout": sorted(RolloutReplicaRegistry._registry),
    "reward_manager": sorted(REWARD_MANAGER),
    "adv_estimator": sorted(ADV_ESTIMATOR_REGISTRY),
    "policy_loss": sorted(POLICY_LOSS_REGISTRY),
}))
"""


def _registries_after_import_verl(extra_env=None):
    import os

    env = {**os.environ, **(extra_env or {})}
    proc = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_import_verl_alone_registers_every_component():
    assert COMPONENTS, "the plugin declares no components"
    registries = _registries_after_import_verl()
    missing = [f"{c.kind}:{c.name}" for c in COMPONENTS if c.name not in registries[c.kind]]
    assert not missing, f"not registered by `import verl`: {missing}"


def test_plugin_can_be_switched_off_with_verls_own_variable():
    registries = _registries_after_import_verl({"VERL_USE_EXTERNAL_PLUGINS": "none"})
    ours = [c for c in COMPONENTS if c.kind == "agent_loop" and c.name in registries["agent_loop"]]
    assert not ours



@pytest.mark.parametrize("module", sorted({c.module for c in COMPONENTS if c.kind == "agent_loop"}))
def test_importing_a_loop_module_first_registers_every_loop(module):
    """A process whose first import is one of our loop modules (a user's script, an in-process eval) imports verl
    half-way through that module, and verl loads the plugin then: no loop may be lost to that import order (an
    import cycle between two loop modules shows as a plugin import error)."""
    import os

    probe = ("import importlib, json, sys; importlib.import_module(sys.argv[1]); import verl; "
             "from agentic_verl import plugin; "
             "from verl.experimental.agent_loop.agent_loop import _agent_loop_registry; "
             "print(json.dumps({'loops': sorted(_agent_loop_registry), 'errors': plugin.IMPORT_ERRORS}))")
    proc = subprocess.run([sys.executable, "-c", probe, module], capture_output=True, text=True,
                          env=dict(os.environ), timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert seen["errors"] == {}
    loops = {c.name for c in COMPONENTS if c.kind == "agent_loop"}
    assert loops <= set(seen["loops"]), sorted(loops - set(seen["loops"]))
