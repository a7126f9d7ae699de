"""`agentic-verl index build | encode | info | search`: build an index folder from a corpus (or from vectors that
`index encode` computed on Ray workers), inspect it, try a query."""

from __future__ import annotations

import argparse
import errno
import json
import os
import sys


def register(subparsers) -> None:
    parser = subparsers.add_parser("index", help="build / inspect / query a retrieval index (bm25s, lucene, dense, hybrid)")
    sub = parser.add_subparsers(dest="index_command", metavar="INDEX_COMMAND")

    p = sub.add_parser("build", help="index a JSONL corpus into a folder (backend files + index_meta.json)",
                       description="Corpus: JSONL, one passage per line, {\"id\", \"contents\": \"Title\\ntext\"} or "
                       "{\"id\", \"title\", \"text\"}. Backend options go as -o KEY=VALUE (values parsed as JSON when "
                       "they are JSON), e.g. -o k1=0.9 -o b=0.4; `index build --backend NAME --list-options` lists them.")
    p.add_argument("--corpus", required=False, help="corpus JSONL (.gz accepted)")
    p.add_argument("--out", required=False, help="output index folder")
    p.add_argument("--backend", default=argparse.SUPPRESS, help="bm25s (default), lucene, dense, hybrid, or module:Class")
    p.add_argument("-o", "--option", action="append", default=[], metavar="KEY=VALUE", help="a backend option")
    p.add_argument("--faiss-index", "--dense-index", dest="faiss_index", choices=("flat", "hnsw", "ivf", "ivfpq"),
                   help="dense / hybrid: faiss index type; hnsw, ivf or ivfpq (~1/30 of flat's memory) for large "
                   "corpora (same as -o faiss_index=...)")
    p.add_argument("--convention", metavar="NAME",
                   help="dense / hybrid: query/passage text convention of the model: auto (default: e5 / bge from "
                   "the model name, else none), none, e5 ('query: '/'passage: '), bge (RAG-R1's query instruction); "
                   "stored in index_meta.json and applied to queries at load (same as -o convention=...)")
    p.add_argument("--embeddings", metavar="DIR",
                   help="dense: index the vectors of an `index encode` folder instead of encoding (its model and "
                   "convention become the index's; a folder of another corpus or model, or unfinished, is refused)")
    p.add_argument("--shards", type=int, metavar="N",
                   help="bm25s / dense: split the corpus into N shards; the build streams the corpus, holds one shard "
                   "at a time in memory and can be resumed; queries search every shard and merge their top-k "
                   "exactly (pick N so that a shard has <= ~1-2M passages)")
    p.add_argument("--resume", action="store_true",
                   help="finish an interrupted --shards build in --out (its corpus, backend and options are read "
                   "from the build's manifest); completed steps are kept")
    p.add_argument("--overwrite", action="store_true", help="replace a non-empty --out folder")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--list-options", action="store_true", help="print the backend's options and exit")
    p.set_defaults(handler=_build)

    p = sub.add_parser("encode", help="encode a corpus's passages into an embeddings folder on Ray workers (GPU "
                       "when the cluster has them), for index build --backend dense --embeddings DIR",
                       description="Streams the corpus in shards of --shard-size passages to --workers Ray actors "
                       "and writes each shard's vectors atomically, with manifest.json (model, convention, dim, "
                       "corpus sha256, rows and ids per shard). --resume encodes only the shards not finished.")
    p.add_argument("--corpus", help="corpus JSONL (.gz accepted)")
    p.add_argument("--model", help="sentence-transformers model name or folder")
    p.add_argument("--out", required=True, help="embeddings folder (new, or the one to --resume)")
    p.add_argument("--convention", metavar="NAME",
                   help="auto (default: e5 / bge from the model name, else none), none, e5, bge: the passage prefix, "
                   "as index build --backend dense applies it; recorded for the queries")
    p.add_argument("--workers", type=int, metavar="N",
                   help="Ray encode actors (default: GPUs / --gpus-per-worker, or 1 without GPUs)")
    p.add_argument("--gpus-per-worker", type=float, metavar="G",
                   help="GPUs per actor (default 1 when the Ray cluster has GPUs, else 0: CPU)")
    p.add_argument("--batch-size", type=int, default=64, help="passages per encoder batch (64)")
    p.add_argument("--shard-size", type=int, metavar="S", help="passages per shard file (100000)")
    p.add_argument("--resume", action="store_true",
                   help="finish an interrupted run in --out; arguments given must match its manifest")
    p.add_argument("--ray-address", help="join this Ray cluster (auto, HOST:PORT); default: start a local one")
    p.add_argument("--ray-temp-dir", help="session folder of a local Ray (no --ray-address)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(handler=_encode)

    p = sub.add_parser("info", help="print an index folder's index_meta.json (stdout) and the memory it needs to "
                       "serve (stderr, an estimate)")
    p.add_argument("index", help="index folder")
    p.set_defaults(handler=_info)

    p = sub.add_parser("search", help="run queries against an index folder (no server) and print the passages")
    p.add_argument("index", help="index folder")
    p.add_argument("queries", nargs="+", help="one or more queries")
    p.add_argument("--topk", type=int, default=3)
    p.set_defaults(handler=_search)

    parser.set_defaults(handler=lambda args: parser.print_help() or 2)


def parse_options(items: list[str]) -> dict:
    """["k1=0.9", "stemmer=porter"] -> {"k1": 0.9, "stemmer": "porter"}."""
    options = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"bad backend option {item!r}: expected KEY=VALUE")
        try:
            options[key.strip()] = json.loads(value)
        except json.JSONDecodeError:
            options[key.strip()] = value
    return options


