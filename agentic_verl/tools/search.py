"""`SearchTool`: verl's BaseTool for searching a passage corpus, Search-R1 / RAG-R1 style.

The model calls `search` with `{"query_list": ["q1", "q2"]}` (1..max_queries non-empty strings); all queries go
in one request to a `/retrieve` server (`retrieval_url`, through `RetrievalClient`: timeout, bounded retries with
backoff, a concurrency limit), or, for small corpora, to an index opened in this process (`index_dir`). The
observation is the passages in the Search-R1 format (`Doc 1 (Title: ...) text`), one block per query, with the
protocol's tags (`<answer>`, `<tool_call>`, ...) HTML-escaped, so a retrieved page can never supply a rewarded answer.

A failure never raises: the observation says what went wrong and the returned metrics carry
`status`/`error_type` = "timeout" | "server_error" | "bad_arguments", so the rollout goes on and the failure is
counted. Fail-fast: after `max_consecutive_search_failures` searches in a row that got no answer (timeouts,
unreachable server, 5xx; counted per process and server across trajectories, reset by any answer) the tool
raises `SearchFailFastError` on that call and every later one, and `raise_if_tripped()` raises it too; the
`tool_agent_traced` loop checks it and fails the trajectory, so a dead server stops the run instead of training on
"Search error" observations (verl's plain `tool_agent` catches the error and goes on). 0 = never.

The tool schema is built here from the config (one source); the YAML carries only the config:

    tools:
      - class_name: agentic_verl.tools.search.SearchTool
        config: {type: native, retrieval_url: "http://127.0.0.1:8000", topk: 3, max_queries: 5}

(the shipped configs/tools/search_tool.yaml is this, for `actor_rollout_ref.rollout.multi_turn.tool_config_path`).
A server that requires a token (agentic_verl.retrieval.auth) gets it from AGENTIC_VERL_RETRIEVAL_TOKEN through
`RetrievalClient`; no config key holds it.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from dataclasses import dataclass
from typing import Any
from uuid import uuid4

from verl.tools.base_tool import BaseTool
from verl.tools.schemas import OpenAIFunctionToolSchema, ToolResponse
from verl.utils.rollout_trace import rollout_trace_op

from agentic_verl.fail_fast import SEARCH_FAILURES, check_limit
from agentic_verl.retrieval.client import RetrievalClient, RetrievalError
from agentic_verl.retrieval.formatting import escape_protocol_tags, format_passages
from agentic_verl.retrieval.protocol import Passage
from agentic_verl.tools.config import check_schema_keeps, settings_from_config

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class SearchSettings:
    """The tool's `config` keys (besides verl's `type: native`)."""

    retrieval_url: str | None = None  # a running `agentic-verl serve retrieval`
    index_dir: str | None = None  # or an index opened in this process (small corpora)
    name: str = "search"
    topk: int = 3
    max_queries: int = 5
    max_query_chars: int = 1000
    timeout_s: float = 10.0
    max_retries: int = 2
    backoff_s: float = 0.25
    max_concurrency: int = 16
    max_consecutive_search_failures: int = 32  # stop the run after this many failed searches in a row; 0 = never

    @classmethod
    def from_config(cls, config: dict) -> SearchSettings:
        settings = settings_from_config(cls, config, "search tool")
        if (settings.retrieval_url is None) == (settings.index_dir is None):
            raise ValueError("search tool config needs exactly one of retrieval_url (a server) or index_dir (in-process)")
        for key in ("topk", "max_queries", "max_query_chars", "max_concurrency"):
            if not isinstance(getattr(settings, key), int) or getattr(settings, key) < 1:
                raise ValueError(f"search tool config {key} must be a positive integer, got {getattr(settings, key)!r}")
        check_limit(settings.max_consecutive_search_failures, "search tool config max_consecutive_search_failures")
        return settings


def search_tool_schema(settings: SearchSettings) -> OpenAIFunctionToolSchema:
    """The one definition of the tool's schema."""
    return OpenAIFunctionToolSchema.model_validate({
        "type": "function",
        "function": {
            "name": settings.name,
            "description": f"Search a Wikipedia-style corpus. Returns the top {settings.topk} passages for each "
                           f"query. Send up to {settings.max_queries} queries in one call.",
            "parameters": {
                "type": "object",
                "properties": {
                    "query_list": {
                        "type": "array",
                        "description": f"1 to {settings.max_queries} search queries (strings), "
                                       'e.g. ["who wrote Hamlet", "Hamlet publication year"]',
                    },
                },
                "required": ["query_list"],
            },
        },
    })


