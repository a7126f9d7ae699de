"""Resumable, bounded-memory builds of sharded indexes: `agentic-verl index build --shards N [--resume]`.

A build is a sequence of named steps that a backend's `build_sharded(build, **options)` runs through
`ShardedBuild.step` (bm25s: "tokenize 0", ..., "score 0", ...; dense: "encode 0", ..., "train", "faiss 0", ...).
Each step writes its own files; then `_build/manifest.json` (replaced atomically) records it as done.

- Memory: the corpus is read one passage at a time, straight into the shard's docstore on disk; a step holds at most
  one shard's arrays (bm25s: its token ids and score matrix; dense: a chunk of vectors, or a shard's faiss index).
- Interrupted (Ctrl-C, a crash, a full disk): `index_meta.json` is written only after the last step, and an index
  folder without it never loads: `read_meta` raises `IncompleteIndexError` naming the resume command,
  `agentic-verl index build --out DIR --resume`. Resuming checks that the corpus (sha256), backend, options and
  shard count are those of the interrupted build, deletes what an unfinished step left half-written, and runs only
  the steps the manifest does not list. `_build/` (manifest, temporary token files) is removed at the end.
- Progress: one bar over the corpus passages and one over the shard steps, with rates and an ETA (tqdm), unless
  `show_progress=False` (`--no-progress`).
"""

from __future__ import annotations

import datetime
import json
import os
import shlex
import shutil
import time
from collections.abc import Callable, Iterator
from itertools import islice
from pathlib import Path

from tqdm import tqdm

from agentic_verl import __version__
from agentic_verl.retrieval.backends.base import DEFAULT_BACKEND, META_FILE, backend_class, common_meta
from agentic_verl.retrieval.corpus import count_lines, file_sha256, iter_lines, parse_line, read_corpus
from agentic_verl.retrieval.disk_full import resumable_when_disk_full
from agentic_verl.retrieval.protocol import Passage
from agentic_verl.retrieval.shards import shard_bounds, shard_dir_name

BUILD_DIR = "_build"
MANIFEST_FILE = "manifest.json"


class IncompleteIndexError(FileNotFoundError):
    """An index folder whose build did not finish; the message names the command that resumes it."""


def resume_command(out_dir: str | Path) -> str:
    return f"agentic-verl index build --out {shlex.quote(str(out_dir))} --resume"