def _build(args) -> int:
    from agentic_verl.retrieval.backends.base import DEFAULT_BACKEND, backend_class
    from agentic_verl.retrieval.build import resume_command
    from agentic_verl.retrieval.index import build_index

    args.backend_given = hasattr(args, "backend")
    if not args.backend_given:
        args.backend = DEFAULT_BACKEND

    if args.list_options:
        cls = backend_class(args.backend)
        options = getattr(cls, "OPTIONS", None)
        if not options:
            print(f"{args.backend}: see the docstring of {cls.__module__}.{cls.__qualname__}")
        for key, help_text in (options or {}).items():
            print(f"  {key:12s} {help_text}")
        return 0
    if not args.out or not (args.corpus or args.resume):
        raise ValueError("index build needs --corpus and --out (or --out and --resume)")
    options = parse_options(args.option)
    dense_key = "dense.{}" if args.backend == "hybrid" else "{}"  # hybrid passes dense.<option> to its dense index
    if args.faiss_index:
        options[dense_key.format("faiss_index")] = args.faiss_index
    if args.convention:
        options[dense_key.format("convention")] = args.convention
    if args.embeddings:
        if args.backend != "dense":
            raise ValueError("--embeddings needs --backend dense")
        if not os.path.isdir(args.embeddings):
            raise FileNotFoundError(f"--embeddings {args.embeddings}: no such folder; write one with agentic-verl "
                                    "index encode --corpus CORPUS --model MODEL --out DIR")
        options["embeddings"] = args.embeddings
    if args.backend == "dense" and os.path.isdir(options.get("embeddings") or ""):  # an `index encode` folder
        _check_embeddings(args, options)
    elif args.backend in ("dense", "hybrid"):
        _announce_convention(lambda key: options.get(dense_key.format(key)))
    sharded = args.shards is not None or args.resume
    backend = args.backend if not args.resume or args.backend_given else None  # --resume reads it from the manifest
    try:
        meta = build_index(args.corpus, args.out, backend, overwrite=args.overwrite,
                           show_progress=not args.no_progress, shards=args.shards, resume=args.resume, **options)
    except TypeError as exc:  # an unknown keyword for the backend's build()
        raise ValueError(f"backend {args.backend!r}: {exc}") from None
    except OSError as exc:
        if exc.errno == errno.ENOSPC and sharded:  # its message names the resume command
            raise ValueError(exc.strerror) from None
        raise
    except KeyboardInterrupt:
        if sharded:
            print(f"interrupted; finished steps are kept, resume with: {resume_command(args.out)}", file=sys.stderr)
        raise
    print(json.dumps(meta, indent=2))
    shards = f" in {len(meta['shards'])} shards" if meta.get("shards") else ""
    print(f"index: {meta['passages']} passages ({meta['backend']}){shards} in {args.out}, {meta['build_seconds']} s")
    return 0


