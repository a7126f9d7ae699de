"""A missing, cut-short or rewritten file in an index folder: load_index and `serve retrieval` fail at once with
one line that names the folder and says to rebuild (exit 2, no traceback), instead of a traceback or a server
that starts and answers 500 on the first query."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from agentic_verl.retrieval.index import DamagedIndexError, load_index


def _truncate(path):
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


DAMAGE = [
    # (name, how the folder is damaged, phrase in the error)
    ("meta not JSON", lambda d: (d / "index_meta.json").write_text("{not json"), "index_meta.json is not valid JSON"),
    ("meta a list", lambda d: (d / "index_meta.json").write_text("[1, 2]"), "index_meta.json is not an index meta"),
    ("meta without backend",
     lambda d: (d / "index_meta.json").write_text(json.dumps({"passages": 12})), "is not an index meta"),
    ("docstore cut short", lambda d: _truncate(d / "passages.jsonl"), "passages.jsonl is 680 bytes but"),
    ("offsets cut short", lambda d: _truncate(d / "passages.offsets.npy"), "ValueError: EOF: reading array header"),
    ("docstore missing", lambda d: (d / "passages.jsonl").unlink(), "FileNotFoundError"),
    ("bm25s folder missing", lambda d: shutil.rmtree(d / "bm25s"), "params.index.json"),
    ("tokenizer cut short", lambda d: _truncate(next((d / "tokenizer").glob("*.json"))), "JSONDecodeError"),
]


@pytest.fixture
def damaged(tiny_index_dir, tmp_path):
    def make(damage):
        folder = tmp_path / "index"
        shutil.copytree(tiny_index_dir, folder)
        damage(folder)
        return folder
    return make


@pytest.mark.parametrize(("name", "damage", "phrase"), DAMAGE, ids=[case[0] for case in DAMAGE])
def test_a_damaged_index_fails_to_load_naming_the_folder(damaged, name, damage, phrase):
    folder = damaged(damage)
    with pytest.raises(DamagedIndexError) as caught:
        load_index(folder)
    message = str(caught.value)
    assert str(folder) in message and phrase in message
    assert "rebuild it (agentic-verl index build ... --overwrite)" in message


def test_serve_retrieval_exits_2_with_one_line(damaged):
    folder = damaged(DAMAGE[3][1])  # the docstore cut short: before, the server started and answered 500
    done = subprocess.run([sys.executable, "-m", "agentic_verl.cli", "serve", "retrieval", "--index", str(folder),
                           "--port", "0"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr.startswith(f"agentic-verl serve: error: cannot open the bm25s index {folder}: ValueError: ")
    assert "Traceback" not in done.stderr and done.stderr.count("\n") == 1


def test_an_unknown_backend_lists_the_built_in_ones(damaged):
    folder = damaged(lambda d: (d / "index_meta.json").write_text(json.dumps({"backend": "nope"})))
    with pytest.raises(ValueError, match="unknown retrieval backend 'nope'.*built in: bm25s, lucene, dense, hybrid"):
        load_index(folder)
