"""An embeddings folder: a corpus's passage vectors in shards, written by `agentic-verl index encode` (encode.py) and
read by `agentic-verl index build --backend dense --embeddings DIR` instead of encoding.

    manifest.json         replaced atomically after every finished shard (see below)
    00000.npy             shard 0: float32 (rows, dim), L2-normalised, row i = passage start + i of the corpus
    00000.ids.json        the corpus ids of those rows (a JSON list)
    00001.npy ...

manifest.json: the encoder exactly as the dense index meta records it (`model`, `convention`, `query_prefix`,
`passage_prefix`, `normalized`, `metric`, `dim`, `max_seq_length`: dense_encoder.describe), the corpus fingerprint
(`path`, `sha256`, `passages`), `shard_size`, and `shards`: per shard its `start`, `rows`, whether it is `done`,
its first and last corpus id. A shard file is written to `NAME.tmp`, flushed to disk and renamed, and only then
marked done, so a half-written file (a crash, a full disk) is never taken for a finished shard: it is a `.tmp` that
nothing reads, and the shard is encoded again on `--resume`. `Embeddings(folder)` opens only a complete folder whose
shard files all have the recorded shape, and checks the corpus ids row by row as a build reads its passages.
"""

from __future__ import annotations

import bisect
import datetime
import json
import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO

import numpy as np

from agentic_verl import __version__
from agentic_verl.retrieval.backends.dense_encoder import resolve_convention, resolve_model_path
from agentic_verl.retrieval.corpus import count_lines, file_sha256
from agentic_verl.retrieval.protocol import Passage

FORMAT = "agentic_verl.embeddings/1"
MANIFEST_FILE = "manifest.json"
# what the dense index meta takes from the manifest (dense_encoder.describe's keys): the query side of the index
ENCODER_KEYS = ("model", "convention", "query_prefix", "passage_prefix", "normalized", "metric", "dim",
                "max_seq_length")


def shard_name(shard: int) -> str:
    return f"{shard:05d}"


def resume_command(folder: str | Path) -> str:
    import shlex

    return f"agentic-verl index encode --out {shlex.quote(str(folder))} --resume"


def write_atomic(path: Path, write: Callable[[IO[bytes]], object]) -> None:
    """`write(f)` into `path.tmp`, flushed to disk, then renamed to `path`: `path` is never half a file."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        write(f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def write_manifest(folder: Path, manifest: dict) -> None:
    write_atomic(folder / MANIFEST_FILE, lambda f: f.write((json.dumps(manifest, indent=2) + "\n").encode()))


def read_manifest(folder: str | Path) -> dict:
    path = Path(folder) / MANIFEST_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{folder} is not an embeddings folder (no {MANIFEST_FILE}); write one with "
                                "agentic-verl index encode --corpus CORPUS --model MODEL --out DIR")
    manifest = json.loads(path.read_text())
    if manifest.get("format") != FORMAT:
        raise ValueError(f"{path}: format {manifest.get('format')!r}, expected {FORMAT!r}")
    return manifest


def write_shard(folder: Path, shard: int, vectors: np.ndarray, ids: list[str]) -> None:
    """Shard `shard`'s ids and vectors, each file written atomically (the manifest marks the shard done after)."""
    write_atomic(folder / f"{shard_name(shard)}.ids.json", lambda f: f.write(json.dumps(ids).encode()))
    write_atomic(folder / f"{shard_name(shard)}.npy", lambda f: np.save(f, vectors, allow_pickle=False))