def _announce_convention(option) -> None:
    """Say which text convention the dense encoder will use before encoding starts (an unknown name fails here).
    `option(key)` is the dense option `key` as given, or None."""
    from agentic_verl.retrieval.backends.dense_encoder import DEFAULT_MODEL, resolve_convention

    model, requested = option("model") or DEFAULT_MODEL, option("convention") or "auto"
    chosen = resolve_convention(model, requested, option("query_prefix"), option("passage_prefix"))
    how = f"auto, from the model name {model!r}" if requested == "auto" else "as requested"
    print(f"convention: {chosen.name} ({how}): query prefix {chosen.query_prefix!r}, "
          f"passage prefix {chosen.passage_prefix!r}")


def _check_embeddings(args, options: dict) -> None:
    """Open the --embeddings folder before the corpus is read (unfinished, damaged, another model: refused now) and
    say which convention it gives; an unsharded build checks the corpus here too (a sharded one in its plan)."""
    from agentic_verl.retrieval.backends.dense_format import open_encoded
    from agentic_verl.retrieval.corpus import count_lines, file_sha256

    folder = options["embeddings"]
    store = open_encoded(folder, *(options.get(k) for k in ("model", "convention", "query_prefix", "passage_prefix")))
    if args.shards is None and not args.resume:
        store.check_corpus(file_sha256(args.corpus), count_lines(args.corpus), args.corpus)
    meta = store.encoder_meta
    print(f"embeddings: {len(store)} x {meta['dim']} vectors of {meta['model']!r} from {folder}; convention "
          f"{meta['convention']}: query prefix {meta['query_prefix']!r}, passage prefix {meta['passage_prefix']!r}")


def _encode(args) -> int:
    from agentic_verl.retrieval.embeddings import resume_command
    from agentic_verl.retrieval.encode import EncodeError, encode_corpus

    try:
        summary = encode_corpus(args.corpus, args.model, args.out, convention=args.convention, workers=args.workers,
                                gpus_per_worker=args.gpus_per_worker, batch_size=args.batch_size,
                                shard_size=args.shard_size, resume=args.resume, ray_address=args.ray_address,
                                ray_temp_dir=args.ray_temp_dir, show_progress=not args.no_progress)
    except EncodeError as exc:
        print(f"agentic-verl index encode: error: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        if exc.errno == errno.ENOSPC:  # its message names the resume command
            raise ValueError(exc.strerror) from None
        raise
    except KeyboardInterrupt:
        print(f"interrupted; finished shards are kept, resume with: {resume_command(args.out)}", file=sys.stderr)
        raise
    print(json.dumps(summary, indent=2))
    print(f"embeddings: {len(summary['encoded'])} shard(s) encoded now, {summary['skipped']} already done, "
          f"{summary['passages']} passages in {args.out}")
    return 0


def _info(args) -> int:
    from agentic_verl.retrieval.footprint import report
    from agentic_verl.retrieval.index import read_meta

    meta = read_meta(args.index)
    print(json.dumps(meta, indent=2))
    print(report(args.index, meta), file=sys.stderr)  # stdout stays the meta's JSON, for scripts
    return 0


def _search(args) -> int:
    from agentic_verl.retrieval.formatting import format_passages
    from agentic_verl.retrieval.index import load_index

    index = load_index(args.index)
    try:
        for query, passages in zip(args.queries, index.search(args.queries, args.topk), strict=True):
            print(f"== {query}")
            for passage in passages:
                print(f"   [{passage.score:.3f}] id={passage.id}")
            print(format_passages(passages) or "(no passages)")
    finally:
        index.close()
    return 0
