"""`data bfcl-multi-turn`: tasks generated on bfcl-eval's own simulators (in `.venv-bfcl`), checked against what
they promise: the same seed gives the same bytes; every gold trajectory passes bfcl-eval's multi_turn_checker and
mutated ones fail it; no task shares a user turn or a class state with BFCL's 800 multi-turn questions; RL rows pass
`parse_entry` and carry the loop's prompt; SFT rows are the real `bfcl_multi_turn` loop's token layout of the gold
trajectory; bad arguments fail before any work."""

from __future__ import annotations

import copy
import doctest
import json
from importlib import resources
from pathlib import Path

import pandas as pd
import pytest
from json_endpoint import JsonHandler, serving

from agentic_verl.agent_loops.bfcl_multi_turn import check_withheld_docs_absent
from agentic_verl.agent_loops.prompts import bfcl_added_functions_message, bfcl_multi_turn_messages
from agentic_verl.bfcl_env import venv as bfcl_venv
from agentic_verl.bfcl_env.client import BfclEnvClient
from agentic_verl.bfcl_env.data import multi_turn_files
from agentic_verl.bfcl_env.process import BfclEnvProcess
from agentic_verl.data.bfcl_multi_turn import bridge, core, dataset, near_duplicates, rewrite, rows, states
from agentic_verl.data.bfcl_multi_turn.overlap import BfclMultiTurnSet
from agentic_verl.data.function_calling import normalize_text
from agentic_verl.rewards.bfcl.multi_turn_entry import parse_entry

pytestmark = pytest.mark.skipif(not bfcl_venv.available(), reason="no .venv-bfcl (run `make bfcl-venv`)")
ALL_KINDS = list(dataset.KINDS)


@pytest.fixture(scope="module")
def tasks():
    """Twelve tasks of seed 0, three of each kind."""
    generated, _ = dataset.generate_tasks(0, 12, ALL_KINDS)
    return generated


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    out = tmp_path_factory.mktemp("bfcl_mt") / "seed0"
    stats = dataset.write_dataset(out, seed=0, count=8, kinds=ALL_KINDS)
    return out, stats


@pytest.fixture(scope="module")
def env_server(tmp_path_factory):
    """The BFCL environment server, whose /check is bfcl-eval's multi_turn_checker."""
    with BfclEnvProcess(log_path=tmp_path_factory.mktemp("bfcl_env") / "server.log") as server:
        yield server


async def _check(server, items: list[tuple[dict, list]]) -> list[dict]:
    """/check verdicts for (entry, calls [turn][step][{name, arguments}]) pairs, the entry as the reward sends it
    (`parse_entry`'s raw form of the task's RL row)."""
    client = BfclEnvClient(server.url)
    try:
        return [await client.check(entry=parse_entry(rows.rl_row(entry, 0)["extra_info"]).raw, model_calls=calls)
                for entry, calls in items]
    finally:
        await client.aclose()


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_the_same_seed_gives_the_same_bytes_and_another_seed_other_tasks(written, tmp_path):
    out, stats = written
    dataset.write_dataset(tmp_path / "again", seed=0, count=8, kinds=ALL_KINDS)
    dataset.write_dataset(tmp_path / "seed1", seed=1, count=8, kinds=ALL_KINDS)
    first, again, other = _files(out), _files(tmp_path / "again"), _files(tmp_path / "seed1")
    assert set(first) == {"rl.parquet", "stats.json", "trajectories.jsonl",
                          *(f"bfcl/{sub}gen_multi_turn_{kind}.json" for kind in ALL_KINDS
                            for sub in ("", "possible_answer/"))}
    assert first == again
    assert all(first[name] != other[name] for name in first if name != "stats.json")
    assert stats["tasks"] == 8 and stats["by_kind"] == {kind: 2 for kind in ALL_KINDS}
    questions = [json.loads(line)["question"] for name, blob in first.items() if name.startswith("bfcl/gen")
                 for line in blob.decode().splitlines()]
    others = [json.loads(line)["question"] for name, blob in other.items() if name.startswith("bfcl/gen")
              for line in blob.decode().splitlines()]
    assert not any(q in others for q in questions)