def open_shard(folder: Path, shard: int, manifest: dict) -> np.ndarray:
    """Shard `shard`'s vectors, memory-mapped; a file of another shape (truncated, foreign) raises ValueError."""
    path = folder / f"{shard_name(shard)}.npy"
    want = (manifest["shards"][shard]["rows"], manifest["dim"])
    try:
        vectors = np.load(path, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise ValueError(f"{folder}: shard {shard_name(shard)} ({path.name}) is damaged or half-written "
                         f"({type(exc).__name__}: {exc}); encode it again with: {resume_command(folder)}") from None
    if vectors.shape != want or vectors.dtype != np.float32 or not (folder / f"{shard_name(shard)}.ids.json").is_file():
        raise ValueError(f"{folder}: shard {shard_name(shard)} holds {vectors.dtype} {vectors.shape}, the manifest "
                         f"says float32 {want} with an ids file; encode it again with: {resume_command(folder)}")
    return vectors


def plan_folder(out_dir: Path, corpus, model: str | None, text: tuple, shard_size: int) -> dict:
    """A new embeddings folder's manifest, no shard done: the corpus counted and fingerprinted, the shards planned;
    `text` = (convention, query_prefix, passage_prefix) for dense_encoder.resolve_convention. Not written yet: the run
    writes it once its workers have loaded the model and given `dim`."""
    if corpus is None or not model:
        raise ValueError("index encode needs --corpus, --model and --out (or --out and --resume)")
    text = resolve_convention(model, *text)
    if out_dir.exists() and any(out_dir.iterdir()):
        if (out_dir / MANIFEST_FILE).is_file():
            raise ValueError(f"{out_dir} holds an encode run already; finish it with: {resume_command(out_dir)}")
        raise ValueError(f"{out_dir} is not empty; give a new folder")
    if model.startswith(("/", "./", "../", "~")) and not Path(model).expanduser().exists():
        raise FileNotFoundError(f"model folder {model} does not exist")
    corpus = Path(corpus).resolve()
    passages = count_lines(corpus)
    if passages == 0:
        raise ValueError(f"{corpus} has no passages")
    size = int(shard_size)
    manifest = {
        "format": FORMAT, "model": model, "convention": text.name, "query_prefix": text.query_prefix,
        "passage_prefix": text.passage_prefix, "normalized": True, "metric": "inner_product", "dim": None,
        "max_seq_length": None, "corpus": {"path": str(corpus), "sha256": file_sha256(corpus), "passages": passages},
        "shard_size": size, "agentic_verl_version": __version__, "encode_seconds": 0.0,
        "started_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "shards": [{"start": start, "rows": min(size, passages - start), "done": False}
                   for start in range(0, passages, size)],
    }
    return manifest


def reopen_folder(out_dir: Path, corpus, model: str | None, text: tuple | None, shard_size: int | None) -> dict:
    """The manifest of a folder to resume, refused if an argument given (not None) differs from it or the corpus
    changed; half-written files are deleted and damaged shards marked to encode again."""
    manifest = read_manifest(out_dir)
    recorded = manifest["corpus"]["path"]
    if corpus is not None and Path(corpus).resolve() != Path(recorded):
        raise ValueError(f"--resume: {out_dir} encodes {recorded}, not {corpus}; give a new --out for another corpus")
    if model is not None and model != manifest["model"]:
        raise ValueError(f"--resume: {out_dir} is encoded with model {manifest['model']!r}, not {model!r}; give a "
                         "new --out for another model")
    if text is not None:
        wanted = resolve_convention(manifest["model"], *text)
        if (wanted.query_prefix, wanted.passage_prefix) != (manifest["query_prefix"], manifest["passage_prefix"]):
            raise ValueError(f"--resume: {out_dir} is encoded with convention {manifest['convention']!r}, not "
                             f"{wanted.name!r}; give a new --out for another convention")
    if shard_size is not None and int(shard_size) != manifest["shard_size"]:
        raise ValueError(f"--resume: {out_dir} has shards of {manifest['shard_size']} passages, not {shard_size}")
    if not Path(recorded).is_file() or file_sha256(recorded) != manifest["corpus"]["sha256"]:
        raise ValueError(f"--resume: the corpus {recorded} changed (or is gone) since {out_dir} was started "
                         "(sha256 differs); encode it into a new folder")
    for leftover in out_dir.glob("*.tmp"):  # files a crash left half-written; never read
        leftover.unlink()
    for shard, entry in enumerate(manifest["shards"]):
        if entry["done"]:
            try:
                open_shard(out_dir, shard, manifest)
            except ValueError:  # damaged after it was recorded: encode it again
                entry["done"] = False
    write_manifest(out_dir, manifest)
    return manifest


