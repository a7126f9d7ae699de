"""`agentic-verl eval bfcl`: FunReason's aggregates by hand, our prompts and category scores beside the official
bfcl-eval's (through `.venv-bfcl`), a scripted gold policy over every category, and SmolLM2 end to end on CPU."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from agentic_verl.cli import main as cli_main
from agentic_verl.eval.bfcl_data import CATEGORIES, build_messages, load_questions, resolve_categories
from agentic_verl.eval.bfcl_eval import (
    LIVE_DEFINITIONS,
    BFCLEvalSettings,
    aggregate,
    evaluate,
    format_category_table,
    format_paper_table,
    score,
    summarize,
)
from agentic_verl.rewards.bfcl import gold_calls, language_of, render_calls

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts" / "agreement"))

import _bfcl_official  # noqa: E402
from _bfcl_cases import mutations  # noqa: E402


def official(test):
    """Compares with the official bfcl-eval in `.venv-bfcl` (its pins cannot live in .venv); skipped without it."""
    skip = pytest.mark.skipif(not _bfcl_official.available(), reason="no .venv-bfcl (run `make bfcl-venv`)")
    return pytest.mark.bfcl_official(skip(test))


def _cat(n: int, correct: int) -> dict:
    return {"n": n, "correct": correct, "accuracy": correct / n}


def test_aggregates_match_hand_computed_numbers():
    categories = {
        "simple_python": _cat(10, 8), "simple_java": _cat(4, 3), "simple_javascript": _cat(2, 1),  # simple: mean
        "multiple": _cat(10, 9), "parallel": _cat(5, 3), "parallel_multiple": _cat(4, 2),
        "irrelevance": _cat(10, 1),  # reported, but in neither aggregate
        "live_simple": _cat(10, 7), "live_multiple": _cat(40, 30), "live_parallel": _cat(2, 1),
        "live_parallel_multiple": _cat(4, 2), "live_irrelevance": _cat(80, 50), "live_relevance": _cat(4, 3),
    }  # fmt: skip
    result = aggregate(categories)
    # Non-Live AST: simple = (0.8 + 0.75 + 0.5) / 3 = 0.683333; then (0.683333 + 0.9 + 0.6 + 0.5) / 4
    assert result["non_live"] == pytest.approx(0.6708333, abs=1e-6)
    # Live: all live questions together, (7 + 30 + 1 + 2 + 50 + 3) / (10 + 40 + 2 + 4 + 80 + 4) = 93 / 140
    assert result["live"] == pytest.approx(0.6642857, abs=1e-6)
    # Overall: the mean of the two
    assert result["overall"] == pytest.approx(0.6675595, abs=1e-6)
    assert result["non_live_complete"] and result["live_complete"] and result["overall_complete"]
    # Live AST (BFCL v4): the four live AST categories only, (7 + 30 + 1 + 2) / (10 + 40 + 2 + 4) = 40 / 56
    assert result["live_ast"] == pytest.approx(0.7142857, abs=1e-6) and result["live_ast_complete"]
    assert result["live_ast_categories"] == ["live_simple", "live_multiple", "live_parallel", "live_parallel_multiple"]


def test_live_under_both_bfcl_definitions_in_the_table():
    """A made-up run where the two definitions differ a lot (irrelevance strong, AST weak): both columns, each
    named with its BFCL version; the published rows sit in the v3 column."""
    categories = {"live_simple": _cat(20, 5), "live_multiple": _cat(20, 5), "live_irrelevance": _cat(50, 45),
                  "live_relevance": _cat(10, 10)}
    result = aggregate(categories)
    assert result["live"] == pytest.approx(65 / 100) and not result["live_complete"]  # (5 + 5 + 45 + 10) / 100
    assert result["live_ast"] == pytest.approx(10 / 40) and not result["live_ast_complete"]  # (5 + 5) / 40
    table = format_paper_table({"settings": {"label": "mine", "model": "m"}, "summary": {"n": 100, **result}})
    lines = table.splitlines()
    assert lines[0] == "| model | Non-Live AST | Live (BFCL v3) | Overall | Live AST (BFCL v4) |"
    assert "| Qwen2.5-Coder-7B FunReason (published) | 87.00 | 80.31 | 83.66 | - |" in lines
    assert "| mine (n=100) | - | 65.00* | - | 25.00* |" in lines
    assert any(line.startswith("Live (BFCL v3): BFCL v3, bfcl-eval <= 2025.8.6.2") for line in lines)
    assert any(line.startswith("Live AST (BFCL v4): BFCL v4, bfcl-eval >= 2025.8.25") for line in lines)
    assert any("Published rows" in line and "Live (BFCL v3)" in line for line in lines)


def test_installed_bfcl_eval_computes_live_as_our_v4_definition():
    """The installed bfcl-eval's own Live Overall (`overall_accuracy_live` in its eval_runner_helper.py, read as
    source: importing it pulls every vendor SDK) weights exactly the categories of our `live_ast`."""
    import ast
    from importlib import resources

    source = (resources.files("bfcl_eval") / "eval_checker" / "eval_runner_helper.py").read_text()
    variables, live_args = {}, None
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name) and isinstance(node.value, ast.Call):
            call, name = node.value, node.targets[0].id
            if getattr(call.func, "id", "") == "get_category_score":
                variables[name] = call.args[1].value  # python_simple_ast_live = get_category_score(value, "live_simple")
            elif name == "overall_accuracy_live":
                live_args = [element.id for element in call.args[0].elts]
    assert live_args is not None, "bfcl-eval no longer assigns overall_accuracy_live: check LIVE_DEFINITIONS"
    assert [variables[name] for name in live_args] == list(LIVE_DEFINITIONS["live_ast"][2])


def test_docstring_example_of_the_aggregates():
    import doctest

    import agentic_verl.eval.bfcl_eval as module

    result = doctest.testmod(module)
    assert result.attempted > 0 and result.failed == 0


def test_partial_aggregates_are_marked():
    # simple_java alone stands for simple; parallel is missing: the mean of simple and multiple, marked partial
    result = aggregate({"simple_java": _cat(4, 1), "multiple": _cat(2, 2)})
    assert result["non_live"] == pytest.approx((0.25 + 1.0) / 2)
    assert not result["non_live_complete"] and result["live"] is None and result["overall"] is None
    table = format_paper_table({"settings": {"label": "mine", "model": "m"}, "summary": {"n": 6, **result}})
    assert "| mine (n=6) | 62.50* | - | - | - |" in table and "87.00" in table  # FunReason's published row


def test_categories_resolve_groups_and_reject_unknown_names():
    assert resolve_categories(["live", "simple_java"])[0] == "simple_java"
    assert len(resolve_categories(["all"])) == len(CATEGORIES) == 13
    assert resolve_categories(["multi_turn_base", "simple_java"]) == ["simple_java", "multi_turn_base"]
    with pytest.raises(ValueError, match="unknown BFCL category"):
        resolve_categories(["web_search"])


@official
def test_prompts_are_bfcl_prompting_mode_prompts():
    # the system prompt and hinted function docs of BFCL's prompting handlers, for every category
    theirs = _bfcl_official.official_messages(list(CATEGORIES), limit=2)
    ours = {q["id"]: build_messages(q) for q in load_questions(CATEGORIES, limit=2)}
    assert ours.keys() == theirs.keys() and len(ours) == 26
    for qid, messages in ours.items():
        assert messages == theirs[qid], qid


@official
def test_category_scores_match_the_official_scorer_on_the_same_outputs():
    import random

    rng = random.Random(3)
    questions = load_questions(CATEGORIES, limit=4)
    pairs = [(q, case["output"].split("</think>")[-1]) for q in questions for case in mutations(q, rng, 6)]
    ours = summarize(score([q for q, _ in pairs], [o for _, o in pairs]))["categories"]
    theirs = _bfcl_official.official_category_scores(
        [{"id": q["id"], "category": q["category"], "result": o} for q, o in pairs])
    assert {c: (s["correct"], s["n"]) for c, s in ours.items()} == {
        c: (s["correct"], s["total"]) for c, s in theirs.items()}
    # both verdicts occur in every category, or agreement would mean little
    assert all(0 < s["correct"] < s["n"] for s in ours.values()), ours


def _gold_output(question: dict) -> str:
    if question["possible_answer"] is None:  # relevance: any call; irrelevance: a refusal
        name = question["functions"][0]["name"]
        return f"[{name}()]" if question["category"] == "live_relevance" else "None of the functions fit."
    calls = gold_calls(question["possible_answer"], question["functions"])
    return "<think>the answer</think>\n\n" + render_calls(calls, language_of(question["category"]),
                                                           question["functions"])


class GoldEngine:
    """The engines' `generate`, answering each question (by its request id) with its gold output."""

    def __init__(self, tokenizer, questions):
        self.tokenizer, self.by_id = tokenizer, {q["id"]: q for q in questions}
        self.prompts = {}

    async def generate(self, prompt_ids, sampling_params=None, request_id=None):
        from agentic_verl.generation.hf_engine import GenerationOutput

        self.prompts[request_id] = self.tokenizer.decode(prompt_ids)
        ids = self.tokenizer.encode(_gold_output(self.by_id[request_id]), add_special_tokens=False)
        return GenerationOutput(ids + [self.tokenizer.eos_token_id], None, "completed", "stop")