async def test_mutated_gold_trajectories_fail_bfcl_evals_checker(tasks, env_server):
    mutated, expected = [], []
    for task in tasks:
        entry, calls = task["entry"], task["trajectory"]["calls"]
        last = max(t for t, turn in enumerate(entry["ground_truth"]) if turn)
        emptied = copy.deepcopy(calls)
        emptied[last] = []
        mutated.append((entry, emptied))
        expected.append("multi_turn:empty_turn_model_response")
        changed = copy.deepcopy(calls)  # every string (else number) argument of the last turn's calls altered
        changed[last] = [[_alter_arguments(call) for call in step] for step in changed[last]]
        if changed[last] != calls[last]:
            mutated.append((entry, changed))
            expected.append(None)  # a state or a response mismatch, whichever the checker meets first
        mutated.append((entry, calls[:-1]))
        expected.append("multi_turn:force_terminated")
    assert expected.count(None) >= len(tasks) // 2
    verdicts = await _check(env_server, mutated)
    assert not any(v["valid"] for v in verdicts)
    for verdict, error_type in zip(verdicts, expected, strict=True):
        assert verdict["error_type"] == error_type if error_type else verdict["error_type"].startswith("multi_turn:")


async def test_the_environment_servers_check_accepts_every_gold_trajectory_as_the_reward_sends_it(tasks, env_server):
    """What the bfcl_multi_turn reward sends for a rollout that made the gold calls: the row's entry (`parse_entry`'s
    raw form) and the calls as the loop records them ({name, arguments} per step, through JSON)."""
    answers = await _check(env_server, [(t["entry"], json.loads(json.dumps(t["trajectory"]["calls"]))) for t in tasks])
    for task, answer in zip(tasks, answers, strict=True):
        assert answer["valid"] and answer["per_turn"] == [True] * len(task["entry"]["question"]), answer


def _alter_arguments(call: dict) -> dict:
    arguments = dict(call["arguments"])
    strings = [key for key, value in arguments.items() if isinstance(value, str)]
    numbers = [key for key, value in arguments.items() if isinstance(value, (int, float)) and not isinstance(value, bool)]
    for key in strings or numbers:  # no string argument: change the numbers
        arguments[key] += "_mutated" if strings else 7
    return {"name": call["name"], "arguments": arguments}


def test_no_task_equals_any_of_bfcls_multi_turn_questions(tasks):
    bfcl_questions, bfcl_turns, bfcl_states = [], set(), set()
    for path in multi_turn_files():
        for line in path.read_text().splitlines():
            entry = json.loads(line)
            bfcl_questions.append(entry["question"])
            bfcl_turns.update(normalize_text(m["content"]) for turn in entry["question"] for m in turn)
            bfcl_states.update(json.dumps(s, sort_keys=True) for s in entry["initial_config"].values())
    assert len(bfcl_questions) == 800
    for task in tasks:
        entry = task["entry"]
        assert entry["question"] not in bfcl_questions
        assert not {normalize_text(m["content"]) for turn in entry["question"] for m in turn} & bfcl_turns
        assert not {json.dumps(s, sort_keys=True) for s in entry["initial_config"].values()} & bfcl_states


def test_a_task_sharing_a_turn_with_bfcl_is_dropped_and_replaced(tasks, monkeypatch):
    first_turn = tasks[1]["entry"]["question"][0][0]["content"]
    real = BfclMultiTurnSet.load()
    assert real.overlap(tasks[1]["entry"]) == []
    planted = BfclMultiTurnSet(real.turn_texts | {normalize_text(first_turn)}, real.states, real.questions)
    assert planted.overlap(tasks[1]["entry"]) == ["turn 0"]
    monkeypatch.setattr(BfclMultiTurnSet, "load", classmethod(lambda cls: planted))
    kept, stats = dataset.generate_tasks(0, 3, ALL_KINDS)
    assert [t["entry"]["id"] for t in kept] == [tasks[0]["entry"]["id"], tasks[2]["entry"]["id"],
                                                tasks[3]["entry"]["id"]]
    assert stats["dropped_bfcl_overlap"] == 1 and stats["indices_tried"] == 4


