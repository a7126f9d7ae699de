"""FCDR (`agentic-verl data refine-fc`): verdict parsing and the rule-based checks, table-driven; the pipeline's
branches, cache, retries and endpoint errors through a scripted judge on a loopback HTTP server (the real client,
cache and report code; tests/data/test_fcdr_vllm.py runs the same against a real model served by `vllm serve`)."""

from __future__ import annotations

import json

import pytest
from fcdr_helpers import judge_server  # tests/data is on sys.path (rootdir conftest, no packages)

from agentic_verl.data.fcdr import EndpointError, RefineSettings, check_calls, check_format, parse_verdict, refine
from agentic_verl.data.fcdr.pipeline import COLUMNS, STAGES, format_report, make_sample
from agentic_verl.data.function_calling import xlam_record

ADD = {"name": "add", "description": "Add two integers.",
       "parameters": {"a": {"type": "int", "description": "first"}, "b": {"type": "int", "description": "second"}}}
GOOD = "<think>The user adds 1 and 2, so I call add.</think>\n\n[add(a=1, b=2)]"


def entry(i, marker="", response=GOOD, answers=None):
    return {"id": i, "query": f"Add 1 and 2 (#{i}). {marker}".strip(), "tools": [ADD], "response": response,
            "answers": [{"name": "add", "arguments": {"a": 1, "b": 2}}] if answers is None else answers}


def sample(response, answers=None):
    return make_sample(xlam_record(entry(0, answers=answers)), response)


# ---- parsing ------------------------------------------------------------------------------------------------------

YES_NO, CALL_TEXT = ("yes", "no"), ("call", "text")


@pytest.mark.parametrize("reply,choices,expected", [
    ("The functions fit.\nVERDICT: YES", YES_NO, "yes"),  # the documented last line
    ("verdict: no", YES_NO, "no"),  # any case
    ("**Verdict:** Yes", YES_NO, "yes"),  # markdown bold
    ('{"verdict": "call"}', CALL_TEXT, "call"),  # JSON
    ("VERDICT: YES\nOn second thought...\nVERDICT: NO", YES_NO, "no"),  # the last verdict line wins
    ("No.", YES_NO, "no"),  # a reply that is one choice word
    ("  `TEXT`  ", CALL_TEXT, "text"),  # ... also in backticks
    ("<think>VERDICT: NO</think>\nVERDICT: YES", YES_NO, "yes"),  # a reasoning judge's thoughts do not count
    ("<think>VERDICT: YES", YES_NO, None),  # unclosed thinking: unreadable, not "yes"
    ("<think>VERDICT: YES</think> I cannot decide.", YES_NO, None),  # the verdict only inside the thoughts
    ("Yes, the tools fit.", YES_NO, None),  # prose without a verdict line
    ("VERDICT: MAYBE", YES_NO, None),  # a word outside the choices is never a default
    ("VERDICT: YES", CALL_TEXT, None),  # the wrong vocabulary for this check
    ("VERDICT:", YES_NO, None),  # empty verdict
    ("", YES_NO, None),  # empty reply
    (None, YES_NO, None),  # not text
])
def test_parse_verdict(reply, choices, expected):
    assert parse_verdict(reply, choices) == expected


@pytest.mark.parametrize("response,expected", [
    (GOOD, None),  # the reference call
    ("<think>t</think>\n\n[add(b=2, a=1)]", None),  # keyword order does not matter
    ("[add(a=1, b=2)]", None),  # no reasoning: a format problem (check 5), the calls are right
    ("<think>t</think>\n\n[add(a=1, b=3)]", "value_error:others"),  # wrong value
    ("<think>t</think>\n\n[add(a=1)]", "simple_function_checker:missing_required"),  # missing parameter
    ("<think>t</think>\n\n[sub(a=1, b=2)]", "simple_function_checker:wrong_func_name"),  # wrong function
    ("<think>t</think>\n\n[add(a=1, b=2), add(a=1, b=2)]", "simple_function_checker:wrong_count"),  # two calls
    ("<think>t</think>\n\n[add(a=__import__('os').system('x'), b=2)]", "type_error:simple"),  # read as text
    ("", "fcdr:no_response"),  # no response at all
    (None, "fcdr:no_response"),
])
def test_check_calls(response, expected):
    assert check_calls(sample(response)) == expected