def test_gold_policy_scores_every_category_fully(smollm2_dir, smollm2_tokenizer, tmp_path):
    settings = BFCLEvalSettings(model=str(smollm2_dir), limit=2, label="gold")
    engine = GoldEngine(smollm2_tokenizer, load_questions(CATEGORIES, limit=2))
    result = evaluate(settings, engine=engine)
    assert list(result["categories"]) == list(CATEGORIES)
    assert all(c["accuracy"] == 1.0 and c["n"] == 2 for c in result["categories"].values()), result["categories"]
    s = result["summary"]
    assert (s["non_live"], s["live"], s["overall"], s["overall_complete"]) == (1.0, 1.0, 1.0, True)
    # the prompt went through the chat template, with BFCL's system prompt and the Java hint
    java = engine.prompts["simple_java_0"]
    assert "<|im_start|>system\nYou are an expert in composing functions." in java
    assert "Note that the provided function is in Java 8 SDK syntax." in java
    assert "| gold (n=26) | 100.00 | 100.00 | 100.00 | 100.00 |" in format_paper_table(result)
    table = format_category_table(result)
    assert "| live_relevance | 2 | 100.00 | 0 | 1.00 | - |" in table and "| irrelevance | 2 | 100.00 | 0 | 0.00 | - |" in table
    # all questions: 26 right; calls as the gold outputs make them (parallel ones several, irrelevance none)
    n_calls = sum(len(gold_calls(q["possible_answer"])) if q["possible_answer"] else q["category"] == "live_relevance"
                  for q in load_questions(CATEGORIES, limit=2))
    assert (s["accuracy"], s["truncation_rate"], s["calls_per_question"]) == (1.0, 0.0, n_calls / 26)
    assert f"| all | 26 | 100.00 | 0 | {n_calls / 26:.2f} | - |" in table