BFCL_TURN = "Move 'final_report.pdf' within document directory to 'temp' directory in document. Make sure to create the directory"
# multi_turn_base_0's ground truth, its positional `sort('final_report.pdf')` written with the keyword
BFCL_CALLS = [["cd(folder='document')", "mkdir(dir_name='temp')", "mv(source='final_report.pdf', destination='temp')"],
              ["cd(folder='temp')", "grep(file_name='final_report.pdf', pattern='budget analysis')"],
              ["sort(file_name='final_report.pdf')"],
              ["cd(folder='..')", "mv(source='previous_report.pdf', destination='temp')", "cd(folder='temp')",
               "diff(file_name1='final_report.pdf', file_name2='previous_report.pdf')"]]


def _with_first_turn(task: dict, text: str) -> dict:
    task = copy.deepcopy(task)
    task["entry"]["question"][0] = [{"role": "user", "content": text}]
    return task


def _planted(tasks: list[dict]) -> dict[str, dict]:
    """Generated tasks made to share something with BFCL: a copied turn, a lightly paraphrased one (an opener and
    a word added, a word replaced), BFCL's whole call sequence; and two left as they are."""
    same_calls = copy.deepcopy(tasks[2])
    same_calls["entry"]["ground_truth"] = BFCL_CALLS
    return {"copied": _with_first_turn(tasks[0], BFCL_TURN.upper()),
            "paraphrased": _with_first_turn(tasks[1], "Please move 'final_report.pdf' within the document directory to "
                                                      "'temp' directory in document. Make sure you create the directory"),
            "same_calls": same_calls, "kept": tasks[3], "kept_too": tasks[4]}


def test_near_duplicates_of_bfcl_turns_and_its_call_sequences_are_found_unrelated_tasks_are_not(tasks):
    from agentic_verl.data.bfcl_multi_turn.near_duplicates import NEAR_THRESHOLD, similarity

    bfcl = BfclMultiTurnSet.load()
    planted = _planted(tasks)
    assert [kind for kind, _ in bfcl.findings(planted["copied"]["entry"])] == ["turn_text_equal"]
    (kind, what), = bfcl.findings(planted["paraphrased"]["entry"])
    assert kind == "turn_text_near" and "multi_turn_" in what
    paraphrase = planted["paraphrased"]["entry"]["question"][0][0]["content"]
    assert NEAR_THRESHOLD <= similarity(paraphrase, BFCL_TURN) < 1.0
    assert bfcl.findings(planted["same_calls"]["entry"]) == [("call_sequence_equal",
                                                              "calls = multi_turn_base_0's ground truth")]
    one_call_less = copy.deepcopy(planted["same_calls"]["entry"])
    one_call_less["ground_truth"][3] = one_call_less["ground_truth"][3][:-1]
    assert bfcl.findings(one_call_less) == []  # a call sequence is a copy only when all of it is
    assert bfcl.findings(planted["kept"]["entry"]) == bfcl.findings(planted["kept_too"]["entry"]) == []


def test_the_generator_drops_tasks_that_share_something_with_bfcl_and_counts_them_by_kind(tasks, monkeypatch):
    planted = list(_planted(tasks).values())

    def generate(seed, start, count, kinds, classes=None):  # the planted tasks in index order
        return planted[start:start + count], [], {}

    monkeypatch.setattr(bridge, "generate", generate)
    kept, stats = dataset.generate_tasks(0, 2, ALL_KINDS)
    assert [t["entry"]["id"] for t in kept] == [tasks[3]["entry"]["id"], tasks[4]["entry"]["id"]]
    assert stats["dropped_bfcl_overlap"] == 3 and stats["indices_tried"] == 5
    assert stats["dropped_bfcl_overlap_by_kind"] == {"turn_text_equal": 1, "turn_text_near": 1, "state_equal": 0,
                                                     "call_sequence_equal": 1}


