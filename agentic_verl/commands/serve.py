"""`agentic-verl serve retrieval`: the `/retrieve` server (see agentic_verl.retrieval.server), in this process or
as `--replicas N` Ray actors behind it (agentic_verl.retrieval.replicas). A bind address other than loopback needs
the shared token in AGENTIC_VERL_RETRIEVAL_TOKEN (agentic_verl.retrieval.auth).

`agentic-verl serve bfcl-env`: the BFCL environment server (agentic_verl.bfcl_env.server), started with
`.venv-bfcl`'s python (bfcl-eval lives there); its token variable is AGENTIC_VERL_BFCL_ENV_TOKEN.

More servers can be added to the `serve` group through `SUBCOMMANDS` (functions that add a subparser).
"""

from __future__ import annotations

import json


def register(subparsers) -> None:
    parser = subparsers.add_parser("serve", help="run a tool server (retrieval, bfcl-env)")
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
    p.add_argument("--host", default="127.0.0.1",
                   help="bind address (default 127.0.0.1: loopback only; any other needs AGENTIC_VERL_RETRIEVAL_TOKEN)")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--cache-size", type=int, default=100_000, help="LRU entries keyed by (query, topk); 0 = off")
    p.add_argument("--max-queries", type=int, default=limits.max_queries, help="queries per request")
    p.add_argument("--max-query-chars", type=int, default=limits.max_query_chars, help="characters per query")
    p.add_argument("--max-topk", type=int, default=limits.max_topk)
    p.add_argument("--max-body-bytes", type=int, default=limits.max_body_bytes)
    p.add_argument("--max-batch-queries", type=int, default=4096,
                   help="most queries the batcher sends to the backend in one call")
    p.add_argument("--log-level", default="warning", choices=("debug", "info", "warning", "error"))
    group = p.add_argument_group("replicas on Ray (this server is the HTTP front; each replica loads the index)")
    group.add_argument("--replicas", type=int, default=0, help="number of Ray actor replicas (default 0: serve here)")
    group.add_argument("--ray-address", help="Ray cluster to use ('auto', HOST:PORT); default: start a local one")
    group.add_argument("--ray-temp-dir", help="session folder of a local Ray started here (default Ray's /tmp/ray)")
    group.add_argument("--replica-cpus", type=float, default=1.0, help="CPUs Ray reserves per replica")
    group.add_argument("--replica-gpus", type=float, default=0.0, help="GPUs Ray reserves per replica")
    p.set_defaults(handler=_serve_retrieval)


def _serve_retrieval(args) -> int:
    from agentic_verl.retrieval.auth import check_bind, token_from_env
    from agentic_verl.retrieval.server import serve
    from agentic_verl.retrieval.service import Limits

    token = token_from_env()
    check_bind(args.host, token)  # before loading anything: a refused bind fails in a second
    if args.record and args.replay:
        raise ValueError("--record and --replay cannot be combined")
    _check_replica_args(args)
    limits = Limits(max_queries=args.max_queries, max_query_chars=args.max_query_chars, max_topk=args.max_topk,
                    max_body_bytes=args.max_body_bytes)
    if args.replicas:
        import ray

        from agentic_verl.retrieval.replicas import ReplicaPool, start_ray

        start_ray(args.ray_address, args.ray_temp_dir)
        try:
            service = ReplicaPool(index_dir=args.index, replay=args.replay, replicas=args.replicas,
                                  num_cpus=args.replica_cpus, num_gpus=args.replica_gpus, cache_size=args.cache_size,
                                  limits=limits, max_batch_queries=args.max_batch_queries)
            _announce(service, args, token)
            serve(service, host=args.host, port=args.port, log_level=args.log_level, token=token)
        finally:
            ray.shutdown()
        return 0
    from agentic_verl.retrieval.index import load_index
    from agentic_verl.retrieval.service import RetrievalService

    index = load_index(args.index) if args.index else None
    service = RetrievalService(index, cache_size=args.cache_size, limits=limits, record=args.record,
                               replay=args.replay, max_batch_queries=args.max_batch_queries)
    _announce(service, args, token)
    serve(service, host=args.host, port=args.port, log_level=args.log_level, token=token)
    return 0


def _check_replica_args(args) -> None:
    if args.replicas < 0:
        raise ValueError(f"--replicas must be >= 0, got {args.replicas}")
    if args.replicas and args.record:
        raise ValueError("--record needs a single server (no --replicas): replicas would write one file at once")
    if not args.replicas:
        given = [flag for flag, value in (("--ray-address", args.ray_address), ("--ray-temp-dir", args.ray_temp_dir),
                                          ("--replica-cpus", args.replica_cpus != 1.0),
                                          ("--replica-gpus", args.replica_gpus != 0.0)) if value]
        if given:
            raise ValueError(f"{', '.join(given)} need(s) --replicas N")


def _announce(service, args, token: str | None) -> None:
    from agentic_verl.retrieval.auth import is_loopback

    print(json.dumps({"serving": service.describe()}, indent=2), flush=True)
    where = "loopback only" if is_loopback(args.host) else "reachable from other machines"
    auth = "every request needs the token (GET /health without one: status only)" if token else "no token"
    replicas = f", {args.replicas} Ray replica(s)" if args.replicas else ""
    print(f"retrieval server ({service.mode}{replicas}) on http://{args.host}:{args.port}  ({where}; {auth}; "
          "POST /retrieve, GET /health, GET /metrics)", flush=True)


def _add_bfcl_env(sub) -> None:
    from agentic_verl.bfcl_env.protocol import add_server_arguments

    p = sub.add_parser("bfcl-env", help="BFCL's multi-turn API simulators and checker over HTTP (runs in .venv-bfcl)",
                       description="Sessions of bfcl-eval's multi-turn simulators, one per trajectory, and its "
                                   "multi-turn checker (docs/bfcl_env.md). --port 0 picks a free port.")
    add_server_arguments(p)
    p.add_argument("--startup-timeout-s", type=float, default=60.0, help="how long to wait for /health")
    p.set_defaults(handler=_serve_bfcl_env)


def _serve_bfcl_env(args) -> int:
    import signal

    from agentic_verl.bfcl_env.process import BfclEnvProcess
    from agentic_verl.bfcl_env.protocol import SERVER_NAME, TOKEN_ENV, limit_flags
    from agentic_verl.retrieval.auth import check_bind, token_from_env

    check_bind(args.host, token_from_env(TOKEN_ENV), env=TOKEN_ENV, server=SERVER_NAME)  # before starting anything
    server = BfclEnvProcess(limit_flags(args), host=args.host, port=args.port or None,
                            startup_timeout_s=args.startup_timeout_s)  # FileNotFoundError naming `make bfcl-venv`
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)  # a plain SIGTERM would orphan the server
    try:
        server.start()
        print(f"{SERVER_NAME} ready on {server.url} (pid {server.process.pid}, {server.python})", flush=True)
        return server.wait()
    finally:
        server.stop()  # Ctrl-C or SIGTERM here: stop it too
        signal.signal(signal.SIGTERM, previous)


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt


SUBCOMMANDS = [_add_retrieval, _add_bfcl_env]
