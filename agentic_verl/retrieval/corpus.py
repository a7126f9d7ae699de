"""Reading passage corpora: JSONL, one passage per line, in either of two formats.

- FlashRAG / Search-R1: `{"id": "0", "contents": "Title\\ntext"}`
- split fields:        `{"id": "0", "title": "Title", "text": "text"}` (joined to "Title\\ntext")

`id` may be a string or an integer (kept as a string). Blank lines are skipped; a `.gz` file is read
through gzip. A bad record raises `CorpusError` naming the file and line.

>>> import tempfile, os
>>> path = os.path.join(tempfile.mkdtemp(), "c.jsonl")
>>> _ = open(path, "w").write('{"id": 1, "title": "Paris", "text": "Capital of France."}\\n')
>>> list(read_corpus(path))
[Passage(id='1', contents='Paris\\nCapital of France.', score=0.0)]
"""

from __future__ import annotations

import gzip
import hashlib
import json
from collections.abc import Iterator
from pathlib import Path

from agentic_verl.retrieval.protocol import Passage


class CorpusError(ValueError):
    """A corpus file that cannot be read; the message names the file and line."""


def open_text(path: str | Path, errors: str = "strict"):
    """Open a text file for reading, through gzip when its name ends in .gz."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"corpus file {path} does not exist")
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8", errors=errors)
    return open(path, encoding="utf-8", errors=errors)


def parse_record(record: object, where: str) -> Passage:
    """One decoded JSON record -> Passage; `where` ("file:line") goes into error messages."""
    if not isinstance(record, dict):
        raise CorpusError(f"{where}: expected a JSON object, got {type(record).__name__}")
    if "id" not in record:
        raise CorpusError(f"{where}: record has no 'id' (keys: {sorted(record)})")
    pid = record["id"]
    if isinstance(pid, bool) or not isinstance(pid, (str, int)):
        raise CorpusError(f"{where}: 'id' must be a string or an integer, got {type(pid).__name__}")
    if "contents" in record:
        contents = record["contents"]
        if not isinstance(contents, str):
            raise CorpusError(f"{where}: 'contents' must be a string, got {type(contents).__name__}")
    elif "text" in record:
        title, text = record.get("title", ""), record["text"]
        if not isinstance(title, str) or not isinstance(text, str):
            raise CorpusError(f"{where}: 'title' and 'text' must be strings")
        contents = f"{title}\n{text}"
    else:
        raise CorpusError(f"{where}: record needs 'contents' (\"Title\\ntext\") or 'title' + 'text' "
                          f"(keys: {sorted(record)})")
    return Passage(id=str(pid), contents=contents)


def read_corpus(path: str | Path) -> Iterator[Passage]:
    """Yield the passages of a JSONL corpus, in file order."""
    with open_text(path) as f:
        lineno = 0
        while True:
            try:
                line = f.readline()
            except UnicodeDecodeError as exc:
                raise CorpusError(f"{path}:{lineno + 1}: not valid UTF-8 ({exc.reason})") from None
            if not line:
                return
            lineno += 1
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise CorpusError(f"{path}:{lineno}: not valid JSON ({exc.msg} at column {exc.colno})") from None
            yield parse_record(record, f"{path}:{lineno}")


def file_sha256(path: str | Path, chunk_size: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(chunk_size):
            digest.update(chunk)
    return digest.hexdigest()


def count_lines(path: str | Path) -> int:
    """Non-blank lines: the number of passages, for a progress bar total."""
    with open_text(path, errors="replace") as f:
        return sum(1 for line in f if line.strip())