class Embeddings:
    """A finished embeddings folder, read-only: its manifest, and vectors by corpus row (`emb[a:b]`, memory-mapped)."""

    def __init__(self, folder: str | Path):
        self.folder = Path(folder)
        self.manifest = read_manifest(self.folder)
        missing = [i for i, shard in enumerate(self.manifest["shards"]) if not shard["done"]]
        if missing:
            shown = ", ".join(shard_name(i) for i in missing[:8]) + (", ..." if len(missing) > 8 else "")
            raise ValueError(f"{self.folder} is unfinished: {len(self.manifest['shards']) - len(missing)} of "
                             f"{len(self.manifest['shards'])} shards encoded (missing {shown}): it was interrupted "
                             f"or ran out of disk. Finish it with: {resume_command(self.folder)}")
        self.shards = [open_shard(self.folder, i, self.manifest) for i in range(len(self.manifest["shards"]))]
        self.starts = [shard["start"] for shard in self.manifest["shards"]]
        self.shape = (self.manifest["corpus"]["passages"], self.manifest["dim"])

    @property
    def encoder_meta(self) -> dict:
        """The dense index meta's model part: how the passages were encoded, and so how queries must be."""
        return {key: self.manifest[key] for key in ENCODER_KEYS}

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, rows: slice) -> np.ndarray:
        """Rows `start:stop` of the corpus (a copy, float32), across shard files."""
        start, stop, step = rows.indices(self.shape[0])
        if step != 1:
            raise ValueError("Embeddings supports contiguous row slices only")
        parts = []
        for first, vectors in zip(self.starts, self.shards, strict=True):
            lo, hi = max(start, first), min(stop, first + len(vectors))
            if lo < hi:
                parts.append(np.asarray(vectors[lo - first : hi - first], dtype=np.float32))
        return np.concatenate(parts) if parts else np.zeros((0, self.shape[1]), dtype=np.float32)

    def check_encoder(self, model: str | None, text=None) -> None:
        """Refuse a model or a convention (dense_encoder.TextConvention) other than those the passages were encoded with;
        None: not given."""
        recorded = self.manifest["model"]
        if model is not None and model != recorded and resolve_model_path(model) != resolve_model_path(recorded):
            raise ValueError(f"{self.folder} was encoded with model {recorded!r}, not {model!r}: queries must be "
                             "encoded by the passages' model; leave the model out (it is read from the folder) or "
                             "encode again with that model")
        if text is not None and (text.query_prefix, text.passage_prefix) != (self.manifest["query_prefix"],
                                                                              self.manifest["passage_prefix"]):
            raise ValueError(f"{self.folder} was encoded with convention {self.manifest['convention']!r} (prefixes "
                             f"{self.manifest['query_prefix']!r} / {self.manifest['passage_prefix']!r}), not "
                             f"{text.name!r}; leave the convention out (it is read from the folder) or encode again")

    def check_corpus(self, sha256: str, passages: int, path: str | Path) -> None:
        corpus = self.manifest["corpus"]
        if (corpus["sha256"], corpus["passages"]) != (sha256, passages):
            raise ValueError(f"{self.folder} holds the vectors of another corpus ({corpus['path']}, "
                             f"{corpus['passages']} passages, sha256 {corpus['sha256'][:12]}...), not of {path} "
                             f"({passages} passages, sha256 {sha256[:12]}...); encode this corpus with index encode")

    def checked(self, start: int, passages: Iterable[Passage]) -> Iterator[Passage]:
        """`passages` (corpus rows from `start` on), each checked to have the id this folder has for its row."""
        row, ids, first = start, [], start
        for passage in passages:
            if row >= first + len(ids):
                if row >= len(self):
                    raise ValueError(f"the corpus has more than the {len(self)} passages encoded in {self.folder}")
                shard = bisect.bisect_right(self.starts, row) - 1
                first = self.starts[shard]
                ids = json.loads((self.folder / f"{shard_name(shard)}.ids.json").read_text())
            if passage.id != ids[row - first]:
                raise ValueError(f"corpus row {row} has id {passage.id!r}, but {self.folder} encoded "
                                 f"{ids[row - first]!r} there: these are the vectors of another corpus")
            row += 1
            yield passage