def test_rl_rows_are_the_bfcl_multi_turn_row_schema(written):
    out, _ = written
    frame = pd.read_parquet(out / "rl.parquet")
    trajectories = [json.loads(line) for line in (out / "trajectories.jsonl").read_text().splitlines()]
    assert len(frame) == len(trajectories) == 8
    kinds = set()
    for row, trajectory in zip(frame.to_dict("records"), trajectories, strict=True):
        entry = parse_entry(row["extra_info"], need_ground_truth=True)
        kinds.add(row["extra_info"]["kind"])
        assert row["agent_name"] == "bfcl_multi_turn" and entry.id == trajectory["id"]
        assert json.loads(row["reward_model"]["ground_truth"]) == entry.ground_truth
        prompt = [dict(m) for m in row["prompt"]]
        assert prompt == bfcl_multi_turn_messages(entry.question[0], entry.functions_at_start())
        check_withheld_docs_absent(prompt, entry)
        assert entry.long_context == (row["extra_info"]["kind"] == "long_context") == ("long_context" in entry.id)
        assert entry.ground_truth == [[c for step in turn for c in step] for turn in trajectory["steps"]]
        if row["extra_info"]["kind"] == "miss_func":
            (turn, docs), = entry.missed_function.items()
            assert entry.question[turn] == [] and entry.ground_truth[turn - 1] == []
            assert docs[0]["name"] in {c.split("(")[0] for c in entry.ground_truth[turn]}
        if row["extra_info"]["kind"] == "miss_param":
            asked = next(t for t, calls in enumerate(entry.ground_truth) if not calls)
            assert entry.ground_truth[asked + 1] and trajectory["assistant"][asked][-1].endswith("?")
    assert kinds == set(ALL_KINDS)
    for kind in ALL_KINDS:  # bfcl-eval's layout: one question file and one answer file per kind, ids in step
        questions = [json.loads(line) for line in
                     (out / "bfcl" / f"gen_multi_turn_{kind}.json").read_text().splitlines()]
        answers = [json.loads(line) for line in
                   (out / "bfcl" / "possible_answer" / f"gen_multi_turn_{kind}.json").read_text().splitlines()]
        assert [q["id"] for q in questions] == [a["id"] for a in answers] and len(questions) == 2
        assert all(rows.kind_of(q) == kind and set(q) >= {"question", "initial_config", "involved_classes", "path",
                                                          "function"} for q in questions)
        assert all(isinstance(name, str) for q in questions for names in q.get("missed_function", {}).values()
                   for name in names)