_SERVER_DOWN = ("timeout", "server_error")  # failures that count toward the fail-fast streak


def _fail_fast_message(settings: SearchSettings, count: int, detail: str) -> str:
    where = settings.retrieval_url or f"the in-process index {settings.index_dir}"
    check = f" (curl {settings.retrieval_url.rstrip('/')}/health)" if settings.retrieval_url else ""
    return (f"search tool fail-fast: {count} consecutive searches failed in this process (last: {detail}); "
            f"{where} looks down, and training on 'Search error' observations teaches the policy nothing. Check "
            f"it{check}, restart it and resume; max_consecutive_search_failures={count} in the tool's config "
            f"(the tool_config_path YAML) sets the limit (0 = never stop).")


# In-process indexes, shared by every tool instance of this process (keyed by folder).
_LOCAL_SERVICES: dict[str, Any] = {}
_LOCAL_LOCK = threading.Lock()


def _local_service(index_dir: str):
    from agentic_verl.retrieval.service import RetrievalService

    with _LOCAL_LOCK:
        if index_dir not in _LOCAL_SERVICES:
            _LOCAL_SERVICES[index_dir] = RetrievalService.from_index_dir(index_dir)
        return _LOCAL_SERVICES[index_dir]


class SearchTool(BaseTool):
    def __init__(self, config: dict, tool_schema: OpenAIFunctionToolSchema | None = None):
        self.settings = SearchSettings.from_config(dict(config))
        check_schema_keeps(tool_schema, "query_list")
        super().__init__(config, tool_schema)
        self._instances: dict[str, dict] = {}
        s = self.settings
        self._client = RetrievalClient(s.retrieval_url, timeout_s=s.timeout_s, max_retries=s.max_retries,
                                       backoff_s=s.backoff_s, max_concurrency=s.max_concurrency) \
            if s.retrieval_url else None
        self._server = s.retrieval_url or f"index:{s.index_dir}"  # the fail-fast key

    def raise_if_tripped(self) -> None:
        """Raise SearchFailFastError if this tool's server reached the fail-fast limit in this process."""
        SEARCH_FAILURES.raise_if_tripped(self._server)

    def get_openai_tool_schema(self) -> OpenAIFunctionToolSchema:
        return getattr(self, "tool_schema", None) or search_tool_schema(self.settings)

    async def create(self, instance_id: str | None = None, **kwargs) -> tuple[str, ToolResponse]:
        instance_id = instance_id or str(uuid4())
        self._instances[instance_id] = {"calls": 0, "errors": 0}
        return instance_id, ToolResponse()

    @rollout_trace_op
    async def execute(self, instance_id: str, parameters: dict[str, Any], **kwargs) -> tuple[ToolResponse, float, dict]:
        self.raise_if_tripped()  # the server died earlier in this process: stop, do not observe an error
        state = self._instances.setdefault(instance_id, {"calls": 0, "errors": 0})
        state["calls"] += 1
        started = time.perf_counter()
        metrics = {"status": "ok", "error_type": None, "num_queries": 0, "num_passages": 0}
        try:
            queries = self._check_arguments(parameters)  # the model's mistake: the server's streak is untouched
            metrics["num_queries"] = len(queries)
            results = await self._retrieve(queries)
        except Exception as exc:
            if not isinstance(exc, RetrievalError):
                logger.exception("search tool: unexpected failure")
                exc = RetrievalError("server_error", f"{type(exc).__name__}: {exc}")
            state["errors"] += 1
            if exc.category in _SERVER_DOWN:  # raises SearchFailFastError at the limit
                detail = str(exc)
                SEARCH_FAILURES.failed(self._server, self.settings.max_consecutive_search_failures,
                                       lambda count: _fail_fast_message(self.settings, count, detail))
            elif metrics["num_queries"]:  # the server answered (it rejected the request): it is up
                SEARCH_FAILURES.reset(self._server)
            metrics.update(status=exc.category, error_type=exc.category,
                           latency_s=round(time.perf_counter() - started, 6))
            return ToolResponse(text=_error_observation(exc, self.settings)), 0.0, metrics
        SEARCH_FAILURES.reset(self._server)
        metrics.update(num_passages=sum(len(p) for p in results), latency_s=round(time.perf_counter() - started, 6))
        return ToolResponse(text=format_results(queries, results)), 0.0, metrics

    async def release(self, instance_id: str, **kwargs) -> None:
        self._instances.pop(instance_id, None)

    def _check_arguments(self, parameters: Any) -> list[str]:
        s = self.settings
        if not isinstance(parameters, dict):
            raise RetrievalError("bad_arguments", f"the arguments must be a JSON object, got {type(parameters).__name__}")
        queries = parameters.get("query_list")
        if not isinstance(queries, list):
            raise RetrievalError("bad_arguments", f"query_list must be a list of strings, got "
                                 f"{type(queries).__name__ if queries is not None else 'nothing'}")
        if not queries:
            raise RetrievalError("bad_arguments", "query_list is empty")
        if len(queries) > s.max_queries:
            raise RetrievalError("bad_arguments", f"{len(queries)} queries; at most {s.max_queries} per call")
        cleaned = []
        for i, query in enumerate(queries):
            if not isinstance(query, str) or not query.strip():
                raise RetrievalError("bad_arguments", f"query_list[{i}] must be a non-empty string")
            if len(query) > s.max_query_chars:
                raise RetrievalError("bad_arguments", f"query_list[{i}] is {len(query)} characters long; "
                                     f"at most {s.max_query_chars}")
            cleaned.append(query.strip())
        return cleaned

    async def _retrieve(self, queries: list[str]) -> list[list[Passage]]:
        s = self.settings
        if self._client is not None:
            return await self._client.retrieve(queries, topk=s.topk)
        from agentic_verl.retrieval.service import RequestError

        service = _local_service(s.index_dir)
        try:
            return await asyncio.wait_for(service.search(queries, s.topk), timeout=s.timeout_s)
        except asyncio.TimeoutError:
            raise RetrievalError("timeout", f"the in-process index did not answer within {s.timeout_s}s") from None
        except RequestError as exc:
            raise RetrievalError("bad_arguments", str(exc)) from None


def format_results(queries: list[str], results: list[list[Passage]]) -> str:
    """One query: its passages; several: a block per query, headed by the query."""
    blocks = [format_passages(passages) or "No passages found." for passages in results]
    if len(queries) == 1:
        return blocks[0]
    return "\n\n".join(f'Results for "{escape_protocol_tags(query)}":\n{block}'
                         for query, block in zip(queries, blocks, strict=True))


def _error_observation(error: RetrievalError, settings: SearchSettings) -> str:
    message = str(error.args[0])
    if error.category == "bad_arguments":
        return (f"Search error (bad arguments): {message}. Call search with "
                f'{{"query_list": ["query 1", ...]}}: 1 to {settings.max_queries} non-empty strings.')
    if error.category == "timeout":
        return f"Search error (timeout): {message}. No results; try again or answer with what you know."
    return f"Search error (server error): {message}. No results; try again or answer with what you know."
