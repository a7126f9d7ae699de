"""The verl / vLLM symbols agentic_verl relies on, and a check of each against the installed packages.

    from agentic_verl.contracts import check_contracts
    results = check_contracts()            # one Result per Contract in internals.CONTRACTS
    print(format_report(results))          # the drifted ones, readable

Run by tests/test_contracts.py and `agentic-verl doctor`; explained in docs/contracts.md.
"""

from __future__ import annotations

from agentic_verl.contracts.checker import Contract, Result, check, check_all, format_report, installed_versions
from agentic_verl.contracts.internals import CONTRACTS


def check_contracts(contracts=CONTRACTS) -> list[Result]:
    """Check every contract (imports verl, and vLLM when installed: ~15 s here)."""
    return check_all(contracts)


__all__ = ["CONTRACTS", "Contract", "Result", "check", "check_contracts", "format_report", "installed_versions"]
