"""The `verl.plugins` entry point: importing this module registers all our components in verl.

verl imports it during `import verl` in every process (driver and Ray workers) and silently skips
a plugin that raises, so each component is imported separately and a failure is logged as a
WARNING naming the component; `agentic-verl doctor` turns such failures into a non-zero exit.
"""

from __future__ import annotations

import importlib
import logging
from dataclasses import dataclass

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
)

# Filled by register_all(): module -> "ExceptionType: message" for components that failed to import.
IMPORT_ERRORS: dict[str, str] = {}


def register_all() -> None:
    for module in dict.fromkeys(component.module for component in COMPONENTS):
        try:
            importlib.import_module(module)
        except Exception as exc:  # verl would swallow it; say it loudly instead
            IMPORT_ERRORS[module] = f"{type(exc).__name__}: {exc}"
            logger.warning("agentic_verl: could not register components from %s: %s", module, IMPORT_ERRORS[module])


register_all()
