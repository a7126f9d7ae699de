"""A passage store any backend can use: passages in a JSONL file plus an offsets array, read by row number.

Backends that index numbers (bm25s document ids, faiss rows) keep the passages here instead of in memory:
`DocStore` memory-maps both files, so a 29M-passage corpus costs page cache, not Python objects.

>>> import tempfile
>>> from agentic_verl.retrieval.protocol import Passage
>>> folder = tempfile.mkdtemp()
>>> write_docstore([Passage("a", "T\\none"), Passage("b", "U\\ntwo")], folder)
2
>>> DocStore(folder).get([1, 0])
[Passage(id='b', contents='U\\ntwo', score=0.0), Passage(id='a', contents='T\\none', score=0.0)]
"""

from __future__ import annotations

import json
import mmap
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from agentic_verl.retrieval.protocol import Passage

PASSAGES_FILE = "passages.jsonl"
OFFSETS_FILE = "passages.offsets.npy"


class DocStoreWriter:
    """Append passages one at a time (while a backend tokenizes them); `close()` writes the offsets."""

    def __init__(self, out_dir: str | Path):
        self.out_dir = Path(out_dir)
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self._file = open(self.out_dir / PASSAGES_FILE, "wb")  # noqa: SIM115 - closed in close()
        self._offsets = [0]

    def add(self, passage: Passage) -> None:
        line = json.dumps({"id": passage.id, "contents": passage.contents}, ensure_ascii=False) + "\n"
        self._offsets.append(self._offsets[-1] + self._file.write(line.encode("utf-8")))

    def __len__(self) -> int:
        return len(self._offsets) - 1

    def close(self) -> None:
        self._file.close()
        np.save(self.out_dir / OFFSETS_FILE, np.asarray(self._offsets, dtype=np.int64))

    def __enter__(self) -> DocStoreWriter:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def write_docstore(passages: Iterable[Passage], out_dir: str | Path) -> int:
    """Write `passages` (row i = i-th passage) into `out_dir`; return how many were written."""
    with DocStoreWriter(out_dir) as writer:
        for passage in passages:
            writer.add(passage)
    return len(writer)


class DocStore:
    """Read-only random access to the passages written by `write_docstore`."""

    def __init__(self, folder: str | Path):
        folder = Path(folder)
        self._offsets = np.load(folder / OFFSETS_FILE, mmap_mode="r")
        self._file = open(folder / PASSAGES_FILE, "rb")  # noqa: SIM115 - closed in close()
        size = self._file.seek(0, 2)
        if len(self._offsets) == 0 or int(self._offsets[-1]) != size:  # a copy cut short would fail at query time
            self._file.close()
            raise ValueError(f"{folder / PASSAGES_FILE} is {size} bytes but {OFFSETS_FILE} expects "
                             f"{int(self._offsets[-1]) if len(self._offsets) else '?'}: the docstore is damaged")
        self._data = mmap.mmap(self._file.fileno(), 0, access=mmap.ACCESS_READ) if size else b""

    def __len__(self) -> int:
        return len(self._offsets) - 1

    def __getitem__(self, row: int) -> Passage:
        if not 0 <= row < len(self):
            raise IndexError(f"passage row {row} out of range (0..{len(self) - 1})")
        record = json.loads(self._data[int(self._offsets[row]) : int(self._offsets[row + 1])])
        return Passage(id=record["id"], contents=record["contents"])

    def get(self, rows: Sequence[int], scores: Sequence[float] | None = None) -> list[Passage]:
        """Passages for `rows`, with `scores` attached when given."""
        passages = [self[int(row)] for row in rows]
        if scores is not None:
            passages = [Passage(p.id, p.contents, float(s)) for p, s in zip(passages, scores, strict=True)]
        return passages

    def close(self) -> None:
        if isinstance(self._data, mmap.mmap):
            self._data.close()
        self._file.close()
