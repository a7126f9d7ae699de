"""`rag_r1`: the RAG-R1 / Search-R1 tag protocol as a verl agent loop (docs/methods.md, "RAG-R1").

One assistant turn that the policy continues across searches:

    prompt (chat template, generation prompt) | gen 1 ... </search> | \\n<information>\\n docs \\n</information>\\n | gen 2 ... </answer>
    response_mask                              |  1 1 1 ... 1         |  0 0 0 ... 0                                 |  1 1 ... 1

- Generation stops at `</search>` or `</answer>`. The stop strings are sent to the server (`stop`, which vLLM
  and SGLang accept) and, because a server may ignore them, also applied here on the returned token ids:
  the generated ids are cut right after the token that completes the first stop tag (`cut_at_stop`). This
  assumes a server that honours `stop` keeps the tag's tokens in `token_ids` (vLLM trims only the text); for a
  server that drops them, set `server_stop_strings: false` and the loop alone cuts (exact, but the server
  generates on to EOS or the turn limit).
- The turn's first complete `<search>`/`<answer>` block is acted on. `<answer>` ends the trajectory.
  `<search>`: "sq" mode sends the whole content as one query, "mq" splits it on commas (first `max_queries`).
  All queries of a turn go to the retrieval server in ONE request (top-`topk` each).
- Observation: `\\n<information>\\n` + documents + `\\n</information>\\n`. Each query's documents are
  `Doc i: <title>\\n<text>` lines, cut to `max_obs_length` tokens. sq: that block; mq: RAG-R1's JSON
  `{"query": [...], "documents": [...]}` with one block per query. Protocol tags inside documents are
  HTML-escaped (`escape_document_tags`), so `<answer>` in a retrieved page can never be read as the policy's.
- A turn with no complete block gets the fixed invalid-action observation.
- `max_turns` turns may search; then one final generation runs with search disabled (a `<search>` in it is
  not executed). RAG-R1 does not announce this to the model; `final_turn_notice` (default empty, i.e. RAG-R1's
  behaviour) is an optional observation inserted before that final generation, e.g. "Answer now.".
- Failures (trace.py taxonomy): no_call (neither tag), parse_error (an unclosed or mismatched tag),
  bad_arguments (empty query, or the server rejected the request), timeout / tool_error (retrieval),
  truncated_by_length (a turn hit its token limit, or the response budget ran out), over_limit (one per mq query
  past `max_queries`: not searched). None of them ends the rollout with an exception.
- Fail-fast: a retrieval server that is down would otherwise train the policy on "Search failed" observations.
  After `max_consecutive_search_failures` searches in a row that got no answer (timeouts, unreachable server,
  5xx; counted per process and retrieval URL across trajectories, reset by any answer from the server) the loop
  raises `SearchFailFastError`, and so does every `run()` of that process that starts or ends later: verl marks
  those samples failed, and the first step with no sample left stops the run (verl's replay buffer raises).
  0 = never.

Configuration: the fields of `RagR1Config`, layered (see `_common.resolve_config`): rollout.custom.rag_r1, the
keys of this loop's entry in `rollout.agent.agent_loop_config_path`, then the sample's `extra_info.rag_r1`.
`mode` is the exception: the data decides it (`data rag-r1` writes prompts for one mode and records it in
`extra_info.rag_r1.mode`), so a run-level mode that disagrees with the sample's raises instead of losing.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from typing import Any
from uuid import uuid4

from verl.experimental.agent_loop.agent_loop import AgentLoopBase, AgentLoopOutput, register

from agentic_verl.agent_loops._common import (
    Trajectory,
    cut_at_stop,
    eos_token_ids,
    hit_length_limit,
    merge_server_extra_fields,
    output_extra_fields,
    pop_config_kwargs,
    require_agreement,
    resolve_config,
    server_logprobs,
)
from agentic_verl.agent_loops.prompts import RAG_R1_MODES
from agentic_verl.agent_loops.rag_r1_protocol import (  # noqa: F401 (re-exported)
    STOP_TAGS,
    no_action_failure,
    parse_action,
    split_queries,
)
from agentic_verl.agent_loops.sampling_seeds import start_trajectory
from agentic_verl.agent_loops.trace import TrajectoryTrace
from agentic_verl.fail_fast import SEARCH_FAILURES, SearchFailFastError  # noqa: F401 (re-exported)
from agentic_verl.retrieval.client import RetrievalClient, RetrievalError
from agentic_verl.retrieval.formatting import escape_protocol_tags
from agentic_verl.training.gigpo_anchors import ANCHORS_FIELD, START, anchor_digest

logger = logging.getLogger(__name__)

NAME = "rag_r1"
INVALID_ACTION_OBSERVATION = (
    "\nMy previous action is invalid. If I want to search, I should put the query between <search> and </search>. "
    "If I want to give the final answer, I should put the answer between <answer> and </answer>. Let me try again.\n"
)
RETRIEVAL_ERROR_OBSERVATION = "\n<information>\nSearch failed ({category}); no documents were retrieved.\n</information>\n"
_RETRIEVAL_FAILURES = {"timeout": "timeout", "server_error": "tool_error", "bad_arguments": "bad_arguments"}
_SERVER_DOWN = ("timeout", "server_error")  # retrieval failures that count toward the fail-fast streak
_MODE_HINT = ("The data decides the mode (its prompts were written for one): run with the data's mode "
              "(the rag_r1 recipes read it from the data), or regenerate the data with "
              "`agentic-verl data rag-r1 --questions ... --out DIR --mode <mode>`.")


@dataclass
class RagR1Config:
    retrieval_url: str = "http://127.0.0.1:8000"
    mode: str = "mq"  # "sq": one query per <search>; "mq": comma-separated queries
    max_queries: int = 3  # mq: queries kept per <search>
    topk: int = 3  # passages per query
    max_turns: int = 4  # turns that may search; one final turn without search follows
    max_obs_length: int = 1000  # tokens per query's documents
    max_tokens_per_turn: int = 500
    final_turn_notice: str = ""  # observation before the search-disabled final turn ("" = RAG-R1: none)
    invalid_action_observation: str = INVALID_ACTION_OBSERVATION
    server_stop_strings: bool = True  # also send `stop` to the server (vLLM/SGLang honour it)
    escape_document_tags: bool = True
    retrieval_timeout_s: float = 10.0
    retrieval_max_retries: int = 2
    retrieval_backoff_s: float = 0.25
    retrieval_max_concurrency: int = 16
    max_consecutive_search_failures: int = 32  # stop the run after this many failed searches in a row; 0 = never

    def __post_init__(self):
        if self.mode not in RAG_R1_MODES:
            raise ValueError(f"unknown rag_r1 mode {self.mode!r}; known: {', '.join(RAG_R1_MODES)}")
        for name in ("max_queries", "topk", "max_obs_length", "max_tokens_per_turn"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"rag_r1 {name} must be >= 1, got {getattr(self, name)}")
        if self.max_turns < 0:
            raise ValueError(f"rag_r1 max_turns must be >= 0, got {self.max_turns}")
        if int(self.max_consecutive_search_failures) < 0:
            raise ValueError("rag_r1 max_consecutive_search_failures must be >= 0 (0 = never stop), got "
                             f"{self.max_consecutive_search_failures}")


def _fail_fast_message(cfg: RagR1Config, count: int, detail: str) -> str:
    return (f"rag_r1 fail-fast: {count} consecutive searches failed in this process (last: {detail}); the retrieval "
            f"server at {cfg.retrieval_url} looks down, and training on 'Search failed' observations teaches the "
            f"policy nothing. Check it (curl {cfg.retrieval_url.rstrip('/')}/health), restart it and resume; "
            f"rollout.custom.rag_r1.max_consecutive_search_failures={count} sets the limit (0 = never stop).")


_CLIENTS: dict[tuple, RetrievalClient] = {}


def retrieval_client(cfg: RagR1Config) -> RetrievalClient:
    """One client per server setting, shared by every trajectory of the worker (verl makes a loop per sample)."""
    key = (cfg.retrieval_url, cfg.retrieval_timeout_s, cfg.retrieval_max_retries, cfg.retrieval_backoff_s,
           cfg.retrieval_max_concurrency)
    client = _CLIENTS.get(key)
    if client is None:
        client = _CLIENTS[key] = RetrievalClient(cfg.retrieval_url, timeout_s=cfg.retrieval_timeout_s,
                                                 max_retries=cfg.retrieval_max_retries,
                                                 backoff_s=cfg.retrieval_backoff_s,
                                                 max_concurrency=cfg.retrieval_max_concurrency)
    return client


@register(NAME)
class RagR1AgentLoop(AgentLoopBase):
    def __init__(self, *args, **kwargs):
        self._loop_kwargs = pop_config_kwargs(RagR1Config, kwargs)
        self.agent_name = str(kwargs.pop("name", NAME))  # the entry's name in agent_loop_config_path
        kwargs.pop("tools", None)  # verl passes its tool list to every loop; this one talks to /retrieve itself
        super().__init__(*args, **kwargs)
        self.response_length = int(self.rollout_config.response_length)
        self._eos_ids = eos_token_ids(self.tokenizer)

    # -- observations -----------------------------------------------------------------------------
    def _encode(self, text: str) -> list[int]:
        return self.tokenizer.encode(text, add_special_tokens=False)

    def _truncate(self, text: str, max_tokens: int) -> str:
        ids = self._encode(text)
        return text if len(ids) <= max_tokens else self.tokenizer.decode(ids[:max_tokens], skip_special_tokens=True)

    def information(self, cfg: RagR1Config, queries: list[str], results: list[list[Any]]) -> str:
        blocks = []
        for passages in results:
            lines = []
            for i, passage in enumerate(passages[: cfg.topk], start=1):
                contents = escape_protocol_tags(passage.contents) if cfg.escape_document_tags else passage.contents
                lines.append(f"Doc {i}: {contents}")
            blocks.append(self._truncate("\n".join(lines), cfg.max_obs_length))
        if cfg.mode == "sq":
            body = "\n".join(blocks)
        else:
            body = json.dumps({"query": queries, "documents": blocks}, indent=2, ensure_ascii=False)
        return f"\n<information>\n{body.strip()}\n</information>\n"

    @staticmethod
    def _search_failed(cfg: RagR1Config, detail: str) -> None:
        """Count a search the server did not answer; raises SearchFailFastError at the limit."""
        SEARCH_FAILURES.failed(cfg.retrieval_url, cfg.max_consecutive_search_failures,
                               lambda count: _fail_fast_message(cfg, count, detail))

    async def _search(self, cfg: RagR1Config, queries: list[str],
                      seen: set[str] | None = None) -> tuple[str, str | None]:
        """(observation, failure category or None); the ids of the passages shown are added to `seen`. Raises only
        SearchFailFastError (see the module docstring)."""
        try:
            results = await retrieval_client(cfg).retrieve(queries, topk=cfg.topk)
        except RetrievalError as exc:
            logger.warning("rag_r1 retrieval failed: %s", exc)
            if exc.category in _SERVER_DOWN:
                self._search_failed(cfg, str(exc))
            else:  # the server answered (it rejected the request): it is up
                SEARCH_FAILURES.reset(cfg.retrieval_url)
            category = _RETRIEVAL_FAILURES.get(exc.category, "tool_error")
            return RETRIEVAL_ERROR_OBSERVATION.format(category=exc.category), category
        except Exception as exc:  # a bug or an unexpected answer must not kill the rollout
            logger.warning("rag_r1 retrieval raised %s: %s", type(exc).__name__, exc)
            self._search_failed(cfg, f"{type(exc).__name__}: {exc}")
            return RETRIEVAL_ERROR_OBSERVATION.format(category="error"), "tool_error"
        SEARCH_FAILURES.reset(cfg.retrieval_url)
        if seen is not None:
            seen.update(str(passage.id) for passages in results for passage in passages[: cfg.topk])
        return self.information(cfg, queries, results), None

    # -- the loop ---------------------------------------------------------------------------------
    async def run(self, sampling_params: dict[str, Any], **kwargs) -> AgentLoopOutput:
        seeds = start_trajectory(self.rollout_config, kwargs)  # before any await: batch order names the sample
        extra_info = kwargs.get("extra_info")
        require_agreement("mode", NAME, self.rollout_config, self._loop_kwargs, extra_info, hint=_MODE_HINT)
        cfg = resolve_config(RagR1Config, NAME, self.rollout_config, self._loop_kwargs, extra_info)
        SEARCH_FAILURES.raise_if_tripped(cfg.retrieval_url)  # tripped earlier in this process: stop every sample
        request_id = uuid4().hex
        trace = TrajectoryTrace(request_id, agent_name=self.agent_name)
        prompt_ids = await self.ct_build_initial_tokens(list(kwargs["raw_prompt"]))
        traj = Trajectory(prompt_ids, self.response_length)
        server_fields: dict[str, Any] = {}
        timing = {"generate_sequences": 0.0, "tool_calls": 0.0}
        answer, queries_log, searches_after_budget, out_of_budget = None, [], 0, False
        seen: set[str] = set()  # GiGPO's anchor state: the passages retrieved so far, whatever the queries were
        anchors: list[str] = []

        for turn_index in range(cfg.max_turns + 1):
            search_enabled = turn_index < cfg.max_turns
            if not search_enabled and cfg.final_turn_notice and trace.turns:
                notice_ids = self._encode(cfg.final_turn_notice)
                traj.add_observation(notice_ids)
                trace.turns[-1].observation_tokens += len(notice_ids)
            max_tokens = min(cfg.max_tokens_per_turn, traj.remaining)
            if max_tokens <= 0:
                out_of_budget = True
                break
            params = seeds.params({**sampling_params, "max_tokens": max_tokens})
            if cfg.server_stop_strings:
                params["stop"] = list(STOP_TAGS)
            anchor = anchor_digest(turn_index, sorted(seen)) if turn_index else START
            started = time.perf_counter()
            output = await self.server_manager.generate(
                request_id=request_id, prompt_ids=traj.prompt_ids + traj.response_ids, sampling_params=params
            )
            latency = time.perf_counter() - started
            timing["generate_sequences"] += latency
            merge_server_extra_fields(server_fields, output)

            generated = list(output.token_ids)
            n, stop = cut_at_stop(self.tokenizer, generated, STOP_TAGS)
            logprobs = server_logprobs(output)
            traj.add_policy(generated[:n], logprobs[:n] if logprobs else None)
            if n:  # one anchor per run of policy tokens (an empty generation adds none)
                anchors.append(anchor)
            turn = trace.add_turn(n, 0, latency, stop_reason=stop or output.stop_reason)
            text = self.tokenizer.decode(generated[:n], skip_special_tokens=True)
            action, content = parse_action(text)
            hit_limit = stop is None and hit_length_limit(output.stop_reason, generated, max_tokens, self._eos_ids)

            if action == "answer":
                answer = content
                break
            if not search_enabled:  # the final turn: whatever it is, nothing more is executed
                searches_after_budget += int(action == "search")
                if action is None:
                    trace.record_failure(no_action_failure(text, hit_limit))
                break

            if action == "search":
                queries = split_queries(content, cfg.mode, cfg.max_queries)
                for _ in range(len(split_queries(content, cfg.mode, len(content) + 1)) - len(queries)):
                    trace.record_failure("over_limit")  # mq: queries past max_queries are not searched
                if queries:
                    started = time.perf_counter()
                    observation, failure = await self._search(cfg, queries, seen)
                    tool_latency = time.perf_counter() - started
                    timing["tool_calls"] += tool_latency
                    queries_log.append(queries)
                    trace.add_tool_call("search", {"queries": queries}, observation, tool_latency,
                                        failure=failure, queries=len(queries))
                else:
                    observation = cfg.invalid_action_observation
                    trace.add_tool_call("search", {"queries": []}, observation, 0.0, failure="bad_arguments")
            else:
                observation = cfg.invalid_action_observation
                trace.record_failure(no_action_failure(text, hit_limit))

            obs_ids = self._encode(observation)
            traj.add_observation(obs_ids)
            turn.observation_tokens = len(obs_ids)
            if traj.remaining <= 0:
                out_of_budget = True
                break

        SEARCH_FAILURES.raise_if_tripped(cfg.retrieval_url)  # the server died meanwhile: not a sample to train on
        if out_of_budget and not trace.failures["truncated_by_length"]:
            trace.record_failure("truncated_by_length")
        num_policy_turns = len(trace.turns)
        num_observations = sum(1 for t in trace.turns if t.observation_tokens)
        output = AgentLoopOutput(
            **traj.output_fields(),
            num_turns=1 + num_policy_turns + num_observations,
            metrics=timing,
            extra_fields=output_extra_fields(server_fields, NAME, {
                "mode": cfg.mode,
                "answer": answer,
                "queries": queries_log,
                "searches_after_budget": searches_after_budget,
            }, **{ANCHORS_FIELD: anchors}),
        )
        return trace.finalize(output, tokenizer=self.tokenizer, global_step=server_fields.get("global_steps"))
