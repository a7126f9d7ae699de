"""`agentic-verl eval bfcl` on the multi-turn categories: scripted policies through the real `bfcl_multi_turn` loop
and the real BFCL environment server (`.venv-bfcl`), our files scored by bfcl-eval's own scorer, the prompts
against BFCL's, the CLI end to end, and bad inputs refused before anything runs."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from agentic_verl.agent_loops.bfcl_multi_turn import turn_messages
from agentic_verl.cli import main as cli_main
from agentic_verl.eval.bfcl_data import (
    MULTI_TURN,
    load_multi_turn_questions,
    load_question_files,
    load_questions,
    multi_turn_messages,
    resolve_categories,
)
from agentic_verl.eval.bfcl_eval import BFCLEvalSettings, aggregate, evaluate, format_tables, write_result
from agentic_verl.eval.bfcl_layout import group_of
from agentic_verl.rewards.bfcl import gold_calls, render_calls
from agentic_verl.rewards.bfcl.multi_turn_entry import parse_entry

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts" / "agreement"))

import _bfcl_official  # noqa: E402
from _bfcl_mt_cases import TurnScript, as_calls, calls_text, first_with_calls, gold, scripted_policies  # noqa: E402


def single_turn_scripts(questions: list[dict]) -> dict[str, list[list[str]]]:
    """Single-turn questions beside (their files go through bfcl-eval's scorer too): even ids right, odd ids wrong."""
    scripts = {}
    for q in questions:
        right = int(q["id"].rsplit("_", 1)[1]) % 2 == 0
        if q["category"] == "irrelevance":
            text = "None of the functions fit." if right else f"[{q['functions'][0]['name']}()]"
        else:
            calls = render_calls(gold_calls(q["possible_answer"], q["functions"]), "python", q["functions"])
            text = "<think>easy</think>\n\n" + calls if right else "[no_such_function(x=1)]"
        scripts[q["id"]] = [[text]]
    return scripts


SINGLE_TURN = ["simple_python", "irrelevance"]


@pytest.fixture(scope="module")
def mixed_run(bfcl_env, smollm2_dir, smollm2_tokenizer, tmp_path_factory):
    scripts, cut, fail = scripted_policies(load_multi_turn_questions(["multi_turn"], limit=4))
    scripts.update(single_turn_scripts(load_questions(SINGLE_TURN, limit=4)))
    settings = BFCLEvalSettings(model=str(smollm2_dir), categories=[*SINGLE_TURN, "multi_turn"], limit=4,
                                label="org/scripted", bfcl_env_url=bfcl_env.url)
    engine = TurnScript(smollm2_tokenizer, scripts, cut, fail)
    result = evaluate(settings, engine=engine)
    out = tmp_path_factory.mktemp("bfcl_mt")
    write_result(result, out)
    return result, engine, out


@pytest.mark.bfcl_official
def test_category_accuracy_equals_bfcl_evals_scorer_on_our_files(mixed_run, tmp_path):
    result, _, out = mixed_run
    records = {r["id"]: r for r in result["questions"]}
    assert len(records) == 24 and list(result["categories"]) == [*SINGLE_TURN, *MULTI_TURN]
    # both verdicts in every category, and the failures of several kinds, or agreement would mean little
    assert all(0 < c["correct"] < c["n"] for c in result["categories"].values()), result["categories"]
    assert all(records[f"{c}_0"]["valid"] and records[f"{c}_2"]["valid"] and not records[f"{c}_1"]["valid"]
               for c in MULTI_TURN)
    assert records["multi_turn_base_3"]["error_type"] == "multi_turn:inference_error"
    assert (records["multi_turn_miss_param_3"]["error_type"], records["multi_turn_miss_param_3"]["terminated"]) == (
        "multi_turn:force_terminated", "step_limit")
    # cut in its last turn (it has two): all turns are there, so both checkers judge it (as BFCL's runner does)
    cut = records["multi_turn_long_context_3"]
    assert (cut["num_turns"], cut["terminated"], cut["error_type"]) == (
        2, "max_tokens", "multi_turn:empty_turn_model_response")

    theirs = _bfcl_official.official_scorer(out / "result", tmp_path / "score")
    assert list(theirs) == ["org_scripted"]  # bfcl-eval's folder name for the model
    ours = {c: (s["accuracy"], s["n"]) for c, s in result["categories"].items()}
    assert {c: (s["accuracy"], s["total_count"]) for c, s in theirs["org_scripted"].items()} == ours
    # and question by question: the same failures, with the same error types, in both score files
    for category in [*SINGLE_TURN, *MULTI_TURN]:
        name = f"org_scripted/{group_of(category)}/BFCL_v4_{category}_score.json"
        mine, official = ([json.loads(line) for line in (root / name).read_text().splitlines()]
                          for root in (out / "score", tmp_path / "score"))
        assert mine[0] == official[0]  # {"accuracy", "correct_count", "total_count"}
        error_type = (lambda e: e["error"]["error_type"] if isinstance(e["error"], dict) else e["error_type"])  # noqa: E731
        assert [(e["id"], error_type(e)) for e in mine[1:]] == [(e["id"], error_type(e)) for e in official[1:]]
        if category in MULTI_TURN:  # where the checker ran: the calls it got, per turn and step
            assert [e["model_result_decoded"] for e in mine[1:] if "model_result_decoded" in e] == [
                e["model_result_decoded"] for e in official[1:] if "model_result_decoded" in e]


def test_what_the_records_and_files_hold(mixed_run):
    result, engine, out = mixed_run
    records = {r["id"]: r for r in result["questions"]}
    split = records["multi_turn_base_2"]
    q = next(q for q in load_multi_turn_questions(["multi_turn_base"], limit=3) if q["id"] == "multi_turn_base_2")
    gt = q["entry"]["ground_truth"]
    first = first_with_calls(gt)
    # the result file's turns: every step's text after </think>, the answers that end turns included
    line = json.loads((out / "result/org_scripted/multi_turn/BFCL_v4_multi_turn_base_result.json")
                      .read_text().splitlines()[2])
    assert line["id"] == "multi_turn_base_2" and len(line["result"]) == len(gt) == split["num_turns"]
    assert line["result"][first][0] == "\n\n" + calls_text(gt[first][:1]) and line["result"][first][-1] == "[]"
    assert line["reasoning_content"][first][0] == "one at a time"
    assert split["model_calls"][first][0] == as_calls(gt[first][:1]) and split["calls"] == sum(map(len, gt))
    assert split["per_turn"] == [True] * len(gt) and split["turns_passed"] == len(gt)
    failed = records["multi_turn_base_3"]
    assert failed["errors"][0].startswith("prompt of") and json.loads(
        (out / "result/org_scripted/multi_turn/BFCL_v4_multi_turn_base_result.json").read_text().splitlines()[3]
    )["result"].startswith("Error during inference: prompt of")
    # a step cut at the token limit ends the question unread: kept in the record, left out of the result file
    cut = records["multi_turn_long_context_3"]
    assert cut["finish_reason"] == "length" and result["categories"]["multi_turn_long_context"]["truncated"] == 1
    assert cut["cut_step"] == engine.scripts["multi_turn_long_context_3"][2] and cut["result"][1] == []
    assert cut["model_calls"][1] == [] and len(cut["result"][0]) == 2
    # the prompt: BFCL's system prompt over the docs available at turn 0; miss_func's docs come at their turn, as
    # BFCL's prompting handler prints them
    missed = load_multi_turn_questions(["multi_turn_miss_func"], limit=1)[0]
    (turn, names), = missed["entry"]["missed_function"].items()
    prompts = engine.prompts["multi_turn_miss_func_0"]
    assert prompts[0].startswith("<|im_start|>system\nYou are an expert in composing functions.")
    assert all(f'"name": "{name}"' not in prompts[0] for name in names)
    added = [doc for doc in missed["entry"]["function"] if doc["name"] in names]
    assert str(added) + "\nI have updated some more functions" in prompts[-1]
    tables = format_tables(result)  # FunReason's single-turn table, the multi-turn one, the categories
    assert len(tables) == 3 and tables[1].startswith("| model | Multi-Turn Overall | base | miss_func |")
    s = result["summary"]
    assert s["multi_turn"] == pytest.approx(sum(result["categories"][c]["accuracy"] for c in MULTI_TURN) / 4)
    assert f"| org/scripted (n=16) | {100 * s['multi_turn']:.2f} |" in tables[1] and "| 56.50 |" in tables[1]
    assert s["non_live"] == result["categories"]["simple_python"]["accuracy"] == 0.5


def test_multi_turn_aggregate_is_the_unweighted_mean():
    cats = {"multi_turn_base": {"n": 200, "correct": 100, "accuracy": .5},
            "multi_turn_miss_func": {"n": 100, "correct": 10, "accuracy": .1}}
    partial = aggregate(cats)
    assert partial["multi_turn"] == pytest.approx(.3) and not partial["multi_turn_complete"]
    cats.update({"multi_turn_miss_param": {"n": 200, "correct": 40, "accuracy": .2},
                 "multi_turn_long_context": {"n": 200, "correct": 0, "accuracy": 0.}})
    full = aggregate(cats)
    assert full["multi_turn"] == pytest.approx(.2) and full["multi_turn_complete"]
    assert full["non_live"] is None and full["live"] is None  # the single-turn aggregates stay out of it
    assert resolve_categories(["multi_turn"]) == list(MULTI_TURN)
    assert "multi_turn_base" not in resolve_categories(["all"])


@pytest.mark.bfcl_official
@pytest.mark.skipif(not _bfcl_official.available(), reason="no .venv-bfcl (run `make bfcl-venv`)")
def test_multi_turn_prompts_are_bfcls():
    """Turn 0's messages as BFCL's prompting handlers build them (its system prompt over the hinted docs that are
    there from the start), and the message of a turn that adds withheld functions, as its handler writes it."""
    theirs = {e["id"]: e for e in _bfcl_official.official_prompts(list(MULTI_TURN), limit=2)}
    questions = load_multi_turn_questions(["multi_turn"], limit=2)
    assert len(questions) == 8 and theirs.keys() == {q["id"] for q in questions}
    for q in questions:
        entry = parse_entry(q["entry"])
        assert multi_turn_messages(entry) == theirs[q["id"]]["messages"], q["id"]
        ours = {str(turn): turn_messages(entry, turn, "python") for turn in entry.missed_function}
        assert ours == {turn: [{"role": "user", "content": text}] for turn, text in
                        theirs[q["id"]].get("added", {}).items()}, q["id"]
    assert sum("added" in e for e in theirs.values()) == 2  # the miss_func questions


def test_cli_starts_the_environment_server_and_stops_it(smollm2_dir, smollm2_tokenizer, tmp_path, monkeypatch,
                                                         capsys):
    """`eval bfcl --categories ...` end to end, the engine scripted (SmolLM2 in the hf engine takes minutes on these
    ~4,500-token prompts on CPU): the run starts its own environment server in .venv-bfcl and stops it."""
    if not _bfcl_official.available():
        pytest.skip("no .venv-bfcl (run `make bfcl-venv`)")
    from contextlib import contextmanager

    import agentic_verl.bfcl_env.process as process
    import agentic_verl.generation as generation

    questions = load_multi_turn_questions(["multi_turn_base", "multi_turn_miss_func"], limit=1)
    engine = TurnScript(smollm2_tokenizer, {q["id"]: gold(q["entry"]) for q in questions})
    engine.scripts["multi_turn_miss_func_0"] = []  # "Done." at every step: no call at all

    @contextmanager
    def scripted(name, model, **kwargs):
        assert (name, model, kwargs["max_batch_size"]) == ("hf", str(smollm2_dir), 2)
        yield engine

    servers = []
    start = process.BfclEnvProcess.start

    def spy(self):
        servers.append(self)
        return start(self)

    monkeypatch.setattr(generation, "open_engine", scripted)
    monkeypatch.setattr(process.BfclEnvProcess, "start", spy)
    out = tmp_path / "bfcl"
    code = cli_main(["eval", "bfcl", "--model", str(smollm2_dir), "--engine", "hf", "--categories", "multi_turn_base",
                     "multi_turn_miss_func", "--limit", "1", "--concurrency", "2", "--label", "mine",
                     "--out", str(out)])
    assert code == 0
    (server,) = servers
    assert server.process.poll() is not None  # stopped with the run
    printed = capsys.readouterr().out
    assert "| Qwen3-4B FunReason-MT (published) | 56.50 |" in printed and "Non-Live AST" not in printed
    assert "| mine (n=2) | 50.00* | 100.00 | 0.00 | - | - |" in printed
    result = json.loads((out / "result.json").read_text())
    assert [(q["id"], q["valid"]) for q in result["questions"]] == [("multi_turn_base_0", True),
                                                                     ("multi_turn_miss_func_0", False)]
    assert result["questions"][1]["error_type"] == "multi_turn:empty_turn_model_response"
    assert result["settings"]["bfcl_env_url"] is None and result["summary"]["multi_turn_categories"] == [
        "multi_turn_base", "multi_turn_miss_func"]
    lines = (out / "result/mine/multi_turn/BFCL_v4_multi_turn_base_result.json").read_text().splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["result"] == [gold(questions[0]["entry"])[t] for t in
                                                                   range(len(questions[0]["entry"]["question"]))]
    assert json.loads((out / "score/mine/multi_turn/BFCL_v4_multi_turn_miss_func_score.json").read_text()
                      .splitlines()[0]) == {"accuracy": 0.0, "correct_count": 0, "total_count": 1}


def test_held_out_generated_tasks_through_questions(bfcl_env, smollm2_dir, smollm2_tokenizer, tmp_path, monkeypatch,
                                                   capsys):
    """`eval bfcl --questions` on the multi-turn generator's own files (a held-out seed of `data bfcl-multi-turn`):
    the entries as the generator wrote them (their docs, withheld functions, ground truth), judged by the same
    checker; a gold policy passes and a silent one fails, per kind."""
    from contextlib import contextmanager

    import agentic_verl.generation as generation

    data = tmp_path / "held_out"
    assert cli_main(["data", "bfcl-multi-turn", "--out", str(data), "--seed", "7", "--count", "4", "--kinds", "base",
                     "miss_func", "--classes", "MessageAPI", "--no-sft"]) == 0
    files = sorted((data / "bfcl").glob("gen_multi_turn_*.json"))
    single_turn, questions = load_question_files(files)
    assert single_turn == [] and [q["category"] for q in questions] == ["multi_turn_base"] * 2 + [
        "multi_turn_miss_func"] * 2
    written = {json.loads(line)["id"]: json.loads(line) for f in files for line in f.read_text().splitlines()}
    for q in questions:  # the generator's entry, not bfcl-eval's: its own docs and ground truth
        assert q["entry"]["function"] == written[q["id"]]["function"] and q["entry"]["ground_truth"]
    # the first task of each kind gets the gold calls, the second never calls
    by_id = {q["id"]: q for q in questions}
    right = {questions[0]["id"], questions[2]["id"]}
    engine = TurnScript(smollm2_tokenizer, {qid: gold(by_id[qid]["entry"]) for qid in right})

    @contextmanager
    def scripted(name, model, **kwargs):
        yield engine

    monkeypatch.setattr(generation, "open_engine", scripted)
    out = tmp_path / "eval"
    assert cli_main(["eval", "bfcl", "--model", str(smollm2_dir), "--questions", *map(str, files),
                     "--bfcl-env-url", bfcl_env.url, "--label", "held-out", "--out", str(out)]) == 0
    result = json.loads((out / "result.json").read_text())
    verdicts = {q["id"]: q["valid"] for q in result["questions"]}
    assert verdicts == {qid: qid in right for qid in by_id}
    assert {c: (s["n"], s["correct"]) for c, s in result["categories"].items()} == {
        "multi_turn_base": (2, 1), "multi_turn_miss_func": (2, 1)}
    # the withheld functions of a miss_func task stay out of its first prompt
    missed = questions[2]
    names = [name for names in missed["entry"]["missed_function"].values() for name in names]
    assert names and all(f'"name": "{name}"' not in engine.prompts[missed["id"]][0] for name in names)
    assert "| held-out (n=4) |" in capsys.readouterr().out

    # a file whose name gives no category, and one without its ground truth: refused before anything runs
    monkeypatch.setattr(generation, "open_engine", None)
    odd = tmp_path / "tasks.json"
    odd.write_text(files[0].read_text())
    assert cli_main(["eval", "bfcl", "--model", str(smollm2_dir), "--questions", str(odd)]) == 2
    bare = tmp_path / "bare" / files[0].name
    bare.parent.mkdir()
    bare.write_text(files[0].read_text())
    assert cli_main(["eval", "bfcl", "--model", str(smollm2_dir), "--questions", str(bare)]) == 2
    errors = capsys.readouterr().err
    assert "cannot tell the BFCL category" in errors and "gen_multi_turn_<kind>.json" in errors
    assert "possible_answer/gen_multi_turn_base.json is missing" in errors


def test_bad_inputs_fail_before_anything_runs(smollm2_dir, tmp_path, monkeypatch, capsys):
    import agentic_verl.bfcl_env.process as process
    import agentic_verl.generation as generation

    def never(*args, **kwargs):
        raise AssertionError("nothing may start for a run that is refused")

    monkeypatch.setattr(generation, "open_engine", never)
    monkeypatch.setattr(process.BfclEnvProcess, "start", never)
    model = ["eval", "bfcl", "--model", str(smollm2_dir)]
    assert cli_main([*model, "--categories", "multi_turn_composite"]) == 2
    monkeypatch.setenv("BFCL_OFFICIAL_VENV", str(tmp_path / "no_venv"))
    assert cli_main([*model, "--categories", "multi_turn", "--engine", "hf"]) == 2
    assert cli_main([*model, "--categories", "multi_turn_base", "--bfcl-env-url", "http://127.0.0.1:9"]) == 2
    assert cli_main([*model, "--categories", "multi_turn_base", "--max-steps-per-turn", "0"]) == 2
    errors = capsys.readouterr().err.splitlines()
    assert len(errors) == 4, errors
    assert "unknown BFCL category 'multi_turn_composite'" in errors[0] and "multi_turn_base" in errors[0]
    assert "no bfcl-eval venv" in errors[1] and "make bfcl-venv" in errors[1]
    assert "http://127.0.0.1:9 is not usable" in errors[2] and "serve bfcl-env" in errors[2]
    assert "max_steps_per_turn must be >= 1" in errors[3]


@pytest.mark.parametrize("module", ["agentic_verl.eval.bfcl_multi_turn", "agentic_verl.eval.bfcl_layout",
                                    "agentic_verl.agent_loops.prompts"])
def test_docstring_examples(module):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(module))
    assert result.attempted > 0 and result.failed == 0
