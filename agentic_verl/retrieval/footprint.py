"""How much memory serving an index folder needs: an estimate from its files and index_meta.json (`index info`).

Each part is one of:
- resident: loaded into the process (Python objects, arrays copied into RAM, the encoder's weights);
- hot (memory-mapped): read on every query (score matrices, faiss indexes, flat embeddings): it should fit in
  the page cache, or queries wait for the disk;
- cold (memory-mapped): read only for the passages returned (the docstore): the page cache may drop it.

"Full speed" = resident + hot; the cold part is what the disk holds besides. Python, numpy, torch and the server
themselves (~0.3 GB for bm25s, ~1 GB with torch) are not counted. Estimated factors are measured, and marked as such.

>>> format_bytes(3 * 2**30)
'3.00 GiB'
"""

from __future__ import annotations

import os
from pathlib import Path

from agentic_verl.retrieval.shards import is_sharded

# bm25s's tokenizer vocabulary as Python dicts, per byte of its JSON file: 510 B/word in RAM vs 57 B/word on disk,
# measured with 550k words (bm25s 0.3.16, CPython 3.11)
VOCAB_JSON_TO_RAM = 9.0
# bm25s's per-shard vocab_dict (term -> id) and its set of ids, per byte of vocab.index.json (unsharded indexes)
INDEX_VOCAB_JSON_TO_RAM = 9.0


def serving_estimate(index_dir: str | Path, meta: dict) -> list[dict]:
    """[{"part", "bytes", "kind": resident|hot|cold, "note"}] for the index folder `index_dir`."""
    index_dir = Path(index_dir)
    folders = [index_dir / s["dir"] for s in meta["shards"]] if is_sharded(meta) else [index_dir]
    parts = [_part("docstore offsets", _sizes(folders, "passages.offsets.npy"), "hot", "8 bytes a passage"),
             _part("docstore passages", _sizes(folders, "passages.jsonl"), "cold", "read for returned passages")]
    backend = meta.get("backend")
    if backend == "bm25s":
        parts += _bm25s(index_dir, meta, folders)
    elif backend == "dense":
        parts += _dense(meta, folders)
    elif backend == "hybrid":
        from agentic_verl.retrieval.index import read_meta

        parts = []
        for sub in ("sparse", "dense"):
            parts += [{**p, "part": f"{sub}: {p['part']}"} for p in serving_estimate(index_dir / sub,
                                                                                        read_meta(index_dir / sub))]
    else:
        parts.append(_part(f"{backend} index files", _tree_size(index_dir), "hot", "all files of the folder"))
    return parts


def totals(parts: list[dict]) -> dict:
    by_kind = {kind: sum(p["bytes"] for p in parts if p["kind"] == kind) for kind in ("resident", "hot", "cold")}
    return {**by_kind, "full_speed": by_kind["resident"] + by_kind["hot"]}


def format_bytes(n: float) -> str:
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.2f} {unit}"
    return f"{int(n)} B"


def report(index_dir: str | Path, meta: dict) -> str:
    """The estimate as a small table, for `agentic-verl index info`."""
    parts = serving_estimate(index_dir, meta)
    lines = [f"memory to serve {index_dir} (an estimate from the files and index_meta.json; see "
             "agentic_verl/retrieval/footprint.py):"]
    lines += [f"  {p['part']:<34} {format_bytes(p['bytes']):>11}  {p['kind']:<8} {p['note']}" for p in parts]
    total = totals(parts)
    lines.append(f"  full speed (resident + hot): {format_bytes(total['full_speed'])} "
                 f"(resident {format_bytes(total['resident'])}, memory-mapped hot {format_bytes(total['hot'])}); "
                 f"cold on disk: {format_bytes(total['cold'])}; plus the Python/torch runtime")
    return "\n".join(lines)


def _bm25s(index_dir: Path, meta: dict, folders: list[Path]) -> list[dict]:
    vocab = (index_dir / "tokenizer" / "vocab.tokenizer.json").stat().st_size * VOCAB_JSON_TO_RAM
    parts = [_part("tokenizer vocabulary", vocab, "resident", f"~{VOCAB_JSON_TO_RAM:g}x its JSON (measured)")]
    arrays = sum(_sizes(folders, f"bm25s/{name}.csc.index.npy") for name in ("data", "indices", "indptr"))
    parts.append(_part(f"score matrices ({len(folders)} shard{'s' * (len(folders) > 1)})", arrays, "hot",
                       "CSC arrays, read for the query terms"))
    if not is_sharded(meta):
        index_vocab = _sizes(folders, "bm25s/vocab.index.json") * INDEX_VOCAB_JSON_TO_RAM
        parts.append(_part("bm25s vocab_dict", index_vocab, "resident", "the unsharded layout's second vocabulary"))
    nonoccurrence = _sizes(folders, "bm25s/nonoccurrence_array.index.npy")
    if nonoccurrence:
        parts.append(_part("nonoccurrence arrays", nonoccurrence, "resident", "bm25l / bm25+, one per shard"))
    largest = max(s["passages"] for s in meta["shards"]) if is_sharded(meta) else meta["passages"]
    threads = int(meta.get("n_threads") or min(4, os.cpu_count() or 1))
    parts.append(_part("score buffers", 4 * largest * threads, "resident",
                       f"4 bytes x {largest:,} passages (largest shard) x {threads} search threads"))
    return parts


def _dense(meta: dict, folders: list[Path]) -> list[dict]:
    kind = meta["faiss_index"]
    embeddings = _sizes(folders, "embeddings.npy")
    if kind == "flat":
        how = "memory-mapped, scanned per query" if is_sharded(meta) else "copied into a faiss IndexFlatIP"
        parts = [_part("flat vectors", embeddings, "hot" if is_sharded(meta) else "resident", how)]
    else:
        parts = [_part(f"faiss {kind} index", _sizes(folders, "index.faiss"), "hot", "memory-mapped (IO_FLAG_MMAP)"),
                 _part("embeddings.npy", embeddings, "cold", "kept for rebuilding, not read when serving")]
    parts.append(_part("encoder weights", _model_size(meta["model"]), "resident",
                       f"{meta['model']} (0 if not a local folder)"))
    return parts


def _model_size(model: str) -> int:
    from agentic_verl.retrieval.backends.dense_encoder import resolve_model_path

    folder = Path(resolve_model_path(model))
    if not folder.is_dir():
        return 0
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file() and f.suffix in (".safetensors", ".bin"))


def _sizes(folders: list[Path], name: str) -> int:
    return sum((f / name).stat().st_size for f in folders if (f / name).is_file())


def _tree_size(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())


def _part(part: str, size: float, kind: str, note: str) -> dict:
    return {"part": part, "bytes": int(size), "kind": kind, "note": note}
