"""`agentic-verl serve retrieval`: the `/retrieve` server (see agentic_verl.retrieval.server).

More servers can be added to the `serve` group through `SUBCOMMANDS` (functions that add a subparser).
"""

from __future__ import annotations

import json
import sys


def register(subparsers) -> None:
    parser = subparsers.add_parser("serve", help="run a tool server (retrieval)")
    sub = parser.add_subparsers(dest="serve_command", metavar="SERVER")
    for add in SUBCOMMANDS:
        add(sub)
    parser.set_defaults(handler=lambda args: parser.print_help() or 2)


def _add_retrieval(sub) -> None:
    from agentic_verl.retrieval.service import Limits

    limits = Limits()
    p = sub.add_parser("retrieval", help="POST /retrieve over an index folder (or a replay file); /health, /metrics")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--index", help="index folder (from `agentic-verl index build`)")
    source.add_argument("--replay", metavar="FILE", help="serve only the answers recorded in FILE (no index)")
    p.add_argument("--record", metavar="FILE", help="append every computed answer to FILE (JSONL) for --replay")
    p.add_argument("--host", default="127.0.0.1", help="bind address (default 127.0.0.1: loopback only)")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--cache-size", type=int, default=100_000, help="LRU entries keyed by (query, topk); 0 = off")
    p.add_argument("--max-queries", type=int, default=limits.max_queries, help="queries per request")
    p.add_argument("--max-query-chars", type=int, default=limits.max_query_chars, help="characters per query")
    p.add_argument("--max-topk", type=int, default=limits.max_topk)
    p.add_argument("--max-body-bytes", type=int, default=limits.max_body_bytes)
    p.add_argument("--max-batch-queries", type=int, default=4096,
                   help="most queries the batcher sends to the backend in one call")
    p.add_argument("--log-level", default="warning", choices=("debug", "info", "warning", "error"))
    p.set_defaults(handler=_serve_retrieval)


def _serve_retrieval(args) -> int:
    from agentic_verl.retrieval.index import load_index
    from agentic_verl.retrieval.server import serve
    from agentic_verl.retrieval.service import Limits, RetrievalService

    if args.record and args.replay:
        raise ValueError("--record and --replay cannot be combined")
    limits = Limits(max_queries=args.max_queries, max_query_chars=args.max_query_chars, max_topk=args.max_topk,
                    max_body_bytes=args.max_body_bytes)
    index = load_index(args.index) if args.index else None
    service = RetrievalService(index, cache_size=args.cache_size, limits=limits, record=args.record,
                               replay=args.replay, max_batch_queries=args.max_batch_queries)
    print(json.dumps({"serving": service.describe()}, indent=2), flush=True)
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        print(f"note: binding {args.host}, reachable from other machines; the server has no authentication",
              file=sys.stderr)
    print(f"retrieval server ({service.mode}) on http://{args.host}:{args.port}  (POST /retrieve, GET /health, "
          "GET /metrics)", flush=True)
    serve(service, host=args.host, port=args.port, log_level=args.log_level)
    return 0


SUBCOMMANDS = [_add_retrieval]
