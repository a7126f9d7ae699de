"""Which parts of agentic_verl reach verl / vLLM through public hooks only, and which rely on internals, derived
from the contracts' `used_by` files (never written by hand): the README's sentence on public hooks and
docs/contracts.md's table are rendered from here, and tests/test_contracts.py checks both against it.

    >>> part_of("agentic_verl/cpu/platform.py").label
    'the CPU backend'
"""

from __future__ import annotations

from dataclasses import dataclass

from agentic_verl.contracts.checker import Contract
from agentic_verl.contracts.internals import CONTRACTS


@dataclass(frozen=True)
class Part:
    label: str  # how the README and docs/contracts.md name it
    paths: tuple[str, ...]  # our files, or folders ending in "/"; a file belongs to the first part naming it


PARTS: tuple[Part, ...] = (
    Part("the `bfcl_multi_turn` reward", ("agentic_verl/rewards/bfcl/multi_turn.py", "reward_fns/bfcl_multi_turn.py")),
    Part("the rewards except `bfcl_multi_turn`", ("agentic_verl/rewards/", "reward_fns/")),
    Part("the tools (`SearchTool`, `McpTool`, `PythonTool`) and the tool config check", ("agentic_verl/tools/",)),
    Part("`eval bfcl --mode fc` (verl's tool parsers)", ("agentic_verl/eval/bfcl_eval.py",)),
    Part("the registrations", ("agentic_verl/plugin.py", "agentic_verl/registry.py")),
    Part("the `agentic_trace` reward manager", ("agentic_verl/agent_loops/trace_reward.py",)),
    Part("the training metrics (`AgentMetricsReplayBuffer`)", ("agentic_verl/agent_loops/trace_sampler.py",)),
    Part("in-process evaluation and SFT data generation", ("agentic_verl/agent_loops/in_process.py",
                                                           "agentic_verl/generation/")),
    Part("the agent loops", ("agentic_verl/agent_loops/",)),
    Part("the `gigpo` advantage estimator", ("agentic_verl/training/gigpo.py",)),
    Part("the SFT trainer and its data (SRML, V2P losses)", ("agentic_verl/training/", "agentic_verl/data/")),
    Part("the ReTool miniature's task (`make demo-retool`)", ("agentic_verl/demo/",)),
    Part("`doctor`", ("agentic_verl/commands/doctor.py",)),
    Part("the CPU backend", ("agentic_verl/cpu/",)),
)


def part_of(path: str) -> Part | None:
    for part in PARTS:
        if any(path == p or (p.endswith("/") and path.startswith(p)) for p in part.paths):
            return part
    return None


def contracts_of(part: Part, contracts=CONTRACTS) -> list[Contract]:
    """The contracts some file of `part` relies on."""
    return [c for c in contracts if any(part_of(path) == part for path in c.used_by)]


def public_only(contracts=CONTRACTS) -> list[Part]:
    return [part for part in PARTS if all(c.public for c in contracts_of(part, contracts))]


def relying_on_internals(contracts=CONTRACTS) -> list[Part]:
    return [part for part in PARTS if any(not c.public for c in contracts_of(part, contracts))]


def _enumerate(labels: list[str]) -> str:
    return labels[0] if len(labels) == 1 else ", ".join(labels[:-1]) + " and " + labels[-1]


def readme_sentence(contracts=CONTRACTS) -> str:
    """The README's sentence on public hooks (README.md, "Not everything fits verl's public hooks")."""
    public = _enumerate([p.label for p in public_only(contracts)])
    internal = _enumerate([p.label for p in relying_on_internals(contracts)])
    return (f"Not everything fits verl's public hooks: {public} use only them, but {internal} also rely on verl "
            "and vLLM internals.")


def markdown_table(contracts=CONTRACTS) -> str:
    """docs/contracts.md's "What uses public hooks, what relies on internals" table."""
    rows = ["| Part | public hooks it uses | internals it relies on |", "|---|---|---|"]
    for part in PARTS:
        used = contracts_of(part, contracts)
        hooks = ", ".join(f"`{_short(c.target)}`" for c in used if c.public) or "—"
        internals = ", ".join(f"`{_short(c.target)}`" for c in used if not c.public) or "none"
        rows.append(f"| {part.label} | {hooks} | {internals} |")
    return "\n".join(rows)


def _short(target: str) -> str:
    """`Class.method` (or the file / module name) for the table's cells; the full names are in the tables below."""
    module, _, path = target.partition(":")
    return path or module.rsplit(".", 1)[-1]