def test_eval_bfcl_end_to_end_with_smollm2_on_cpu(smollm2_dir, tmp_path, capsys):
    # the real model in the hf engine, two questions of two categories, four new tokens each
    out = tmp_path / "bfcl"
    code = cli_main(["eval", "bfcl", "--model", str(smollm2_dir), "--engine", "hf", "--categories", "simple_python",
                     "irrelevance", "--limit", "2", "--max-tokens", "4", "--out", str(out)])
    assert code == 0
    printed = capsys.readouterr().out
    assert "Qwen2.5-Coder-7B FunReason (published) | 87.00 | 80.31 | 83.66 | - |" in printed
    result = json.loads((out / "result.json").read_text())
    assert (out / "table.md").read_text().startswith("| model | Non-Live AST | Live (BFCL v3) | Overall | Live AST")
    assert [q["category"] for q in result["questions"]] == ["simple_python"] * 2 + ["irrelevance"] * 2
    for q in result["questions"]:
        assert 0 < q["output_tokens"] <= 4 and q["prompt_tokens"] > 300 and q["finish_reason"] in ("stop", "length")
        assert q["valid"] == (q["error_type"] is None)
    # four tokens of prose are never a call: right for irrelevance, a decode failure for simple_python
    assert result["categories"]["irrelevance"]["accuracy"] == 1.0
    assert result["categories"]["simple_python"]["errors"] == {"ast_decoder:decoder_failed": 2}
    s = result["summary"]
    assert s["non_live"] == 0.0 and not s["non_live_complete"] and s["live"] is None


