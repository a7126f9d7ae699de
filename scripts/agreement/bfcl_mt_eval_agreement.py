"""`agentic-verl eval bfcl` on BFCL's multi-turn categories with scripted policies (no model), its result files then
scored by bfcl-eval's own scorer: the accuracy of every category and every failed question's error type must agree.

    .venv/bin/python scripts/agreement/bfcl_mt_eval_agreement.py [--limit N] [--out DIR] [--concurrency 16]

The policies (`_bfcl_mt_cases.scripted_policies`, by question index modulo 4): the ground truth; no call at all;
the ground truth spread over steps with reasoning and an empty `[]` step; and per category a decode failure plus a
dropped call, a force-quit, a step cut at the token limit, or a refused generation. The eval runs them through the
`bfcl_multi_turn` loop against an environment server it starts, with SmolLM2's tokenizer; bfcl-eval's
`eval_runner.runner` (`_bfcl_official_scorer.py`, in `.venv-bfcl`) then scores OUT/result. Prints per category the
questions, both accuracies, how many of the ground-truth policies (indexes 0 and 2 modulo 4) passed, and the
seconds of each side; exit code 1 when anything differs.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _bfcl_mt_cases import TurnScript, scripted_policies  # noqa: E402
from _bfcl_official import official_scorer  # noqa: E402

from agentic_verl.eval.bfcl_data import MULTI_TURN, load_multi_turn_questions  # noqa: E402
from agentic_verl.eval.bfcl_eval import BFCLEvalSettings, evaluate, write_result  # noqa: E402

LABEL = "scripted"


def _failures(score_file: Path) -> list[tuple[str, str]]:
    lines = [json.loads(line) for line in score_file.read_text().splitlines()]
    return [(entry["id"], entry["error"]["error_type"]) for entry in lines[1:]]


def main(argv: list[str] | None = None) -> int:
    from transformers import AutoTokenizer

    from agentic_verl.bfcl_env.venv import ensure_venv
    from agentic_verl.cpu.models import smollm2_hf_dir

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--limit", type=int, default=None, help="the first N questions of each category (all: 200)")
    parser.add_argument("--out", default=None, help="keep the run's files here (default: a temporary folder)")
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args(argv)
    ensure_venv()
    model = smollm2_hf_dir()
    questions = load_multi_turn_questions(["multi_turn"], args.limit)
    scripts, cut, fail = scripted_policies(questions)
    engine = TurnScript(AutoTokenizer.from_pretrained(str(model)), scripts, cut, fail)
    settings = BFCLEvalSettings(model=str(model), categories=["multi_turn"], limit=args.limit, label=LABEL,
                                concurrency=args.concurrency)
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(args.out or scratch)
        started = time.perf_counter()
        result = evaluate(settings, engine=engine)
        ours_s = time.perf_counter() - started
        write_result(result, out)
        started = time.perf_counter()
        theirs = official_scorer(out / "result", out / "official_score")[LABEL]
        theirs_s = time.perf_counter() - started
        differ, gold_failed = [], []
        print("| category | n | ours | bfcl-eval's scorer | ground-truth policies passed |")
        print("|---|---|---|---|---|")
        for category in MULTI_TURN:
            ours = result["categories"][category]
            name = f"{LABEL}/multi_turn/BFCL_v4_{category}_score.json"
            mine, official = _failures(out / "score" / name), _failures(out / "official_score" / name)
            if (ours["accuracy"], ours["n"]) != (theirs[category]["accuracy"], theirs[category]["total_count"]):
                differ.append((category, ours["accuracy"], theirs[category]["accuracy"]))
            differ += [(category, a, b) for a, b in zip(mine, official, strict=False) if a != b]
            if len(mine) != len(official):
                differ.append((category, f"{len(mine)} failures", f"{len(official)} failures"))
            gold = [r for r in result["questions"] if r["category"] == category and int(r["id"].rsplit("_", 1)[1]) % 4
                    in (0, 2)]
            gold_failed += [(r["id"], r["error_type"]) for r in gold if not r["valid"]]
            print(f"| {category} | {ours['n']} | {100 * ours['accuracy']:.2f} | "
                  f"{100 * theirs[category]['accuracy']:.2f} | {sum(r['valid'] for r in gold)} / {len(gold)} |")
    print(f"\n{len(result['questions'])} questions: eval bfcl {ours_s:.1f} s (loop + environment + /check), "
          f"bfcl-eval's scorer {theirs_s:.1f} s; {len(differ)} differences")
    for item in differ[:20]:
        print("  differs:", item)
    for item in gold_failed[:20]:
        print("  a ground-truth policy failed:", item)
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
