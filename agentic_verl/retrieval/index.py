"""Building and opening index folders: the backend's files plus `index_meta.json`.

>>> import json, os, tempfile
>>> folder = tempfile.mkdtemp()
>>> corpus = os.path.join(folder, "corpus.jsonl")
>>> with open(corpus, "w") as f:
...     for i, (title, text) in enumerate([("Paris", "capital of France"), ("Hamlet", "a play by Shakespeare")]):
...         _ = f.write(json.dumps({"id": str(i), "contents": f"{title}\\n{text}"}) + "\\n")
>>> meta = build_index(corpus, os.path.join(folder, "index"), "bm25s", show_progress=False)
>>> meta["passages"], meta["backend"]
(2, 'bm25s')
>>> index = load_index(os.path.join(folder, "index"))
>>> [p.id for p in index.search(["who wrote hamlet"], topk=1)[0]]
['1']
>>> index.close()
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tqdm import tqdm

from agentic_verl.retrieval.backends.base import (
    DEFAULT_BACKEND,
    META_FILE,
    RetrievalBackend,
    backend_class,
    common_meta,
)
from agentic_verl.retrieval.build import build_sharded_index, unfinished_build_error
from agentic_verl.retrieval.corpus import count_lines, file_sha256, read_corpus
from agentic_verl.retrieval.protocol import Passage


@dataclass
class Index:
    """An opened index folder: the backend and what built it."""

    path: Path
    meta: dict
    backend: RetrievalBackend = field(repr=False)

    def search(self, queries: list[str], topk: int) -> list[list[Passage]]:
        return self.backend.search(queries, topk)

    def close(self) -> None:
        self.backend.close()


def build_index(corpus_path: str | Path | None, out_dir: str | Path, backend: str | None = None, *,
                overwrite: bool = False, show_progress: bool = True, shards: int | None = None,
                resume: bool = False, **options) -> dict:
    """Index a JSONL corpus (see corpus.py) into `out_dir`; return the index meta (also in index_meta.json).

    `options` go to the backend's `build` and are recorded in the meta. `index_meta.json` is written last,
    so a folder without it is an unfinished build. With `shards` (or `resume`), the build is sharded,
    bounded in memory and resumable (build.py); without, the backend indexes the corpus in one folder.
    """
    if shards is not None or resume:
        return build_sharded_index(corpus_path, out_dir, backend, shards=shards, resume=resume,
                                   overwrite=overwrite, show_progress=show_progress, **options)
    if corpus_path is None:
        raise ValueError("index build needs --corpus (or --resume to finish an interrupted build)")
    backend = backend or DEFAULT_BACKEND
    corpus_path, out_dir = Path(corpus_path).resolve(), Path(out_dir)
    if not corpus_path.is_file():
        raise FileNotFoundError(f"corpus file {corpus_path} does not exist")
    cls = backend_class(backend)
    if out_dir.exists() and any(out_dir.iterdir()):
        if not overwrite:
            raise ValueError(f"{out_dir} is not empty; pass overwrite=True (--overwrite) to replace it")
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    sha256 = file_sha256(corpus_path)
    total = count_lines(corpus_path) if show_progress else None
    counter = _Counter()
    started = time.time()
    passages = tqdm(counter.wrap(read_corpus(corpus_path)), total=total, desc=f"index {backend}",
                    unit=" passages", disable=not show_progress)
    backend_meta = dict(cls.build(passages, out_dir, **options) or {})
    if counter.count == 0:
        raise ValueError(f"{corpus_path} has no passages")
    meta = common_meta(backend_meta, backend, corpus_path, sha256, counter.count, options, time.time() - started)
    (out_dir / META_FILE).write_text(json.dumps(meta, indent=2, default=str) + "\n")
    return meta


def read_meta(index_dir: str | Path) -> dict:
    """index_meta.json of a finished index folder; an interrupted build raises IncompleteIndexError (build.py)."""
    meta_path = Path(index_dir) / META_FILE
    if not meta_path.is_file():
        unfinished = unfinished_build_error(Path(index_dir))
        if unfinished is not None:
            raise unfinished
        raise FileNotFoundError(f"{index_dir} is not an index folder (no {META_FILE}; was the build finished?)")
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise DamagedIndexError(f"{meta_path} is not valid JSON ({exc}); {_REBUILD}") from None
    if not isinstance(meta, dict) or not isinstance(meta.get("backend"), str):
        raise DamagedIndexError(f"{meta_path} is not an index meta (a JSON object with a 'backend' name); {_REBUILD}")
    return meta


class DamagedIndexError(ValueError):
    """An index folder that cannot be opened: a file missing, cut short or not what the build wrote."""


_REBUILD = "the index folder is damaged: rebuild it (agentic-verl index build ... --overwrite)"


def load_index(index_dir: str | Path) -> Index:
    """Open an index folder written by `build_index`; a missing or damaged file raises DamagedIndexError (which
    names the folder; the backend's own error follows), an unfinished build IncompleteIndexError."""
    index_dir = Path(index_dir)
    meta = read_meta(index_dir)
    cls = backend_class(meta["backend"])
    try:
        backend = cls.load(index_dir, meta)
    except DamagedIndexError:  # a sub-index (hybrid) already said which folder
        raise
    except (OSError, EOFError, ValueError, KeyError, TypeError) as exc:  # not ImportError: a missing extra says so
        raise DamagedIndexError(f"cannot open the {meta['backend']} index {index_dir}: {type(exc).__name__}: "
                                f"{exc}; if a file is missing or cut short, {_REBUILD}") from exc
    return Index(path=index_dir, meta=meta, backend=backend)


class _Counter:
    def __init__(self):
        self.count = 0

    def wrap(self, items: Iterator[Passage]) -> Iterator[Passage]:
        for item in items:
            self.count += 1
            yield item
