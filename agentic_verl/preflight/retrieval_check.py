"""Preflight: the retrieval server answers `/health` and a real `/retrieve`."""

from __future__ import annotations

from agentic_verl.preflight.settings import Report


def check_retrieval(report: Report, url: str | None, question: str | None, timeout_s: float = 10.0) -> None:
    import asyncio

    from agentic_verl.retrieval.client import RetrievalClient, RetrievalError, health_problem

    if not url:
        report.problem("retrieval", "no retrieval URL given (RETRIEVAL_URL)")
        return
    base = url.rstrip("/").removesuffix("/retrieve")
    start = ("start one: agentic-verl serve retrieval --index INDEX_DIR --port PORT, or INDEX_DIR=... bash "
             "scripts/launch_retrieval_server.sh bash recipes/rag_r1/<recipe>.sh")
    problem = health_problem(base, timeout_s)
    if problem is not None:
        report.problem("retrieval", f"{problem}; {start}" if problem.startswith("no answer") else problem)
        return
    query = question or "test"

    async def search():
        client = RetrievalClient(base, timeout_s=timeout_s, max_retries=0)
        try:
            return await client.retrieve([query], topk=3)
        finally:
            await client.aclose()

    try:
        [passages] = asyncio.run(search())
    except (RetrievalError, ValueError) as exc:
        report.problem("retrieval", f"{base}/health is up but POST /retrieve failed: {exc}")
        return
    if not passages and question is None:  # no training question to search for (the data check says why)
        report.ok("retrieval", f"{base}: /health ok; /retrieve answers (no training question to test a search with)")
        return
    if not passages:
        report.problem("retrieval", f"{base}/retrieve returned no passages for the first training question "
                                    f"{query!r}: is it the index of this data's corpus?")
        return
    report.ok("retrieval", f"{base}: /health ok; /retrieve {query[:60]!r} -> {len(passages)} passage(s)")
