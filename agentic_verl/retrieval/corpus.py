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
    for where, line in iter_lines(path):
        yield parse_line(line, where)


def parse_line(line: str, where: str) -> Passage:
    """One JSONL line -> Passage; `where` ("file:line") goes into error messages."""
    try:
        record = json.loads(line)
    except json.JSONDecodeError as exc:
        raise CorpusError(f"{where}: not valid JSON ({exc.msg.removesuffix(' at')} at column {exc.colno})") from None
    return parse_record(record, where)


def iter_lines(path: str | Path) -> Iterator[tuple[str, str]]:
    """("file:line", text) for each non-blank line; decoded line by line so a UTF-8 error names its line."""
    path = Path(path)
    with _open_binary(path) as f:
        for lineno, raw in enumerate(f, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise CorpusError(f"{path}:{lineno}: not valid UTF-8 ({exc.reason} at byte {exc.start})") from None
            if line.strip():
                yield f"{path}:{lineno}", line


def file_sha256(path: str | Path, chunk_size: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(chunk_size):
            digest.update(chunk)
    return digest.hexdigest()


def count_lines(path: str | Path) -> int:
    """Non-blank lines: the number of passages, for a progress bar total."""
    with _open_binary(Path(path)) as f:
        return sum(1 for line in f if line.strip())


def _open_binary(path: Path):
    if not path.is_file():
        raise FileNotFoundError(f"corpus file {path} does not exist")
    return gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb")