def write_json_atomic(path: Path, data: dict) -> None:
    """Write `data` to a temporary file, flush it to disk, then rename it over `path` (never half a file)."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(json.dumps(data, indent=2, default=str) + "\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def unfinished_build_error(index_dir: Path) -> IncompleteIndexError | None:
    """The error to raise for `index_dir` when it holds an interrupted build (a manifest, no index_meta.json)."""
    manifest_path = Path(index_dir) / BUILD_DIR / MANIFEST_FILE
    if not manifest_path.is_file():
        return None
    try:
        manifest = json.loads(manifest_path.read_text())
        done = manifest.get("done", [])
        progress = f"{len(done)} steps done, last {done[-1]!r}" if done else "no step done"
        what = f"a {manifest['backend']} build of {manifest['passages']} passages in {len(manifest['shards'])} shards"
    except (ValueError, KeyError, TypeError):
        progress, what = "unreadable manifest", "a build"
    return IncompleteIndexError(f"{index_dir} is an unfinished index ({what}, {progress}): it was interrupted or "
                                f"ran out of disk and cannot be served. Resume it with: {resume_command(index_dir)}")


class ShardedBuild:
    """What a backend's `build_sharded` works with: the shard plan, the corpus by shard, steps, progress."""

    def __init__(self, out_dir: Path, manifest: dict, show_progress: bool,
                 on_step: Callable[[str], None] | None = None):
        self.out_dir, self.manifest, self.show_progress = out_dir, manifest, show_progress
        self.scratch = out_dir / BUILD_DIR
        self.bounds: list[tuple[int, int]] = [tuple(b) for b in manifest["shards"]]
        self._on_step = on_step
        self._reader: Iterator[Passage] | None = None
        self._next_row = 0
        self._passage_bar: tqdm | None = None
        self._clock = time.time()

    @property
    def n_shards(self) -> int:
        return len(self.bounds)

    def shard_dir(self, shard: int) -> Path:
        return self.out_dir / shard_dir_name(shard)

    def is_done(self, name: str) -> bool:
        return name in self.manifest["done"]

    def result(self, name: str):
        """What step `name` returned (recorded in the manifest, so it survives a resume)."""
        return self.manifest["results"].get(name)

    def step(self, name: str, run: Callable[[], object], outputs: tuple[Path, ...] = ()):
        """Run `run()` unless the manifest lists `name` as done; return its (JSON-able) result either way.

        `outputs` are deleted first: whatever an interrupted attempt left there is redone from scratch."""
        if self.is_done(name):
            return self.result(name)
        for path in outputs:
            if path.is_dir():
                shutil.rmtree(path)
            elif path.exists():
                path.unlink()
        with resumable_when_disk_full(f"building {self.out_dir} (step {name!r})", resume_command(self.out_dir)):
            result = run()
        self.manifest["done"].append(name)
        self.manifest["results"][name] = result
        self.manifest["build_seconds"] = self.build_seconds()
        self._clock = time.time()
        write_json_atomic(self.scratch / MANIFEST_FILE, self.manifest)
        if self._on_step is not None:  # tests inject failures here, right after a step is recorded
            self._on_step(name)
        return result

    def passages(self, shard: int) -> Iterator[Passage]:
        """The passages of `shard`, read from the corpus file (sequentially when shards are read in order)."""
        start, stop = self.bounds[shard]
        if self._reader is None or self._next_row != start:
            self._reader = _read_from(Path(self.manifest["corpus"]["path"]), start)
            self._next_row = start
        bar = self._bar_for_passages(start)
        for passage in islice(self._reader, stop - start):
            self._next_row += 1
            bar.update(1)
            yield passage
        if self._next_row != stop:
            raise ValueError(f"{self.manifest['corpus']['path']} ended at passage {self._next_row}, the build "
                             f"planned {self.manifest['passages']}: the corpus changed during the build")

    def build_seconds(self) -> float:
        """Seconds spent on this build so far, over every attempt (the manifest keeps the earlier ones)."""
        return round(self.manifest["build_seconds"] + time.time() - self._clock, 3)

    def bar(self, desc: str, total: int, unit: str) -> tqdm:
        """A progress bar (rate and ETA) that `--no-progress` turns off."""
        return tqdm(total=total, desc=desc, unit=unit, disable=not self.show_progress, dynamic_ncols=True)

    def _bar_for_passages(self, start: int) -> tqdm:
        if self._passage_bar is None:
            self._passage_bar = tqdm(total=self.manifest["passages"], initial=start, desc="read corpus",
                                     unit=" passages", disable=not self.show_progress, dynamic_ncols=True)
        return self._passage_bar

    def close(self) -> None:
        if self._passage_bar is not None:
            self._passage_bar.close()


def build_sharded_index(corpus_path: str | Path | None, out_dir: str | Path, backend: str | None = None, *,
                        shards: int | None = None, resume: bool = False, overwrite: bool = False,
                        show_progress: bool = True, on_step: Callable[[str], None] | None = None,
                        **options) -> dict:
    """Build (or with `resume`, finish) a sharded index; return its meta. See the module docstring."""
    out_dir = Path(out_dir)
    if shards is not None and int(shards) < 1:
        raise ValueError(f"--shards must be >= 1, got {shards}")
    if resume:
        manifest = _manifest_to_resume(out_dir, corpus_path, backend, shards, options)
    else:
        manifest = _new_manifest(out_dir, corpus_path, backend or DEFAULT_BACKEND, shards, options, overwrite)
    cls = backend_class(manifest["backend"])
    if not hasattr(cls, "build_sharded"):
        lucene = "; lucene builds on disk already (its memory does not grow with the corpus)"
        raise ValueError(f"backend {manifest['backend']!r} cannot build sharded indexes (--shards): bm25s and dense "
                         f"can{lucene if manifest['backend'] == 'lucene' else ''}")
    build = ShardedBuild(out_dir, manifest, show_progress, on_step)
    try:
        backend_meta = dict(cls.build_sharded(build, **manifest["options"]) or {})
    finally:
        build.close()
    shard_entries = [{"dir": shard_dir_name(i), "start": start, "passages": stop - start}
                     for i, (start, stop) in enumerate(build.bounds)]
    meta = common_meta(backend_meta, manifest["backend"], Path(manifest["corpus"]["path"]), manifest["corpus"]["sha256"],
                       manifest["passages"], manifest["options"], build.build_seconds())
    meta["shards"] = shard_entries
    write_json_atomic(out_dir / META_FILE, meta)  # the marker of a finished index: written last
    shutil.rmtree(out_dir / BUILD_DIR, ignore_errors=True)
    return meta


