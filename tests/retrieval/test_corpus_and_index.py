"""Corpus reading, wiki-split, build_index / load_index and the bm25s backend, on real files."""

from __future__ import annotations

import gzip
import hashlib
import json

import pytest

from agentic_verl.retrieval.corpus import CorpusError, read_corpus
from agentic_verl.retrieval.formatting import format_passages
from agentic_verl.retrieval.index import build_index, load_index, read_meta
from agentic_verl.retrieval.protocol import Passage
from agentic_verl.retrieval.wiki_split import split_wikipedia


def write_lines(path, lines):
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def test_both_corpus_formats_and_gzip(tmp_path):
    lines = ['{"id": "a", "contents": "Title A\\ntext a"}', "", '{"id": 7, "title": "B", "text": "text b"}']
    plain = write_lines(tmp_path / "c.jsonl", lines)
    packed = tmp_path / "c.jsonl.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    expected = [Passage("a", "Title A\ntext a"), Passage("7", "B\ntext b")]
    assert list(read_corpus(plain)) == expected
    assert list(read_corpus(packed)) == expected


BAD_CORPUS_LINES = [
    # (bad line, phrase in the error); the bad line is line 2, after a good one
    ("{not json", "c.jsonl:2: not valid JSON"),  # malformed JSON
    ('["a", "b"]', "c.jsonl:2: expected a JSON object, got list"),  # not an object
    ('{"contents": "T\\nx"}', "c.jsonl:2: record has no 'id'"),  # missing id
    ('{"id": null, "contents": "T\\nx"}', "c.jsonl:2: 'id' must be a string or an integer"),  # null id
    ('{"id": "x", "contents": 5}', "c.jsonl:2: 'contents' must be a string"),  # wrong contents type
    ('{"id": "x", "title": "T"}', "c.jsonl:2: record needs 'contents'"),  # no text at all
    ('{"id": "x", "title": 1, "text": "y"}', "c.jsonl:2: 'title' and 'text' must be strings"),  # wrong title type
]


@pytest.mark.parametrize(("line", "phrase"), BAD_CORPUS_LINES)
def test_bad_records_name_the_line(tmp_path, line, phrase):
    path = write_lines(tmp_path / "c.jsonl", ['{"id": "ok", "contents": "T\\nfine"}', line])
    with pytest.raises(CorpusError, match=phrase.replace("\\", "\\\\").replace("[", r"\[")):
        list(read_corpus(path))


def test_invalid_utf8_names_the_line(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_bytes(b'{"id": "1", "contents": "T\\nok"}\n{"id": "2", "contents": "caf\xff"}\n')
    with pytest.raises(CorpusError, match="c.jsonl:2: not valid UTF-8"):
        list(read_corpus(path))


def test_wiki_split_makes_100_word_passages_with_the_title(tmp_path):
    body = " ".join(f"w{i}" for i in range(250))
    articles = write_lines(tmp_path / "wiki.jsonl", [
        json.dumps({"id": "12", "url": "u", "title": "Long Article", "text": body}),  # WikiExtractor layout
        json.dumps({"title": "Empty", "text": "   "}),  # skipped
        json.dumps({"wikipedia_title": "Kilt", "text": ["Kilt\n", "First para.", "Second  para."]}),  # KILT layout
    ])
    counts = split_wikipedia(articles, tmp_path / "out" / "corpus.jsonl", show_progress=False)
    assert counts == {"articles": 3, "skipped_empty": 1, "passages": 4}
    passages = list(read_corpus(tmp_path / "out" / "corpus.jsonl"))
    assert [p.id for p in passages] == ["0", "1", "2", "3"]
    assert [p.title for p in passages] == ["Long Article"] * 3 + ["Kilt"]
    assert [len(p.text.split()) for p in passages] == [100, 100, 50, 4]
    assert passages[1].text.split()[0] == "w100"
    assert passages[3].text == "First para. Second para."  # the KILT title paragraph is dropped


def test_wiki_split_bad_article_names_the_line_and_leaves_no_output(tmp_path):
    articles = write_lines(tmp_path / "wiki.jsonl", [json.dumps({"title": "A", "text": "x"}), json.dumps({"text": "y"})])
    with pytest.raises(CorpusError, match="wiki.jsonl:2: article needs a string 'title'"):
        split_wikipedia(articles, tmp_path / "corpus.jsonl", show_progress=False)
    assert list(tmp_path.iterdir()) == [articles]


def test_build_writes_index_meta(tiny_corpus_path, tmp_path):
    meta = build_index(tiny_corpus_path, tmp_path / "idx", "bm25s", show_progress=False, k1=1.2)
    assert read_meta(tmp_path / "idx") == json.loads(json.dumps(meta))
    assert meta["backend"] == "bm25s" and meta["passages"] == 12
    assert meta["corpus"] == {"path": str(tiny_corpus_path.resolve()),
                              "sha256": hashlib.sha256(tiny_corpus_path.read_bytes()).hexdigest()}
    assert meta["options"] == {"k1": 1.2} and meta["bm25"]["k1"] == 1.2
    assert meta["tokenizer"]["stopwords"] == "en" and meta["tokenizer"]["stemmer"] == "PyStemmer english"
    assert meta["agentic_verl_version"] and meta["built_at"].endswith("+00:00")


def test_stemming_stopwords_and_topk_larger_than_the_corpus(tiny_index_dir):
    index = load_index(tiny_index_dir)
    try:
        # "capitals" stems to "capit" like "capital"; "the"/"of" are stopwords; topk 50 > 12 passages
        results = index.search(["capitals of countries", "the of", "", "Rivers"], topk=50)
        assert {p.id for p in results[0]} == {"paris", "berlin", "tokyo"}
        assert results[1] == [] and results[2] == []
        assert [p.id for p in results[3]][:2] in (["amazon", "nile"], ["nile", "amazon"])
        # a large batch goes through the threaded path and gives the same answers as one at a time
        batch = ["Shakespeare tragedy", "radioactivity research", "Salzburg composer"] * 40
        assert index.search(batch, 2) == [index.search([q], 2)[0] for q in batch]
    finally:
        index.close()


def test_build_refuses_a_non_empty_folder_and_unknown_backends_and_options(tiny_corpus_path, tmp_path):
    (tmp_path / "idx").mkdir()
    (tmp_path / "idx" / "something").write_text("x")
    with pytest.raises(ValueError, match="is not empty"):
        build_index(tiny_corpus_path, tmp_path / "idx", show_progress=False)
    build_index(tiny_corpus_path, tmp_path / "idx", show_progress=False, overwrite=True)
    with pytest.raises(ValueError, match="unknown retrieval backend 'nope'; known: .*bm25s"):
        build_index(tiny_corpus_path, tmp_path / "idx2", "nope", show_progress=False)
    with pytest.raises(ValueError, match=r"unknown bm25s option\(s\) \['k3'\]"):
        build_index(tiny_corpus_path, tmp_path / "idx3", show_progress=False, k3=1)
    with pytest.raises(FileNotFoundError, match="no index_meta.json"):
        load_index(tmp_path / "idx3")


def test_format_passages_is_the_search_r1_format():
    passages = [Passage("1", "Hamlet\nA tragedy.\nSecond line."), Passage("2", "untitled")]
    assert format_passages(passages) == "Doc 1 (Title: Hamlet) A tragedy.\nSecond line.\nDoc 2 (Title: ) untitled"
    assert format_passages([]) == ""
