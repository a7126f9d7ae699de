"""The `verl.plugins` entry point: importing this module registers all our components in verl.

verl imports it during `import verl` in every process (driver and Ray workers) and silently skips
a plugin that raises, so each component is imported separately and a failure is logged as a
WARNING naming the component; `agentic-verl doctor` turns such failures into a non-zero exit.

It also makes the agent loops of other installed distributions known by name in every process: each
`name = module:Class` of the `agentic_verl.agent_loops` entry-point group becomes verl's agent loop `name`
(see register_entry_point_loops).
"""

from __future__ import annotations

import importlib
import logging
from dataclasses import dataclass

from agentic_verl.registry import Registry, entry_point_origin

logger = logging.getLogger("agentic_verl.plugin")


@dataclass(frozen=True)
class Component:
    kind: str  # agent_loop | platform | rollout | reward_manager | adv_estimator | policy_loss
    name: str  # the name verl's registry knows it by
    module: str  # importing this module registers it


# One line per registered component. doctor checks each one in a fresh interpreter.
COMPONENTS: tuple[Component, ...] = (
    Component("reward_manager", "agentic_trace", "agentic_verl.agent_loops.trace_reward"),
    Component("platform", "cpu", "agentic_verl.cpu.platform"),
    Component("agent_loop", "rag_r1", "agentic_verl.agent_loops.rag_r1"),
    Component("agent_loop", "function_call", "agentic_verl.agent_loops.function_call"),
    Component("agent_loop", "tool_agent_traced", "agentic_verl.agent_loops.tool_agent_traced"),
    Component("agent_loop", "gui_grounding", "agentic_verl.agent_loops.gui"),
    Component("agent_loop", "bfcl_multi_turn", "agentic_verl.agent_loops.bfcl_multi_turn"),
    Component("adv_estimator", "gigpo", "agentic_verl.training.gigpo"),
)

AGENT_LOOP_GROUP = "agentic_verl.agent_loops"

# Filled by register_all(): module (or entry point) -> "ExceptionType: message" for what failed to register.
IMPORT_ERRORS: dict[str, str] = {}


def register_all() -> None:
    for module in dict.fromkeys(component.module for component in COMPONENTS):
        try:
            importlib.import_module(module)
        except Exception as exc:  # verl would swallow it; say it loudly instead
            IMPORT_ERRORS[module] = f"{type(exc).__name__}: {exc}"
            logger.warning("agentic_verl: could not register components from %s: %s", module, IMPORT_ERRORS[module])
    register_entry_point_loops()


def register_entry_point_loops() -> None:
    """Register each loop of the agentic_verl.agent_loops group as verl's agent-loop YAML entries are registered
    (`{"_target_": "module.Class"}`), without importing it: verl imports it when a row uses the loop, and an import
    failure there is verl's error with its cause, not a warning at every `import verl`. verl's own `verl.plugins`
    group could import an outside module in every worker too, but verl drops that module's errors silently.
    A name that is already a loop (ours, verl's) or that two distributions declare is refused, loudly."""
    declared = Registry("agent loop", entry_point_group=AGENT_LOOP_GROUP).entry_points()
    if not declared:
        return
    from verl.experimental.agent_loop.agent_loop import _agent_loop_registry

    for name, found in declared.items():
        origins = "; ".join(entry_point_origin(entry_point) for entry_point in found)
        entry = {"_target_": f"{found[0].module}.{found[0].attr}"}
        if len(found) > 1:
            error = f"declared by {len(found)} entry points: {origins}; uninstall or rename all but one"
        elif _agent_loop_registry.get(name, entry) != entry:
            error = f"{origins} names an agent loop that already exists ({_agent_loop_registry[name]}); rename it"
        else:
            _agent_loop_registry[name] = entry
            continue
        IMPORT_ERRORS[f"{AGENT_LOOP_GROUP}:{name}"] = f"RegistryError: agent loop {name!r} {error}"
        logger.warning("agentic_verl: agent loop %r not registered: %s", name, error)


def check_entry_points() -> list[dict]:
    """Every installed outside component (our entry-point groups), imported: for `agentic-verl doctor`.
    One dict per name: kind, name, origin, ok, detail (the error that a run would meet)."""
    from agentic_verl.rewards import REWARDS

    found = []
    for name, declared in REWARDS.entry_points().items():
        try:
            REWARDS.get(name)
            ok, detail = True, "imports"
        except Exception as exc:  # RegistryError: duplicate or broken, the message says which
            ok, detail = False, str(exc)
        found.append({"kind": "reward", "name": name, "origin": entry_point_origin(declared[0]), "ok": ok,
                      "detail": detail})
    for name, declared in Registry("agent loop", entry_point_group=AGENT_LOOP_GROUP).entry_points().items():
        refused = IMPORT_ERRORS.get(f"{AGENT_LOOP_GROUP}:{name}")
        ok, detail = refused is None, refused or "imports"
        if ok:
            try:
                loop = declared[0].load()
            except Exception as exc:
                ok, detail = False, f"{type(exc).__name__}: {exc}"
            else:
                from verl.experimental.agent_loop.agent_loop import AgentLoopBase

                if not (isinstance(loop, type) and issubclass(loop, AgentLoopBase)):
                    ok, detail = False, f"{declared[0].value} is not an AgentLoopBase subclass"
        found.append({"kind": "agent_loop", "name": name, "origin": entry_point_origin(declared[0]), "ok": ok,
                      "detail": detail})
    return found


register_all()