def test_bad_settings_fail_before_any_model_loads(smollm2_dir, tmp_path, capsys):
    # one clear line each, no traceback, nothing generated
    assert cli_main(["eval", "bfcl", "--model", str(tmp_path / "missing")]) == 2
    assert cli_main(["eval", "bfcl", "--model", str(smollm2_dir), "--categories", "memory_kv"]) == 2
    assert cli_main(["eval", "bfcl", "--endpoint", "http://127.0.0.1:9"]) == 2  # no --model-name
    errors = capsys.readouterr().err.splitlines()
    assert len(errors) == 3 and "model folder not found" in errors[0] and "unknown BFCL category" in errors[1]


def test_recipe_passes_flags_the_command_accepts(tmp_path):
    """recipes/funreason/eval_bfcl.sh with a stand-in `agentic-verl` that records its arguments, parsed by the real
    parser; without a model it refuses."""
    import os
    import subprocess

    from agentic_verl.cli import build_parser

    repo = Path(__file__).resolve().parents[2]
    stand_in = tmp_path / "agentic-verl"
    stand_in.write_text('#!/usr/bin/env bash\nprintf "%s\\n" "$@" > "$RECORD_FILE"\n')
    stand_in.chmod(0o755)
    record = tmp_path / "argv.txt"
    env = {**os.environ, "AGENTIC_VERL": str(stand_in), "RECORD_FILE": str(record)}
    for name in ("AGENTIC_VERL_DEVICE", "MODEL_PATH", "ENDPOINT"):
        env.pop(name, None)
    refused = subprocess.run(["bash", "recipes/funreason/eval_bfcl.sh"], cwd=repo, env=env, capture_output=True,
                             text=True, timeout=60)
    assert refused.returncode == 2 and "set MODEL_PATH=DIR" in refused.stderr
    env.update(MODEL_PATH="/models/funreason")
    subprocess.run(["bash", "recipes/funreason/eval_bfcl.sh", "--limit", "3", "--categories", "simple_python", "live",
                    "--max-tokens", "512"], cwd=repo, env=env, check=True, timeout=60)
    args = build_parser().parse_args(record.read_text().splitlines())
    assert (args.eval_command, args.model, args.engine, args.limit) == ("bfcl", "/models/funreason", "vllm", 3)
    assert args.categories == ["simple_python", "live"] and args.prompt == "bfcl" and args.max_tokens == 512
    assert args.out == "outputs/eval/bfcl_funreason" and args.label == "funreason"
    # a served model: MODEL_PATH stays out (argparse would refuse --model beside --endpoint), its name labels the run
    subprocess.run(["bash", "recipes/funreason/eval_bfcl.sh", "--endpoint", "http://127.0.0.1:9", "--model-name",
                    "served"], cwd=repo, env=env, check=True, timeout=60)
    args = build_parser().parse_args(record.read_text().splitlines())
    assert (args.model, args.endpoint, args.label, args.out) == (None, "http://127.0.0.1:9", "served",
                                                                 "outputs/eval/bfcl_served")