def test_check_calls_skips_plain_text_references():
    assert check_calls(sample("<think>none fits</think>\n\nI cannot help.", answers=[])) is None


@pytest.mark.parametrize("response,answers,expected", [
    (GOOD, None, None),  # <think>...</think>, a blank line, the call list
    ("[add(a=1, b=2)]", None, "fc_format:missing_think"),  # no reasoning
    ("<think>t</think>[add(a=1, b=2)]", None, "fc_format:separator"),  # SRML splits at </think>\n\n
    ("<think>t</think>\n\n\n[add(a=1, b=2)]", None, "fc_format:separator"),  # more than one blank line
    ("<think>  </think>\n\n[add(a=1, b=2)]", None, "fc_format:empty_think"),  # empty reasoning
    ("<think>t\n\n[add(a=1, b=2)]", None, "fc_format:unclosed_think"),  # unclosed
    ("<think>a</think><think>b</think>\n\n[add(a=1, b=2)]", None, "fc_format:multiple_think"),  # two blocks
    ("<think>t</think>\n\n", None, "fc_format:missing_output"),  # nothing after the reasoning
    ("<think>t</think>\n\n[add(a=1, b=2", None, "fc_format:undecodable_call"),  # a broken call
    ("<think>t</think>\n\nThe answer is 3.", None, "fc_format:no_call"),  # prose where a call is the reference
    ("<think>no tool fits</think>\n\nI cannot help.", [], None),  # prose is right for a plain-text reference
    ("", None, "fcdr:no_response"),
])
def test_check_format(response, answers, expected):
    assert check_format(sample(response, answers)) == expected


def test_check_format_lenient_separator():
    assert check_format(sample("<think>t</think> [add(a=1, b=2)]"), strict_separator=False) is None


# ---- the pipeline through a scripted judge ------------------------------------------------------------------------

WRONG_CALL = "<think>I add 2 and 2.</think>\n\n[add(a=2, b=2)]"
INPUTS = [
    (entry(0), "kept"),
    (entry(1, "[text]"), "kept_plain_text"),
    (entry(2, "[unsolvable]"), "dropped"),  # check 2: no
    (entry(3, "[bad-cot]"), "dropped"),  # check 3: no
    (entry(4, "[garbled:is_call]"), "dropped"),  # check 1 unparseable
    (entry(5, "[garbled:solvable]"), "dropped"),  # check 2 unparseable
    (entry(6, response=WRONG_CALL), "regenerated"),  # check 4 fails, the rewrite passes 3-5
    (entry(7, response="[add(a=1, b=2)]"), "regenerated"),  # no reasoning: check 3 skipped, check 5 fails
    (entry(8, "[regen-bad]", response=WRONG_CALL), "dropped"),  # both rewrites fail check 4
    (entry(9, "[garbled:reasoning]", response="[add(a=1, b=3)]"), "dropped"),  # the rewrite's check 3 unreadable
]
EXPECTED_STAGES = {  # in, passed, kept, dropped, regenerate, unparseable
    "is_call": (10, 8, 1, 0, 0, 1),
    "solvable": (8, 6, 0, 1, 0, 1),
    "reasoning": (6, 5, 0, 1, 0, 0),
    "calls": (5, 2, 0, 0, 3, 0),
    "format": (2, 1, 0, 0, 1, 0),
    "regenerate": (4, 0, 2, 1, 0, 1),
}


@pytest.fixture()
def judge():
    with judge_server() as server:
        yield server