def test_sft_rows_are_the_loops_token_layout_of_the_gold_trajectory(tasks):
    from transformers import AutoTokenizer

    from agentic_verl.cpu.models import qwen_tokenizer_dir
    from agentic_verl.data.bfcl_multi_turn.sft import ReplayMismatch, build_rows
    from agentic_verl.data.sft_steps import mask_runs

    tokenizer = AutoTokenizer.from_pretrained(str(qwen_tokenizer_dir()))
    chosen = [t for t in tasks if "long_context" not in t["entry"]["id"]][:3]
    assert [rows.kind_of(t["entry"]) for t in chosen] == ["base", "miss_func", "miss_param"]
    rl = [rows.rl_row(t["entry"], i) for i, t in enumerate(chosen)]
    entries, trajectories = [t["entry"] for t in chosen], [t["trajectory"] for t in chosen]
    built = build_rows(rl, entries, trajectories, tokenizer=tokenizer, hf_model_type="qwen2")
    assert built == build_rows(rl, entries, trajectories, tokenizer=tokenizer, hf_model_type="qwen2")
    for row, entry, trajectory in zip(built, entries, trajectories, strict=True):
        runs = mask_runs(row["loss_mask"])
        policy = [tokenizer.decode(row["input_ids"][s:e]) for learned, s, e in runs if learned]
        assert policy == [text + "<|im_end|>" for turn in trajectory["assistant"] for text in turn]
        context = tokenizer.decode(row["input_ids"])
        prompt_end = runs[0][2]
        assert tokenizer.decode(row["input_ids"][:prompt_end]) == tokenizer.apply_chat_template(
            rl[built.index(row)]["prompt"], add_generation_prompt=True, tokenize=False)
        assert all(o in context for turn in trajectory["outputs"] for step in turn for o in step)
        for turn in entry["question"][1:]:
            for message in turn:
                assert f"<|im_start|>user\n{message['content']}<|im_end|>" in context
        if "missed_function" in entry:
            (turn, names), = entry["missed_function"].items()
            docs = [d for d in entry["function"] if d["name"] in names]
            assert bfcl_added_functions_message(docs)["content"] in context
            first_doc = context.index(json.dumps({"name": names[0]})[1:-1])  # only in the added-functions turn
            assert first_doc > context.index(entry["question"][0][0]["content"])

    broken = copy.deepcopy(trajectories[0])  # base: the policy's first step calls something else than the gold
    broken["assistant"][0][0] = broken["assistant"][0][0].replace("(", "(x=1, ", 1).replace("(x=1, )", "(x=1)")
    with pytest.raises(ReplayMismatch, match="gold step 0"):
        build_rows(rl[:1], entries[:1], [broken], tokenizer=tokenizer, hf_model_type="qwen2")


def test_the_command_writes_sft_rows_our_sft_dataset_reads(smollm2_dir, tmp_path, capsys):
    from agentic_verl.cli import main
    from agentic_verl.training.sft_dataset import PretokenizedSFTDataset

    out = tmp_path / "out"
    assert main(["data", "bfcl-multi-turn", "--out", str(out), "--seed", "3", "--count", "2", "--kinds", "base",
                 "miss_param", "--classes", "MessageAPI", "TicketAPI", "--tokenizer", str(smollm2_dir),
                 "--sft-max-tokens", "100000"]) == 0
    assert "2 tasks" in capsys.readouterr().out
    frame = pd.read_parquet(out / "sft.parquet")
    rl = pd.read_parquet(out / "rl.parquet")
    assert list(frame["id"]) == [info["id"] for info in rl["extra_info"]] == ["gen3_multi_turn_base_0",
                                                                             "gen3_multi_turn_miss_param_1"]
    assert all(set(info["involved_classes"]) <= {"MessageAPI", "TicketAPI"} for info in rl["extra_info"])
    stats = json.loads((out / "stats.json").read_text())
    assert stats["classes"] == ["MessageAPI", "TicketAPI"] and stats["sft"]["rows"] == 2
    assert stats["sft"]["dropped_too_long"] == 0 and stats["sft"]["tokens"] == int(frame["num_tokens"].sum())
    from transformers import AutoTokenizer

    data = PretokenizedSFTDataset(str(out / "sft.parquet"), AutoTokenizer.from_pretrained(str(smollm2_dir)),
                                  {"max_length": int(frame["num_tokens"].max())})
    assert len(data) == 2 and int(data[1]["loss_mask"].sum()) == int(frame["num_target_tokens"][1])

    shortest = int(frame["num_tokens"].min())  # --sft-max-tokens leaves the longer row out, and counts it
    assert frame["num_tokens"].max() > shortest
    stats = dataset.write_dataset(tmp_path / "short", seed=3, count=2, kinds=["base", "miss_param"],
                                  classes=["MessageAPI", "TicketAPI"], tokenizer=str(smollm2_dir),
                                  sft_max_tokens=shortest)
    assert stats["sft"]["rows"] == 1 and stats["sft"]["dropped_too_long"] == 1
    assert list(pd.read_parquet(tmp_path / "short" / "sft.parquet")["num_tokens"]) == [shortest]


