"""The baseline for bench_retrieval.py: the `/retrieve` server as one would first write it.

A plain FastAPI endpoint that calls `backend.search` for each request's queries under a lock (backends are
not thread-safe), with no micro-batching and no cache. FastAPI runs a sync endpoint in its thread pool, so
concurrent requests queue on the lock and the engine sees one request at a time.

    python benchmarks/naive_retrieval_server.py --index INDEX_DIR --port 8001
"""

from __future__ import annotations

import argparse
import threading

import uvicorn
from fastapi import FastAPI
from pydantic import BaseModel

from agentic_verl.retrieval.index import load_index


class RetrieveRequest(BaseModel):
    queries: list[str]
    topk: int = 3
    return_scores: bool = False


def create_app(index) -> FastAPI:
    app = FastAPI()
    lock = threading.Lock()

    @app.get("/health")
    def health():
        return {"status": "ok", "index": index.meta}

    @app.post("/retrieve")
    def retrieve(request: RetrieveRequest):
        with lock:
            results = index.search(request.queries, request.topk)
        if request.return_scores:
            return {"result": [[{"document": {"id": p.id, "contents": p.contents}, "score": p.score} for p in hits]
                               for hits in results]}
        return {"result": [[{"id": p.id, "contents": p.contents} for p in hits] for hits in results]}

    return app


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index", required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8001)
    args = parser.parse_args()
    index = load_index(args.index)
    try:
        uvicorn.run(create_app(index), host=args.host, port=args.port, log_level="warning", access_log=False)
    finally:
        index.close()


if __name__ == "__main__":
    main()