@pytest.fixture()
def inputs(tmp_path):
    path = tmp_path / "samples.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e, _ in INPUTS) + '{"id": 10, "query": ""}\n')
    return path


def settings(url, **kw):
    return RefineSettings(endpoint=url, model_name="judge", backoff_s=0.01, max_regenerations=2, **kw)


def test_every_branch_and_the_report(judge, inputs, tmp_path):
    out = tmp_path / "out"
    report = refine([str(inputs)], out, settings(judge.url))
    assert report["samples"] == 10 and report["unreadable"] == {"malformed": 1}  # the entry without a query
    assert report["outcomes"] == {"kept": 1, "kept_plain_text": 1, "regenerated": 2, "dropped": 6}
    for stage in STAGES:
        counts = report["stages"][stage]
        assert tuple(counts[c] for c in COLUMNS) == EXPECTED_STAGES[stage], stage
        assert counts["in"] == sum(counts[c] for c in COLUMNS[1:])  # every sample leaves each stage one way
    assert report["dropped_by_reason"] == {
        "is_call:unparseable": 1, "solvable:no": 1, "solvable:unparseable": 1, "reasoning:no": 1,
        "regenerate:value_error:others": 1, "regenerate:reasoning:unparseable": 1}
    # 10 x check 1, 8 x check 2, 4 x check 3 (two samples have no reasoning); rewrites (+ check 3
    # when the rules pass): samples 6, 7: 2 requests each; 8: 2 rewrites; 9: 2 rewrites + 1 check 3 (the second
    # rewrite is the same text as the first: its check-3 request is answered from the cache)
    assert judge.posts() == report["judge"]["requests"] == 10 + 8 + 4 + 2 + 2 + 2 + 3
    assert report["judge"]["cache_hits"] == 1

    kept = [json.loads(line) for line in (out / "refined.jsonl").read_text().splitlines()]
    dropped = [json.loads(line) for line in (out / "dropped.jsonl").read_text().splitlines()]
    expected = {str(e["id"]): outcome for e, outcome in INPUTS}
    assert {k["id"]: k["fcdr"]["outcome"] for k in kept} == {i: o for i, o in expected.items() if o != "dropped"}
    assert sorted(d["id"] for d in dropped) == sorted(f"xlam_{i}" for i, o in expected.items() if o == "dropped")
    regenerated = next(k for k in kept if k["id"] == "6")
    assert regenerated["response"] == GOOD and regenerated["reasoning"].startswith("The user adds")
    assert regenerated["fcdr"]["attempts"] == 1
    assert next(d for d in dropped if d["id"] == "xlam_4")["reply"] == "I am not sure what you mean."
    assert json.loads((out / "report.json").read_text())["outcomes"] == report["outcomes"]
    table = format_report(report)
    assert "| 1 reference is a call (judge) | 10 | 8 | 1 | 0 | 0 | 1 |" in table

    # the refined file is input for `data fc` (and for another FCDR round)
    from agentic_verl.data.fc_parquet import convert

    stats = convert([str(out / "refined.jsonl")], tmp_path / "sft", exclude_eval=["none"], val_fraction=0.0)
    assert stats["files"]["sft_train"]["rows"] == len(kept) == 4


def test_second_run_answers_from_the_cache(judge, inputs, tmp_path):
    first = refine([str(inputs)], tmp_path / "a", settings(judge.url, cache_dir=str(tmp_path / "cache")))
    sent = judge.posts()
    second = refine([str(inputs)], tmp_path / "b", settings(judge.url, cache_dir=str(tmp_path / "cache")))
    assert judge.posts() == sent  # no new request
    assert second["judge"]["requests"] == 0
    assert second["judge"]["cache_hits"] == first["judge"]["requests"] + first["judge"]["cache_hits"]
    assert (second["outcomes"], second["stages"]) == (first["outcomes"], first["stages"])
    assert (tmp_path / "a" / "refined.jsonl").read_text() == (tmp_path / "b" / "refined.jsonl").read_text()
    # and without the server at all
    offline = refine([str(inputs)], tmp_path / "c", RefineSettings(model_name="judge", cache_only=True,
                                                                   cache_dir=str(tmp_path / "cache")))
    assert offline["outcomes"] == first["outcomes"]
    # another judge model shares nothing with it
    with pytest.raises(EndpointError, match="no cached reply"):
        refine([str(inputs)], tmp_path / "d", RefineSettings(model_name="other", cache_only=True,
                                                             cache_dir=str(tmp_path / "cache")))