def _new_manifest(out_dir: Path, corpus_path, backend: str, shards: int | None, options: dict,
                  overwrite: bool) -> dict:
    if corpus_path is None:
        raise ValueError("index build needs --corpus (or --resume to finish an interrupted build)")
    corpus_path = Path(corpus_path).resolve()
    if not corpus_path.is_file():
        raise FileNotFoundError(f"corpus file {corpus_path} does not exist")
    backend_class(backend)  # an unknown backend fails before the corpus is read
    if out_dir.exists() and any(out_dir.iterdir()):
        if not overwrite:
            if (out_dir / BUILD_DIR / MANIFEST_FILE).is_file():
                raise ValueError(f"{out_dir} holds an unfinished build; resume it with: {resume_command(out_dir)} "
                                 "(or pass --overwrite to start again)")
            raise ValueError(f"{out_dir} is not empty; pass overwrite=True (--overwrite) to replace it")
        shutil.rmtree(out_dir)
    started = time.time()
    n_passages = count_lines(corpus_path)
    if n_passages == 0:
        raise ValueError(f"{corpus_path} has no passages")
    manifest = {
        "backend": backend,
        "corpus": {"path": str(corpus_path), "sha256": file_sha256(corpus_path)},
        "passages": n_passages,
        "shards": shard_bounds(n_passages, int(shards or 1)),
        "options": options,
        "agentic_verl_version": __version__,
        "started_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "done": [],
        "results": {},
    }
    (out_dir / BUILD_DIR).mkdir(parents=True)
    manifest["build_seconds"] = round(time.time() - started, 3)
    write_json_atomic(out_dir / BUILD_DIR / MANIFEST_FILE, manifest)
    return manifest


def _manifest_to_resume(out_dir: Path, corpus_path, backend: str | None, shards: int | None, options: dict) -> dict:
    if (out_dir / META_FILE).is_file():
        raise ValueError(f"{out_dir} is a finished index; there is nothing to resume")
    path = out_dir / BUILD_DIR / MANIFEST_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{out_dir} has no unfinished build to resume (no {BUILD_DIR}/{MANIFEST_FILE}); "
                                "start one with --corpus, --out and --shards")
    manifest = json.loads(path.read_text())
    corpus = Path(manifest["corpus"]["path"])
    given = {"corpus": corpus_path and Path(corpus_path).resolve(), "backend": backend,
             "shards": shards, "options": options or None}
    recorded = {"corpus": corpus, "backend": manifest["backend"], "shards": len(manifest["shards"]),
                "options": manifest["options"]}
    for key, value in given.items():
        if value is not None and value != recorded[key]:
            raise ValueError(f"--resume: {key} {value!r} differs from the interrupted build's {recorded[key]!r}; "
                             f"resume with the same settings ({resume_command(out_dir)} reads them from the "
                             "manifest) or start again with --overwrite")
    if not corpus.is_file():
        raise FileNotFoundError(f"--resume: the corpus {corpus} of the interrupted build does not exist any more")
    if file_sha256(corpus) != manifest["corpus"]["sha256"]:
        raise ValueError(f"--resume: {corpus} changed since the build started (sha256 differs); "
                         "start again with --overwrite")
    return manifest


def _read_from(path: Path, start: int) -> Iterator[Passage]:
    """The corpus's passages from row `start` on; the rows before it are skipped without being parsed."""
    if start == 0:
        return read_corpus(path)
    lines = iter_lines(path)
    for _ in islice(lines, start):
        pass
    return _parse(lines)


def _parse(lines: Iterator[tuple[str, str]]) -> Iterator[Passage]:
    for where, line in lines:
        yield parse_line(line, where)
