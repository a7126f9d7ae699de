"""`agentic-verl eval bfcl` on BFCL's multi-turn categories: each question run by the `bfcl_multi_turn` agent loop
in this process, against the BFCL environment server, and judged by bfcl-eval's multi-turn checker on that server.

    records = asyncio.run(run_multi_turn(settings, engine, tokenizer, questions, env_url))

The protocol is the loop's own (agent_loops/bfcl_multi_turn.py, BFCL's multi-turn inference in prompting mode, or
with `--mode fc` its FC mode: the loop's `format: native`, tools through the chat template, calls read by verl's
`--tool-parser`, the function docs hinted as BFCL's FC handlers compile them):
per user turn the model is asked until it answers without a call, at most `max_steps_per_turn` executed steps a
turn (BFCL's 20, then the whole question is force-quit), each step's calls executed in the question's session and
their outputs returned as `tool` messages, later user turns appended, withheld functions (miss_func) added at
their turn. The loop runs here as verl's worker runs it (`agent_loops.in_process`, as `eval qa` runs `rag_r1`),
over the same engines as the single-turn questions (in-process hf / vllm, or an OpenAI-compatible endpoint):
`max_tokens` new tokens per step (BFCL: 4096), `max_conversation_tokens` for everything after the first prompt.
With `prompt="bfcl"` the prompt is BFCL's prompting system prompt over its hinted docs and the added docs of a
miss_func turn are printed as BFCL's handler prints them; with "funreason", the loop's training prompt.

The verdict is the server's `/check` (bfcl-eval's `multi_turn_checker`, after the two steps of its eval runner:
fewer turns than the ground truth is `multi_turn:force_terminated`, steps without calls are dropped) on the calls
the loop executed. A question whose generation fails (a conversation longer than the model's context) is
`multi_turn:inference_error`, as BFCL's runner scores an entry whose inference raised. Whatever the model writes is
executed or refused as BFCL would (the loop's docstring), never an exception. An environment that fails during a
question (the loop's `terminated` "env_error", or a `/check` that raises `BfclEnvError`) gives that question the
verdict `eval:env_error` with the reason: it is not the model's doing, and `agentic-verl eval bfcl` reports the
count and exits 1 after writing the results.

What BFCL's result file holds for a prompting model, `result[turn][step]`, is every step's text after its last
`</think>` (the reasoning, when there is any, in `reasoning_content`): what our decoder read and what bfcl-eval's
scorer decodes again (`bfcl_layout.py` writes the files; a test runs bfcl-eval's own scorer on them).

Differences from BFCL's inference: the conversation continues token by token as the loop does in training (policy
tokens as generated; a Qwen3 template that would drop earlier turns' reasoning on re-rendering does not get to), and
a step cut at `max_tokens` (or by `max_conversation_tokens`) ends the question without being read (BFCL decodes the
cut text like any other, and goes on). That step is left out of the result file, which holds what the inference
acted on, and kept in the record (`cut_step`); `finish_reason` "length" marks such questions (the "truncated"
column). A question cut before its last turn is `multi_turn:force_terminated`, as BFCL's runner judges any entry
with turns missing.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from agentic_verl.agent_loops.in_process import EngineServerManager
from agentic_verl.rewards.bfcl.decode import strip_reasoning
from agentic_verl.rewards.bfcl.multi_turn import BUDGET_TERMINATIONS
from agentic_verl.rewards.bfcl.multi_turn_entry import parse_entry

INFERENCE_ERROR = "multi_turn:inference_error"  # bfcl-eval's verdict on an entry whose inference raised
INFERENCE_ERROR_PREFIX = "Error during inference: "  # and what its generation writes as that entry's result
ENV_FAILED = "eval:env_error"  # our verdict on a question the BFCL environment failed (not the model's doing)
ENV_TIMEOUT_S = 120.0  # one request to the environment server (a long-context /check runs the checker twice)
# The loop refuses prompts over rollout.prompt_length (verl would cut them); here only the model's context limits a
# prompt, and the engine says so (a ValueError: the question's inference fails).
_NO_PROMPT_LIMIT = 1 << 30


class GenerationFailed(Exception):
    """The engine refused a step (e.g. the conversation no longer fits the model's context): this question fails."""


class _QuestionServer(EngineServerManager):
    """verl's `server_manager.generate` over the eval's engine, for one question: its id leads the request id (as the
    single-turn questions' request ids are theirs), and an engine's ValueError becomes `GenerationFailed`, which the
    loop lets through (a ValueError of the loop itself, a data or template bug, stays one)."""

    def __init__(self, engine, question_id: str):
        super().__init__(engine)
        self.question_id = question_id

    async def generate(self, request_id, **kwargs):
        try:
            return await super().generate(f"{self.question_id}/{request_id}", **kwargs)
        except ValueError as exc:
            raise GenerationFailed(str(exc)) from None


def multi_turn_row(question: dict, prompt: str, mode: str = "prompting") -> dict:
    """The `bfcl_multi_turn` row of a `bfcl_data.load_multi_turn_questions` record (its prompt built by `prompt`).
    FC mode: the loop builds its own request from the entry, whose function docs get BFCL's hints (as BFCL's FC
    handlers compile the tools)."""
    from agentic_verl.eval.bfcl_data import hinted_functions, multi_turn_messages

    entry = parse_entry(question["entry"], need_ground_truth=True)
    extra_info = dict(question["entry"])
    if mode == "fc":
        extra_info["function"] = hinted_functions(entry.function, question["category"])
    return {"prompt": multi_turn_messages(entry, prompt), "extra_info": extra_info, "agent_name": "bfcl_multi_turn"}


def loop_settings(s, env_url: str) -> dict:
    """`rollout.custom.bfcl_multi_turn` for an evaluation with settings `s` (BFCLEvalSettings)."""
    return {"env_url": env_url, "env_timeout_s": ENV_TIMEOUT_S, "max_steps_per_turn": int(s.max_steps_per_turn),
            "max_tokens_per_step": int(s.max_tokens),
            "added_functions_format": "python" if s.prompt == "bfcl" else "json",
            "format": "native" if s.mode == "fc" else "prompting", "tool_parser": s.tool_parser,
            "max_consecutive_env_failures": 0}  # every question gets a verdict; failures are counted instead


def cut_step(record: dict) -> str | None:
    """The text of the step the loop stopped at without reading it (cut at the token limit), else None: in the last
    turn, a generated step beyond the executed ones when the loop ended for lack of tokens (a turn's only other
    unexecuted step is the answer that ends it, and no step follows that one)."""
    responses, executed = record["responses"], record["model_calls"]
    if record["terminated"] in BUDGET_TERMINATIONS and responses and len(responses[-1]) > len(executed[-1]):
        return responses[-1][-1]
    return None


def result_turns(responses: list[list[str]]) -> tuple[list[list[str]], list[list[str]]]:
    """(result, reasoning_content) as BFCL's reasoning-model handlers store a step: the text after the last
    `</think>`, and the reasoning before it ("" without one).

    >>> result_turns([["<think>look first</think>\\n\\n[ls()]", "Done."]])
    ([['\\n\\n[ls()]', 'Done.']], [['look first', '']])
    """
    result = [[strip_reasoning(text) for text in turn] for turn in responses]
    reasoning = [[text.rsplit("</think>", 1)[0].split("<think>", 1)[-1].strip() if "</think>" in text else ""
                  for text in turn] for turn in responses]
    return result, reasoning


async def run_multi_turn(s, engine, tokenizer, questions: list[dict], env_url: str) -> list[dict]:
    """One record per question (`load_multi_turn_questions` records), in their order; see the module docstring."""
    from agentic_verl.agent_loops.bfcl_multi_turn import ENV_ERROR, BfclMultiTurnConfig, env_client
    from agentic_verl.agent_loops.in_process import loop_trainer_config, make_agent_loop, model_type, sample_kwargs
    from agentic_verl.bfcl_env.client import BfclEnvError

    custom = loop_settings(s, env_url)
    config = loop_trainer_config(s.max_conversation_tokens, prompt_length=_NO_PROMPT_LIMIT,
                                 custom={"bfcl_multi_turn": custom})
    hf_type = model_type(s.tokenizer_path) if Path(s.tokenizer_path, "config.json").is_file() else None
    sampling = {"temperature": s.temperature, "top_p": s.top_p, "top_k": -1, "repetition_penalty": 1.0,
                "logprobs": False}
    if s.temperature > 0:
        sampling["seed"] = s.seed
    rows = [multi_turn_row(q, s.prompt, s.mode) for q in questions]
    client = env_client(BfclMultiTurnConfig(**custom))  # the loops' own client (one per event loop)
    semaphore = asyncio.Semaphore(s.concurrency)

    async def one(question: dict, row: dict) -> dict:
        loop = make_agent_loop("bfcl_multi_turn", tokenizer=tokenizer, trainer_config=config, hf_model_type=hf_type,
                               server_manager=_QuestionServer(engine, question["id"]))
        async with semaphore:
            try:
                out = await loop.run(dict(sampling), **sample_kwargs(row))
            except GenerationFailed as exc:
                return failed_record(question, str(exc))
            record = out.extra_fields["bfcl_multi_turn"]
            if record["terminated"] == ENV_ERROR:
                return scored_record(question, out, record, env_failed_verdict(record["env_failure"]))
            try:
                verdict = await client.check(entry=question["entry"], model_calls=record["model_calls"])
            except BfclEnvError as exc:
                verdict = env_failed_verdict(f"check: {exc}")
        return scored_record(question, out, record, verdict)

    try:
        return list(await asyncio.gather(*(one(q, row) for q, row in zip(questions, rows, strict=True))))
    finally:
        await client.aclose()


def scored_record(question: dict, out, record: dict, verdict: dict) -> dict:
    """The eval's record of one question: the checker's verdict, the loop's counts, and what BFCL's files hold."""
    turns = record["turns"]
    cut = cut_step(record)
    responses = [*record["responses"][:-1], record["responses"][-1][:-1]] if cut is not None else record["responses"]
    result, reasoning = result_turns(responses)
    if record.get("format") == "native":
        result = fc_result_turns(result, record["model_calls"])
    valid = bool(verdict["valid"])
    return {
        "id": question["id"], "category": question["category"], "valid": valid,
        "error_type": None if valid else verdict.get("error_type"),
        "errors": [] if valid else [str(verdict.get("error_message") or verdict.get("error_type"))],
        "num_turns": record["num_turns"], "per_turn": list(verdict.get("per_turn") or []),
        "turns_passed": sum(bool(ok) for ok in verdict.get("per_turn") or []),
        **{key: sum(int(turn[key]) for turn in turns) for key in ("steps", "calls", "decode_failures", "env_errors")},
        "terminated": record["terminated"],
        "finish_reason": "length" if record["terminated"] in BUDGET_TERMINATIONS else "stop",
        "prompt_tokens": len(out.prompt_ids), "output_tokens": sum(out.response_mask),
        "result": result, "reasoning_content": reasoning, "model_calls": record["model_calls"], "cut_step": cut,
        "details": None if valid else verdict.get("details"),
    }


def fc_result_turns(result: list[list[str]], model_calls: list[list[list[dict]]]) -> list[list]:
    """`result[turn][step]` as bfcl-eval's FC handlers store it: an executed step as its calls `[{name: arguments
    JSON}]`, a step that ended the turn as its text. A turn's executed steps come first (any other ends it).

    >>> fc_result_turns([["<tool_call>..", "Done."]], [[[{"name": "ls", "arguments": {"a": 1}}]]])
    [[[{'ls': '{"a": 1}'}], 'Done.']]
    """
    return [[[{call["name"]: json.dumps(call["arguments"])} for call in step] for step in executed]
            + texts[len(executed):] for texts, executed in zip(result, model_calls, strict=False)]


def env_failed_verdict(message: str) -> dict:
    """The verdict of a question whose environment failed (`ENV_FAILED`)."""
    return {"valid": False, "error_type": ENV_FAILED, "error_message": f"the BFCL environment failed: {message}",
            "per_turn": []}


def failed_record(question: dict, message: str) -> dict:
    """A question whose inference failed: BFCL's result string and verdict for it."""
    return {
        "id": question["id"], "category": question["category"], "valid": False, "error_type": INFERENCE_ERROR,
        "errors": [message], "num_turns": len(question["entry"]["question"]), "per_turn": [], "turns_passed": 0,
        "steps": 0, "calls": 0, "decode_failures": 0, "env_errors": 0, "terminated": None,
        "finish_reason": f"generation_failed: {message}", "prompt_tokens": 0, "output_tokens": 0,
        "result": INFERENCE_ERROR_PREFIX + message, "reasoning_content": None, "model_calls": [], "cut_step": None,
        "details": None,
    }
