"""Agreement of our BFCL AST match (agentic_verl.rewards.bfcl) with the official bfcl-eval checker.

    .venv/bin/python benchmarks/bfcl_agreement.py [--per-question 12] [--seed 0] [--show 5]

Builds, for every question of the AST and relevance categories in bfcl_eval's data, the gold output (rendered
from the possible answers) and mutated outputs (wrong values, dropped/extra parameters, wrong names, type
changes, string case/punctuation variants, reordered/dropped parallel calls, fences, garbage), runs the
official decoder + checker on them (in `.venv-bfcl`, created on first use) and ours, and prints a
per-category table of valid/invalid agreement.

A disagreement is counted as a *documented divergence* only when our checker run with `bfcl_quirks=True`
(BFCL's greedy parallel matching, unary operators that negate, language-tagged fences kept) agrees with the
official verdict; those cases are excluded from the agreement percentage and counted separately. Cases where
the official checker raises are counted as invalid (a training reward must give them 0) and reported.
Exit code 1 when any case disagrees for another reason.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _bfcl_cases import all_cases  # noqa: E402
from _bfcl_official import official_verdicts  # noqa: E402

from agentic_verl.rewards.bfcl import ast_match  # noqa: E402


def official_input(case: dict) -> dict:
    """What BFCL's checker sees: its reasoning-model handlers drop everything up to the last </think>."""
    return {**case, "output": case["output"].split("</think>")[-1]}


error_type_mismatches: Counter = Counter()  # (ours, official) error types of agreeing invalid verdicts


def compare(cases: list[dict]) -> tuple[dict, list[dict]]:
    official = official_verdicts([official_input(case) for case in cases])
    rows: dict[str, Counter] = defaultdict(Counter)
    disagreements = []
    error_type_mismatches.clear()
    for case, theirs in zip(cases, official, strict=True):
        args = (case["output"], case["functions"], case["possible_answer"], case["category"])
        ours = ast_match(*args)
        row = rows[case["category"]]
        row["cases"] += 1
        row["official_valid"] += theirs["valid"]
        row["official_crashed"] += theirs["crashed"] is not None
        if ours["valid"] == theirs["valid"]:
            row["agree"] += 1
            same_type = theirs["valid"] or theirs["crashed"] is not None or ours["error_type"] == theirs["error_type"]
            row["error_type_agree"] += same_type
            if not same_type:
                error_type_mismatches[ours["error_type"], theirs["error_type"]] += 1
            continue
        quirky = ast_match(*args, bfcl_quirks=True)
        if quirky["valid"] == theirs["valid"]:
            row["documented"] += 1
            disagreements.append({**case, "ours": ours, "theirs": theirs, "documented": True})
        else:
            row["disagree"] += 1
            disagreements.append({**case, "ours": ours, "theirs": theirs, "documented": False})
    return rows, disagreements


def print_table(rows: dict[str, Counter]) -> None:
    header = ("category", "cases", "official valid", "agree", "documented", "disagree", "agreement",
              "err-type agree", "official crashed")  # fmt: skip
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    total = Counter()
    for category in sorted(rows):
        total.update(rows[category])
        _print_row(category, rows[category])
    _print_row("**all**", total)


def _print_row(name: str, row: Counter) -> None:
    compared = row["cases"] - row["documented"]
    agreement = 100.0 * row["agree"] / compared if compared else 100.0
    print(f"| {name} | {row['cases']} | {row['official_valid']} | {row['agree']} | {row['documented']} | "
          f"{row['disagree']} | {agreement:.2f}% | {row['error_type_agree']} | {row['official_crashed']} |")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-question", type=int, default=12, help="mutated outputs per question")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--show", type=int, default=5, help="print this many disagreements of each sort")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    cases = all_cases(seed=args.seed, per_question=args.per_question)
    rows, disagreements = compare(cases)
    print_table(rows)
    kinds = Counter((d["kind"], d["documented"]) for d in disagreements)
    if kinds:
        print("\ndisagreements by mutation (kind, documented): " + ", ".join(f"{k}: {v}" for k, v in kinds.items()))
    if error_type_mismatches:
        print("\nsame verdict, different error type (ours, official): "
              + ", ".join(f"{k}: {v}" for k, v in error_type_mismatches.most_common(8)))
    for documented in (False, True):
        shown = [d for d in disagreements if d["documented"] is documented][: args.show]
        for d in shown:
            label = "documented divergence" if documented else "DISAGREEMENT"
            print(f"\n{label}: {d['id']} [{d['kind']}] output={d['output'][:300]!r}\n  ours={d['ours']}\n"
                  f"  official={d['theirs']}")
    print(f"\n{len(cases)} cases in {time.perf_counter() - start:.1f} s")
    return 1 if any(not d["documented"] for d in disagreements) else 0


if __name__ == "__main__":
    sys.exit(main())
