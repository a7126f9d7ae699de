"""The toy world: deterministic files, answers only in the corpus, questions answerable by search."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentic_verl.data.toy_world import build_world, write_world


def _read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture(scope="module")
def world():
    return build_world(seed=3, n_people=40)


def test_same_seed_gives_byte_identical_files(tmp_path):
    a, b = write_world(build_world(7, 30), tmp_path / "a"), write_world(build_world(7, 30), tmp_path / "b")
    assert set(a) == {"corpus", "train", "test", "world"}
    for name in a:
        assert a[name].read_bytes() == b[name].read_bytes(), name


def test_different_seed_gives_a_different_world(tmp_path):
    a, b = write_world(build_world(7, 30), tmp_path / "a"), write_world(build_world(8, 30), tmp_path / "b")
    for name in a:
        assert a[name].read_bytes() != b[name].read_bytes(), name


def test_corpus_is_search_r1_format_with_unique_ids(world):
    ids = [d["id"] for d in world.corpus]
    assert len(set(ids)) == len(ids)
    for doc in world.corpus:
        assert set(doc) == {"id", "contents"} and isinstance(doc["id"], str)
        title, text = doc["contents"].split("\n", 1)
        assert title and text and "\n" not in text
    n_entities = len(world.people) + len(world.cities) + len(world.countries) + len(world.companies) + len(
        world.inventions)
    assert len(world.corpus) > n_entities  # entity passages plus distractors


def test_every_answer_is_in_its_last_supporting_passage_and_not_in_the_question(world):
    by_id = {d["id"]: d["contents"] for d in world.corpus}
    for q in world.questions:
        answer = q["golden_answers"][0]
        assert len(answer.split()) <= 2  # short names keep EM learnable
        assert answer.lower() not in q["question"].lower(), q
        assert answer in by_id[q["supporting_ids"][-1]], q
        assert len(q["supporting_ids"]) == q["hops"] in (1, 2)


def test_two_hop_questions_chain_through_a_bridge_entity(world):
    by_id = {d["id"]: d["contents"] for d in world.corpus}
    two_hop = [q for q in world.questions if q["hops"] == 2]
    assert len(two_hop) > len(world.questions) // 4
    for q in two_hop:
        first, second = (by_id[i] for i in q["supporting_ids"])
        bridge = second.split("\n", 1)[0]  # the second passage's title is named in the first passage
        assert bridge in first.split("\n", 1)[1], q
        assert bridge not in q["question"], q  # so it must be found by the first search


def test_test_questions_are_about_entities_no_train_question_asks_about(world):
    train_subjects = {q["supporting_ids"][0] for q in world.questions if q["split"] == "train"}
    test = [q for q in world.questions if q["split"] == "test"]
    assert 0.1 < len(test) / len(world.questions) < 0.35
    assert not {q["supporting_ids"][0] for q in test} & train_subjects


def test_names_are_unique_across_the_world(world):
    words = [e.name for kind in (world.people, world.cities, world.countries, world.companies, world.inventions)
             for e in kind]
    assert len(set(words)) == len(words)


def test_bm25_finds_the_first_hop_passage_from_the_question(world):
    """The corpus is built for search: the question's own words retrieve its first supporting passage."""
    import bm25s

    corpus = [d["contents"] for d in world.corpus]
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(corpus, stopwords="en", show_progress=False), show_progress=False)
    questions = world.questions
    docs, _ = retriever.retrieve(bm25s.tokenize([q["question"] for q in questions], stopwords="en",
                                                show_progress=False), k=3, show_progress=False)
    hits = sum(world.corpus[int(i)]["id"] in {q["supporting_ids"][0]} for q, row in zip(questions, docs, strict=True)
               for i in row)
    assert hits / len(questions) > 0.9


def test_question_files_alternate_one_and_two_hop_questions(tmp_path, world):
    # any window of the file (a --limit, an unshuffled training batch) holds both kinds equally
    paths = write_world(world, tmp_path)
    for split in ("train", "test"):
        hops = [json.loads(line)["hops"] for line in paths[split].read_text().splitlines()]
        pairs = min(hops.count(1), hops.count(2))
        assert hops[: 2 * pairs] == [1, 2] * pairs, split
        assert len(set(hops[2 * pairs:])) <= 1, split  # the surplus kind, at the end


def test_a_dev_split_comes_from_the_training_subjects_and_leaves_test_as_it_was(tmp_path):
    plain = write_world(build_world(5, 30), tmp_path / "plain")
    with_dev = write_world(build_world(5, 30, dev_fraction=0.2), tmp_path / "dev")
    assert set(with_dev) == {"corpus", "train", "dev", "test", "world"}
    for name in ("corpus", "test", "world"):
        assert with_dev[name].read_bytes() == plain[name].read_bytes(), name
    train, dev = _read_jsonl(with_dev["train"]), _read_jsonl(with_dev["dev"])
    assert dev and {q["id"] for q in train} | {q["id"] for q in dev} == {q["id"] for q in _read_jsonl(plain["train"])}
    subjects = {split: {q["supporting_ids"][0] for q in _read_jsonl(with_dev[split])} for split in ("train", "dev",
                                                                                                     "test")}
    assert not subjects["dev"] & subjects["train"] and not subjects["dev"] & subjects["test"]
    assert {q["hops"] for q in dev} == {1, 2}


def test_a_world_without_dev_split_removes_an_old_dev_file(tmp_path):
    write_world(build_world(5, 30, dev_fraction=0.2), tmp_path)
    paths = write_world(build_world(5, 30), tmp_path)
    assert "dev" not in paths and not (tmp_path / "dev.jsonl").exists()


@pytest.mark.parametrize("test_fraction, dev_fraction", [(0.0, 0.2), (0.2, -0.1), (0.5, 0.5), (1.0, 0.0)])
def test_split_fractions_that_leave_no_split_or_no_training_are_refused(test_fraction, dev_fraction):
    with pytest.raises(ValueError, match="fraction"):
        build_world(5, 30, test_fraction=test_fraction, dev_fraction=dev_fraction)
