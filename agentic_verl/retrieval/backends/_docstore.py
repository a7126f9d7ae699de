"""A passage store on disk for backends whose engine returns only row numbers (lucene, dense).

Layout inside an index folder:
  docstore/passages.jsonl   one {"id": "<row>", "pid": "<passage id>", "contents": "..."} per line; row = line number.
                            The shape is also Anserini's JsonCollection, so the lucene backend indexes this file
                            directly ("id" is the row, "pid" is ignored by the indexer).
  docstore_offsets.npy      int64 byte offsets of the lines (n + 1 entries).

Both files are memory-mapped when loaded, so a large corpus costs page cache, not Python heap, and
lookups are safe from any thread.

>>> import tempfile
>>> from pathlib import Path
>>> folder = Path(tempfile.mkdtemp())
>>> write_docstore([Passage("a", "T\\nhello"), Passage("b", "U\\nworld")], folder)
2
>>> DocStore(folder).get([1])[0]
Passage(id='b', contents='U\\nworld', score=0.0)
"""

from __future__ import annotations

import json
import mmap
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np

from agentic_verl.retrieval.protocol import Passage

DOCS_DIR = "docstore"
DOCS_FILE = "passages.jsonl"
OFFSETS_FILE = "docstore_offsets.npy"


def write_docstore(passages: Iterable[Passage], index_dir: Path) -> int:
    """Stream `passages` to `index_dir`'s docstore; returns the number written."""
    index_dir = Path(index_dir)
    (index_dir / DOCS_DIR).mkdir(parents=True, exist_ok=True)
    offsets = [0]
    with open(index_dir / DOCS_DIR / DOCS_FILE, "wb") as f:
        for row, passage in enumerate(passages):
            line = json.dumps({"id": str(row), "pid": str(passage.id), "contents": passage.contents}, ensure_ascii=False)
            f.write(line.encode("utf-8") + b"\n")
            offsets.append(f.tell())
    np.save(index_dir / OFFSETS_FILE, np.asarray(offsets, dtype=np.int64))
    return len(offsets) - 1


class DocStore:
    """Read access to a docstore written by `write_docstore`."""

    def __init__(self, index_dir: Path):
        index_dir = Path(index_dir)
        self.path = index_dir / DOCS_DIR / DOCS_FILE
        self._offsets = np.load(index_dir / OFFSETS_FILE, mmap_mode="r")
        self._file = open(self.path, "rb")
        size = self.path.stat().st_size
        self._mmap = mmap.mmap(self._file.fileno(), 0, access=mmap.ACCESS_READ) if size else b""

    def __len__(self) -> int:
        return len(self._offsets) - 1

    def _record(self, row: int) -> dict:
        if not 0 <= row < len(self):
            raise IndexError(f"passage row {row} out of range (docstore has {len(self)})")
        start, end = int(self._offsets[row]), int(self._offsets[row + 1])
        return json.loads(self._mmap[start:end])

    def get(self, rows: Iterable[int], scores: Iterable[float] | None = None) -> list[Passage]:
        rows = list(rows)
        scores = list(scores) if scores is not None else [0.0] * len(rows)
        out = []
        for row, score in zip(rows, scores, strict=True):
            record = self._record(int(row))
            out.append(Passage(id=record["pid"], contents=record["contents"], score=float(score)))
        return out

    def iter_contents(self, batch_size: int) -> Iterator[list[str]]:
        """All passage contents in row order, `batch_size` at a time (streamed, for encoding)."""
        batch: list[str] = []
        with open(self.path, encoding="utf-8") as f:
            for line in f:
                batch.append(json.loads(line)["contents"])
                if len(batch) == batch_size:
                    yield batch
                    batch = []
        if batch:
            yield batch

    def close(self) -> None:
        if isinstance(self._mmap, mmap.mmap):
            self._mmap.close()
        self._file.close()