def test_bad_arguments_fail_before_any_work(tmp_path, monkeypatch, capsys):
    from agentic_verl.cli import main

    out = tmp_path / "out"
    base = ["data", "bfcl-multi-turn", "--out", str(out)]
    cases = [(["--no-sft", "--seed", "-1", "--count", "2"], "seed must be an integer >= 0, got -1"),
             (["--no-sft", "--seed", "0", "--count", "0"], "count must be an integer >= 1, got 0"),
             (["--no-sft", "--seed", "0", "--count", "2", "--kinds", "base", "sideways"], "kinds must be distinct"),
             (["--no-sft", "--seed", "0", "--count", "2", "--kinds", "base", "base"], "kinds must be distinct"),
             (["--no-sft", "--seed", "0", "--count", "2", "--classes", "Kitchen"], "classes must be distinct"),
             (["--no-sft", "--seed", "0", "--count", "2", "--endpoint", "http://127.0.0.1:9"], "go together"),
             (["--no-sft", "--seed", "0", "--count", "2", "--sft-max-tokens", "900"], "comes with --tokenizer"),
             (["--seed", "0", "--count", "2", "--tokenizer", str(tmp_path / "nowhere")], "is not a folder")]
    for extra, message in cases:
        assert main(base + extra) == 2
        assert message in capsys.readouterr().err
    with pytest.raises(SystemExit):  # argparse: one of --tokenizer / --no-sft is required
        main(base + ["--seed", "0", "--count", "2"])
    assert "one of the arguments --tokenizer --no-sft is required" in capsys.readouterr().err
    monkeypatch.setenv(bfcl_venv.VENV_ENV, str(tmp_path / "no-venv"))
    assert main(base + ["--no-sft", "--seed", "0", "--count", "2"]) == 2
    assert "create it with `make bfcl-venv`" in capsys.readouterr().err
    assert not out.exists()


class _Rewriter(JsonHandler):
    """An OpenAI-compatible judge: prefixes 'Hi there,' to requests of odd length and drops the quoted values of
    the others."""

    served_models = ("judge",)

    def do_POST(self):  # noqa: N802 - http.server's naming
        text = self.read_json()["messages"][0]["content"].split("Request: ", 1)[1]
        reply = rewrite._QUOTED.sub("it", text) if len(text) % 2 == 0 else "Hi there, " + text[0].lower() + text[1:]
        self.send_json({"choices": [{"message": {"content": reply}}]})


def test_judge_rewrites_keep_every_value_or_are_rejected(tasks, tmp_path):
    from agentic_verl.data.fcdr.judge import JudgeClient

    with serving(_Rewriter) as url:
        judge = JudgeClient(url, "judge", cache_dir=tmp_path / "cache")
        rewritten, counts = dataset.generate_tasks(0, 4, ALL_KINDS, judge=judge)
    before = [m["content"] for t in tasks[:4] for turn in t["entry"]["question"] for m in turn]
    after = [m["content"] for t in rewritten for turn in t["entry"]["question"] for m in turn]
    assert [t["trajectory"] for t in rewritten] == [t["trajectory"] for t in tasks[:4]]  # the gold is the same
    assert counts["rewrites_kept"] + counts["rewrites_rejected"] == len(before)
    assert counts["rewrites_kept"] > 0 and counts["rewrites_rejected"] > 0
    for old, new in zip(before, after, strict=True):
        assert new == (old if len(old) % 2 == 0 else "Hi there, " + old[0].lower() + old[1:])


@pytest.mark.parametrize("module", [core, states, rewrite, near_duplicates])
def test_doctests(module):
    assert doctest.testmod(module).failed == 0


def test_bfcl_files_are_the_installed_ones():
    assert multi_turn_files()[0].parent == Path(str(resources.files("bfcl_eval") / "data"))