def _tiny_question_files(folder: Path) -> list[Path]:
    """Two BFCL-format files as `data fc-toy-world` writes them: one simple question, one irrelevance question."""
    function = {"name": "book_drathel", "description": "Books a drathel.",
                "parameters": {"type": "dict", "properties": {"vorkal": {"type": "integer", "description": "n"}},
                               "required": ["vorkal"]}}  # fmt: skip
    (folder / "possible_answer").mkdir(parents=True)
    simple, irrelevance = folder / "BFCL_v4_simple_python.json", folder / "BFCL_v4_irrelevance.json"
    ask = [[{"role": "user", "content": "Book a drathel with 12 vorkals."}]]
    simple.write_text(json.dumps({"id": "t_simple_0", "question": ask, "function": [function]}) + "\n")
    (folder / "possible_answer" / simple.name).write_text(
        json.dumps({"id": "t_simple_0", "ground_truth": [{"book_drathel": {"vorkal": [12]}}]}) + "\n")
    ask = [[{"role": "user", "content": "Paint a moshel."}]]
    irrelevance.write_text(json.dumps({"id": "t_irrelevance_0", "question": ask, "function": [function]}) + "\n")
    return [simple, irrelevance]


class ScriptedEngine:
    """The engines' `generate`, answering from a fixed {request_id: text}; `length` ids end at the token limit."""

    def __init__(self, tokenizer, answers: dict[str, str], length: set[str] = frozenset()):
        self.tokenizer, self.answers, self.length = tokenizer, answers, length

    async def generate(self, prompt_ids, sampling_params=None, request_id=None):
        from agentic_verl.generation.hf_engine import GenerationOutput

        ids = self.tokenizer.encode(self.answers[request_id], add_special_tokens=False)
        finish = "length" if request_id in self.length else "stop"
        return GenerationOutput(ids, None, "completed", finish)


def test_question_files_are_scored_like_the_packages_questions(smollm2_dir, smollm2_tokenizer, tmp_path):
    files = _tiny_question_files(tmp_path / "world")
    settings = BFCLEvalSettings(model=str(smollm2_dir), questions=files, prompt="funreason", label="files")
    answers = {"t_simple_0": "<think>12 of them</think>\n\n[book_drathel(vorkal=12)]",
               "t_irrelevance_0": "<think>painting is not booking, so"}  # cut in its reasoning: no call
    result = evaluate(settings, engine=ScriptedEngine(smollm2_tokenizer, answers, length={"t_irrelevance_0"}))
    assert settings.categories is None and result["settings"]["questions"] == [str(f) for f in files]
    assert [(q["id"], q["valid"], q["calls"]) for q in result["questions"]] == [
        ("t_simple_0", True, 1), ("t_irrelevance_0", True, 0)]
    s = result["summary"]
    assert (s["n"], s["accuracy"], s["truncation_rate"], s["calls_per_question"]) == (2, 1.0, 0.5, 0.5)
    assert s["non_live_categories"] == ["simple_python"] and not s["non_live_complete"]
    answers["t_simple_0"] = "<think>12</think>\n\n[book_drathel(vorkal='12')]"  # a string where BFCL wants an int
    wrong = evaluate(settings, engine=ScriptedEngine(smollm2_tokenizer, answers))
    assert wrong["categories"]["simple_python"]["errors"] == {"type_error:simple": 1}
    assert wrong["summary"]["accuracy"] == 0.5 and wrong["summary"]["truncation_rate"] == 0.0


def test_question_files_refuse_bad_input_before_any_model_loads(smollm2_dir, tmp_path, capsys):
    files = [str(f) for f in _tiny_question_files(tmp_path / "world")]
    model = ["eval", "bfcl", "--model", str(smollm2_dir)]
    assert cli_main([*model, "--questions", *files, "--categories", "simple_python"]) == 2
    renamed = tmp_path / "world" / "questions.json"
    renamed.write_text(Path(files[0]).read_text())
    assert cli_main([*model, "--questions", str(renamed)]) == 2
    assert cli_main([*model, "--questions", str(tmp_path / "world" / "BFCL_v4_multiple.json")]) == 2
    assert cli_main([*model, "--questions", files[0], files[0]]) == 2
    errors = capsys.readouterr().err.splitlines()
    assert len(errors) == 4 and "not both" in errors[0] and "cannot tell the BFCL category" in errors[1]
    assert "not found" in errors[2] and "ids repeat" in errors[3]
