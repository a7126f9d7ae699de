"""`eval qa` names each question file's dataset: known dataset file names win over their folder, and two files that
would be merged under one name are refused (before any engine or server is needed) unless they are splits of one
dataset."""

from __future__ import annotations

import doctest
import json
from collections import Counter

import pytest

from agentic_verl.eval import qa_eval
from agentic_verl.eval.qa_eval import QAEvalSettings, load_datasets


def write_questions(path, n=2, data_source=None):
    path.parent.mkdir(parents=True, exist_ok=True)
    records = [{"id": f"{path.stem}{i}", "question": f"question {i} of {path}", "golden_answers": ["x"],
                **({"data_source": data_source} if data_source else {})} for i in range(n)]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return str(path)


def datasets(files, **kw) -> Counter:
    """{dataset: questions} as eval qa would report them (no server or model needed to name them)."""
    settings = QAEvalSettings(data=files, retrieval_url="http://127.0.0.1:1", endpoint="http://127.0.0.1:1",
                              model_name="m", **kw)
    return Counter(dataset for dataset, _, _ in load_datasets(settings))


@pytest.mark.parametrize(
    ("layout", "expected"),
    [
        # two datasets in one folder, named by their files (before: both "flashrag", 4 questions merged)
        (["flashrag/nq.jsonl", "flashrag/hotpotqa.jsonl"], {"nq": 2, "hotpotqa": 2}),
        # FlashRAG's layout: the folder names the dataset
        (["flashrag/nq/test.jsonl", "flashrag/hotpotqa/dev.jsonl"], {"nq": 2, "hotpotqa": 2}),
        # other spellings of a known dataset are the same dataset, as file or as folder
        (["data/natural_questions.jsonl", "data/hotpot_qa/dev.jsonl"], {"nq": 2, "hotpotqa": 2}),
        # a known dataset's file name wins over a folder that is not a dataset; the other file keeps its folder
        (["mine/popqa.jsonl", "mine/custom.jsonl"], {"popqa": 2, "mine": 2}),
        # two splits of one dataset are scored together, as that dataset
        (["flashrag/nq/dev.jsonl", "flashrag/nq/test.jsonl"], {"nq": 4}),
        # ... also of a dataset we do not know
        (["mydata/train.jsonl", "mydata/test.jsonl"], {"mydata": 4}),
    ],
)
def test_files_name_their_datasets(tmp_path, layout, expected):
    assert datasets([write_questions(tmp_path / f) for f in layout]) == expected


@pytest.mark.parametrize(
    "layout",
    [
        ["data/a.jsonl", "data/b.jsonl"],  # two unknown files in one folder: both would be "data"
        ["flashrag/nq.jsonl", "flashrag/nq/test.jsonl"],  # nq by its file and nq by its folder: the same data twice?
        ["old/nq/test.jsonl", "new/nq/test.jsonl"],  # the same split of one dataset twice
        ["a/nq.jsonl", "b/nq.jsonl"],  # two files named after one dataset
        ["nq/test.jsonl", "nq/extra.jsonl"],  # extra.jsonl is not a split name: another dataset in nq/?
    ],
)
def test_files_that_would_merge_under_one_name_are_refused(tmp_path, layout):
    files = [write_questions(tmp_path / f) for f in layout]
    with pytest.raises(ValueError, match="scored as one dataset") as error:
        datasets(files)
    message = str(error.value)
    assert all(f in message for f in files)  # names the files ...
    assert "--data-source" in message and "<dataset>/<split>.jsonl" in message  # ... and the ways out


def test_records_with_their_own_data_source_are_not_named_by_their_file(tmp_path):
    files = [write_questions(tmp_path / "data/a.jsonl", data_source="NQ"),
             write_questions(tmp_path / "data/b.jsonl", data_source="musique")]
    assert datasets(files) == {"nq": 2, "musique": 2}
    # a file only some of whose records name their dataset is named for the others
    mixed = tmp_path / "data/c.jsonl"
    mixed.write_text(json.dumps({"id": "c", "question": "q", "golden_answers": ["x"]}) + "\n")
    with pytest.raises(ValueError, match="scored as one dataset"):
        datasets([write_questions(tmp_path / "data/d.jsonl"), str(mixed)])


def test_data_source_names_a_single_file(tmp_path):
    assert datasets([write_questions(tmp_path / "data/a.jsonl")], data_source="Bamboogle") == {"bamboogle": 2}


def test_a_file_and_folder_naming_two_known_datasets_is_refused(tmp_path):
    with pytest.raises(ValueError, match="its file name says dataset 'nq', its folder 'hotpotqa'"):
        datasets([write_questions(tmp_path / "hotpotqa/nq.jsonl")])


def test_a_file_given_twice_is_refused(tmp_path):
    path = write_questions(tmp_path / "nq/test.jsonl")
    with pytest.raises(ValueError, match="given twice"):
        datasets([path, str(tmp_path / "nq" / ".." / "nq" / "test.jsonl")])


def test_docstring_examples():
    result = doctest.testmod(qa_eval)
    assert result.attempted > 0 and result.failed == 0
