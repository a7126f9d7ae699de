"""The verl / vLLM symbols agentic_verl relies on, and a check of each against the installed packages.

    from agentic_verl.contracts import check_contracts
    results = check_contracts()            # one Result per Contract in internals.CONTRACTS
    print(format_report(results))          # the drifted ones, readable

Each contract is checked for what we rely on: the symbol, its signature, the fields of a class we build, the config
keys we set, texts we match in its source, and a behaviour probe (`probes.py`) that runs it on CPU. `surface.py`
derives which of our parts use public hooks only (the README's sentence, docs/contracts.md's table) from the
contracts. Run by tests/test_contracts.py, tests/contracts/ and `agentic-verl doctor`; explained in docs/contracts.md.
"""

from __future__ import annotations

from agentic_verl.contracts.checker import Contract, Result, check, check_all, format_report, installed_versions
from agentic_verl.contracts.internals import CONTRACTS, GROUPS


def check_contracts(contracts=CONTRACTS) -> list[Result]:
    """Check every contract (imports verl, and vLLM when installed: ~15 s here)."""
    return check_all(contracts)


__all__ = ["CONTRACTS", "GROUPS", "Contract", "Result", "check", "check_contracts", "format_report", "installed_versions"]