def test_identical_requests_are_sent_once(judge, tmp_path):
    path = tmp_path / "twice.jsonl"
    path.write_text(json.dumps(entry(0)) + "\n" + json.dumps(entry(0)) + "\n")  # the same sample twice
    report = refine([str(path)], tmp_path / "out", settings(judge.url))
    assert report["outcomes"]["kept"] == 2
    assert judge.posts() == report["judge"]["requests"] == 3 and report["judge"]["cache_hits"] == 3  # checks 1-3


def test_server_errors_are_retried_with_backoff(judge, inputs, tmp_path):
    judge.fail_next = 3
    report = refine([str(inputs)], tmp_path / "out", settings(judge.url, limit=2, concurrency=1))
    assert report["judge"]["retries"] == 3
    assert report["judge"]["requests"] == judge.posts() == 3 + 3 + 1  # 3 failures; sample 0: checks 1-3, sample 1: check 1
    assert report["outcomes"]["kept"] + report["outcomes"]["kept_plain_text"] == 2


def test_a_request_failing_after_its_retries_stops_the_run(judge, inputs, tmp_path):
    judge.fail_next = 10
    with pytest.raises(EndpointError, match=r"no answer after 2 tries \(HTTP 503: warming up\)"):
        refine([str(inputs)], tmp_path / "out", settings(judge.url, max_retries=1, limit=1))


def test_unreachable_endpoint_fails_before_any_work(inputs, tmp_path):
    from agentic_verl.net import free_port

    out = tmp_path / "out"
    with pytest.raises(EndpointError, match="cannot reach the OpenAI-compatible endpoint"):
        refine([str(inputs)], out, settings(f"http://127.0.0.1:{free_port()}"))
    assert not out.exists()


def test_wrong_model_name_fails_before_any_work(judge, inputs, tmp_path):
    out = tmp_path / "out"
    with pytest.raises(EndpointError, match=r"does not serve 'gpt-4o'; it serves \['judge'\]"):
        refine([str(inputs)], out, RefineSettings(endpoint=judge.url, model_name="gpt-4o"))
    assert not out.exists() and judge.posts() == 0


def test_cli(judge, inputs, tmp_path, capsys):
    from agentic_verl.cli import main

    out = tmp_path / "out"
    args = ["data", "refine-fc", "--input", str(inputs), "--out", str(out), "--model-name", "judge", "--backoff", "0"]
    assert main([*args, "--endpoint", judge.url]) == 0
    printed = capsys.readouterr().out
    assert "| 5 format (<think> + calls) | 2 | 1 | 0 | 0 | 1 | 0 |" in printed and "2 regenerated" in printed
    assert main([*args, "--endpoint", "http://127.0.0.1:9"]) == 2
    assert "refine-fc: error: cannot reach" in capsys.readouterr().err


def test_custom_prompts_folder(judge, inputs, tmp_path):
    from agentic_verl.data.fcdr import load_prompts

    folder = tmp_path / "prompts"
    folder.mkdir()
    with pytest.raises(FileNotFoundError, match="is_call.yaml"):
        load_prompts(folder)
    for name in ("is_call", "solvable", "reasoning", "regenerate"):
        (folder / f"{name}.yaml").write_text("user: |\n  $query\n")
    prompts = load_prompts(folder)
    assert prompts["is_call"] == {"system": "", "user": "$query\n"}
