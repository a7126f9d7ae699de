"""Agreement and speed of our BFCL AST match (agentic_verl.rewards.bfcl) beside the official bfcl-eval checker.

    .venv/bin/python scripts/agreement/bfcl_agreement.py [--per-question 12] [--seed 0] [--questions N] [--show 5]
        [--speed-rounds 3] [--no-speed]

Builds, for every question of the AST and relevance categories in bfcl_eval's data (or the first N of each
category with --questions), the gold output (rendered from the possible answers) and mutated outputs (wrong
values, dropped/extra parameters, wrong names, type changes, string case/punctuation variants,
reordered/dropped parallel calls, fences, garbage), runs the official decoder + checker on them (in
`.venv-bfcl`, created on first use) and ours in its default mode (the `bfcl_ast` reward's default), and prints
a per-category table of valid/invalid agreement.

A disagreement is counted as a *documented divergence* only when ours with `tree_sitter_recovery=True` (an
approximation of tree-sitter's error recovery on Java/JavaScript) agrees with the official verdict; those are
excluded from the agreement percentage. Cases where the official checker raises are counted as invalid (a
training reward must give them 0) and reported. The column "lenient differs" counts outputs on which our lenient
options (`accept_code_fences`, `python_unary_operators`, `optimal_parallel_matching`, the old default) give
another verdict than the official checker. Then both checkers are timed over the same cases in one process
(see `_bfcl_official_runner.bench`). Exit code 1 when any case disagrees for another reason.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from _bfcl_cases import all_cases  # noqa: E402
from _bfcl_official import official_verdicts, throughput  # noqa: E402

from agentic_verl.rewards.bfcl import ast_match  # noqa: E402

LENIENT = {"accept_code_fences": True, "python_unary_operators": True, "optimal_parallel_matching": True}


def official_input(case: dict) -> dict:
    """What BFCL's checker sees: its reasoning-model handlers drop everything up to the last </think>."""
    return {**case, "output": case["output"].split("</think>")[-1]}


error_type_mismatches: Counter = Counter()  # (ours, official) error types of agreeing invalid verdicts
lenient_kinds: Counter = Counter()  # (mutation kind, lenient verdict) where the lenient options differ from BFCL


def compare(cases: list[dict]) -> tuple[dict, list[dict]]:
    official = official_verdicts([official_input(case) for case in cases])
    rows: dict[str, Counter] = defaultdict(Counter)
    disagreements = []
    error_type_mismatches.clear()
    lenient_kinds.clear()
    for case, theirs in zip(cases, official, strict=True):
        args = (case["output"], case["functions"], case["possible_answer"], case["category"])
        ours = ast_match(*args)
        row = rows[case["category"]]
        row["cases"] += 1
        row["official_valid"] += theirs["valid"]
        row["official_crashed"] += theirs["crashed"] is not None
        lenient = ast_match(*args, **LENIENT)["valid"]
        if lenient != theirs["valid"]:
            row["lenient_differs"] += 1
            lenient_kinds[case["kind"], "accepts" if lenient else "rejects"] += 1
        if ours["valid"] == theirs["valid"]:
            row["agree"] += 1
            same_type = theirs["valid"] or theirs["crashed"] is not None or ours["error_type"] == theirs["error_type"]
            row["error_type_agree"] += same_type
            if not same_type:
                error_type_mismatches[ours["error_type"], theirs["error_type"]] += 1
            continue
        documented = ast_match(*args, tree_sitter_recovery=True)["valid"] == theirs["valid"]
        row["documented" if documented else "disagree"] += 1
        disagreements.append({**case, "ours": ours, "theirs": theirs, "documented": documented})
    return rows, disagreements


def print_table(rows: dict[str, Counter]) -> None:
    header = ("category", "cases", "official valid", "agree", "documented", "disagree", "agreement",
              "err-type agree", "official crashed", "lenient differs")  # fmt: skip
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
          f"{row['disagree']} | {agreement:.2f}% | {row['error_type_agree']} | {row['official_crashed']} | "
          f"{row['lenient_differs']} |")


def print_speed(cases: list[dict], rounds: int) -> float:
    """Time both over the same cases (questions in order, as an evaluation reads them); returns ours / official
    in CPU time over the best rounds."""
    report = throughput([official_input(case) for case in cases], rounds)
    print(f"\nspeed, {report['n']} outputs (decode + check, one process, alternating every 250 outputs):\n")
    print("| pass | official samples/s (CPU) | ours samples/s (CPU) | ours / official (CPU) | ours / official (wall) |")
    print("|---|---|---|---|---|")
    for label, rates in (("first pass", report["first_pass"]), (f"best of {rounds}", report["samples_per_s"])):
        print(f"| {label} | {rates['official_cpu']:,.0f} | {rates['ours_cpu']:,.0f} | "
              f"{rates['ours_cpu'] / rates['official_cpu']:.2f}x | {rates['ours_wall'] / rates['official_wall']:.2f}x |")
    best = report["samples_per_s"]
    return best["ours_cpu"] / best["official_cpu"]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-question", type=int, default=12, help="mutated outputs per question")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--questions", type=int, default=None, help="only the first N questions of each category")
    parser.add_argument("--show", type=int, default=5, help="print this many disagreements of each sort")
    parser.add_argument("--speed-rounds", type=int, default=3, help="timed passes after the first (best counts)")
    parser.add_argument("--no-speed", action="store_true", help="skip the side-by-side timing")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    cases = all_cases(seed=args.seed, per_question=args.per_question, questions_per_category=args.questions)
    rows, disagreements = compare(cases)
    print_table(rows)
    kinds = Counter((d["kind"], d["documented"]) for d in disagreements)
    if kinds:
        print("\ndisagreements by mutation (kind, documented): " + ", ".join(f"{k}: {v}" for k, v in kinds.items()))
    if lenient_kinds:
        print("\nthe lenient options' verdict differs from the official one ((mutation, lenient verdict): cases): "
              + ", ".join(f"{k}: {v}" for k, v in lenient_kinds.most_common()))
    if error_type_mismatches:
        print("\nsame verdict, different error type (ours, official): "
              + ", ".join(f"{k}: {v}" for k, v in error_type_mismatches.most_common(8)))
    for documented in (False, True):
        shown = [d for d in disagreements if d["documented"] is documented][: args.show]
        for d in shown:
            label = "documented divergence" if documented else "DISAGREEMENT"
            print(f"\n{label}: {d['id']} [{d['kind']}] output={d['output'][:300]!r}\n  ours={d['ours']}\n"
                  f"  official={d['theirs']}")
    print(f"\n{len(cases)} cases compared in {time.perf_counter() - start:.1f} s")
    if not args.no_speed:
        print_speed(cases, args.speed_rounds)
    return 1 if any(not d["documented"] for d in disagreements) else 0


if __name__ == "__main__":
    sys.exit(main())
