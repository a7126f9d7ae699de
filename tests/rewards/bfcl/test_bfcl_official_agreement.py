"""Live agreement with the official BFCL checker on a sample of gold and mutated outputs.

The official checker (bfcl-eval) cannot be imported in the main venv (its dependencies pin numpy 1.26 and pull
every vendor SDK; its Java/JavaScript decoding needs tree-sitter), so it runs in `.venv-bfcl` through
scripts/agreement/_bfcl_official_runner.py. This test carries the `bfcl_official` marker and is skipped when that venv
does not exist; create it with `make bfcl-venv` (needs PyPI once). The full comparison is
`scripts/agreement/bfcl_agreement.py`.
"""

from __future__ import annotations

import random
import sys
from collections import Counter
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "scripts" / "agreement"))

import _bfcl_official  # noqa: E402
from _bfcl_cases import all_cases  # noqa: E402
from bfcl_agreement import official_input  # noqa: E402

from agentic_verl.rewards.bfcl import ast_match  # noqa: E402

pytestmark = [
    pytest.mark.bfcl_official,
    pytest.mark.skipif(not _bfcl_official.available(), reason="no .venv-bfcl (run `make bfcl-venv`)"),
]


def test_verdicts_match_the_official_checker_on_a_sample():
    cases = all_cases(seed=7, per_question=6)
    by_category: dict[str, list] = {}
    for case in cases:
        by_category.setdefault(case["category"], []).append(case)
    rng = random.Random(7)
    sample = [case for group in by_category.values() for case in rng.sample(group, min(60, len(group)))]
    official = _bfcl_official.official_verdicts([official_input(case) for case in sample])
    outcome = Counter()
    mismatches = []
    for case, theirs in zip(sample, official, strict=True):
        args = (case["output"], case["functions"], case["possible_answer"], case["category"])
        if ast_match(*args)["valid"] == theirs["valid"]:
            outcome["agree", theirs["valid"]] += 1
        elif ast_match(*args, tree_sitter_recovery=True)["valid"] == theirs["valid"]:
            outcome["documented"] += 1  # tree-sitter's error recovery, documented (docs/bfcl.md)
        else:
            mismatches.append((case["id"], case["kind"], case["output"][:200], theirs))
    assert not mismatches, mismatches[:5]
    # the sample must exercise both verdicts, or agreement would mean little
    assert outcome["agree", True] > 100 and outcome["agree", False] > 100, outcome
