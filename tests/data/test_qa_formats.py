"""Question-file loaders, on small files in each published format written by the tests."""

from __future__ import annotations

import json

import pytest

from agentic_verl.data.qa_formats import FORMATS, load_questions


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.mark.parametrize(
    "name, content, expected",
    [
        # FlashRAG JSONL (NQ, HotpotQA, ... and RAG-R1's RL data): metadata kept
        ("nq/test.jsonl", [{"id": "test_0", "question": "who sings x", "golden_answers": ["A", "B"],
                            "metadata": {"k": 1}}, {"id": "test_1", "question": "q2", "golden_answers": ["C"]}],
         [("test_0", "who sings x", ["A", "B"]), ("test_1", "q2", ["C"])]),
        # NQ-open: `answer` is a list, no id -> line number
        ("nq_open.jsonl", [{"question": "where is y", "answer": ["Z", "Z ", ""]}], [("0", "where is y", ["Z"])]),
        # MuSiQue: answer + aliases; unanswerable questions dropped
        ("musique.jsonl", [{"id": "2hop_1", "question": "q", "answer": "Paris", "answer_aliases": ["City of Light"],
                            "answerable": True},
                           {"id": "2hop_2", "question": "q?", "answer": "", "answer_aliases": [], "answerable": False}],
         [("2hop_1", "q", ["Paris", "City of Light"])]),
    ],
)
def test_jsonl_formats(tmp_path, name, content, expected):
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    records = load_questions(_jsonl(path, content))
    assert [(r["id"], r["question"], r["golden_answers"]) for r in records] == expected


def test_flashrag_keeps_extra_fields(tmp_path):
    path = _jsonl(tmp_path / "t.jsonl", [{"id": "a", "question": "q", "golden_answers": ["x"], "hops": 2}])
    assert load_questions(path)[0]["hops"] == 2


def test_hotpotqa_original_json(tmp_path):
    path = tmp_path / "hotpot_dev_distractor_v1.json"
    path.write_text(json.dumps([{"_id": "5a8b", "question": "Which magazine was started first?", "answer": "Arthur's",
                                 "type": "comparison", "level": "medium", "supporting_facts": [], "context": []}]))
    (rec,) = load_questions(path)
    assert rec == {"id": "5a8b", "question": "Which magazine was started first?", "golden_answers": ["Arthur's"],
                   "type": "comparison", "level": "medium"}


def test_triviaqa_rc_json(tmp_path):
    path = tmp_path / "web-dev.json"
    path.write_text(json.dumps({"Data": [{"QuestionId": "tc_1", "Question": "Which Lloyd Webber musical?",
                                          "Answer": {"Value": "Sunset Boulevard", "Aliases": ["Sunset Blvd"]}}],
                                "Version": 1.0}))
    assert load_questions(path)[0]["golden_answers"] == ["Sunset Boulevard", "Sunset Blvd"]


def test_explicit_format_and_limit(tmp_path):
    path = _jsonl(tmp_path / "x.jsonl", [{"question": f"q{i}", "answer": [str(i)]} for i in range(5)])
    assert len(load_questions(path, fmt="nq_open", limit=2)) == 2


@pytest.mark.parametrize(
    "rows, error",
    [
        ([{"text": "no question here"}], "unknown question format"),  # nothing matches
        ([{"id": "1", "question": "q", "golden_answers": []}], "without a question or an answer"),  # empty gold
    ],
)
def test_bad_files_raise_a_clear_error(tmp_path, rows, error):
    with pytest.raises(ValueError, match=error):
        load_questions(_jsonl(tmp_path / "bad.jsonl", rows))


def test_unknown_format_name_lists_the_known_ones(tmp_path):
    path = _jsonl(tmp_path / "x.jsonl", [{"question": "q", "answer": ["a"]}])
    with pytest.raises(ValueError, match="flashrag"):
        load_questions(path, fmt="nope")
    assert {"flashrag", "hotpot", "nq_open", "musique", "triviaqa"} == set(FORMATS)


def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError):
        load_questions(tmp_path / "absent.jsonl")
