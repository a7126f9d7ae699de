"""The client applies the server's limits as BFCL would behave, never as an error: a step with more calls than one
request carries runs in several requests, in order (the server's `--max-calls`, `--max-body-bytes`, read from its
/health); a single call larger than any request is not sent and gets an error output that says so; a non-finite
number is BFCL's NameError output. Against a LIVE server started with small limits."""

from __future__ import annotations

import asyncio
import json

import pytest

from agentic_verl.bfcl_env.client import BfclEnvClient
from agentic_verl.bfcl_env.protocol import call_batches, wire_call

pytestmark = pytest.mark.bfcl_official
FILES = {"GorillaFileSystem": {"root": {"alex": {"type": "directory", "contents": {}}}}}


@pytest.fixture(scope="module")
def small_server(tmp_path_factory):
    from agentic_verl.bfcl_env.process import BfclEnvProcess

    log = tmp_path_factory.mktemp("bfcl_env_small") / "server.log"
    with BfclEnvProcess(["--max-calls", "3", "--max-body-bytes", "2048"], log_path=log) as server:
        yield server


def run_session(url: str, steps: list[list[dict]]) -> tuple[list[list[str]], dict]:
    async def go():
        client = BfclEnvClient(url)
        try:
            sid = await client.create_session(initial_config=FILES, involved_classes=["GorillaFileSystem"])
            outputs = [await client.execute(sid, calls) for calls in steps]
            state = await client.state(sid)
            await client.close(sid)
            return outputs, state
        finally:
            await client.aclose()

    return asyncio.run(go())


def test_more_calls_than_a_request_takes_all_run_in_order(small_server):
    calls = [{"name": "mkdir", "arguments": {"dir_name": f"d{i}"}} for i in range(10)]
    calls += [{"name": "ls", "arguments": {}}, {"name": "cd", "arguments": {"folder": "d9"}},
              {"name": "pwd", "arguments": {}}]
    [outputs], state = run_session(small_server.url, [calls])
    assert len(outputs) == 13
    assert json.loads(outputs[10]) == {"current_directory_content": [f"d{i}" for i in range(10)]}
    assert json.loads(outputs[12]) == {"current_working_directory": "/alex/d9"}  # the order held across requests
    assert sorted(state["GorillaFileSystem"]["root"]["contents"]) == [f"d{i}" for i in range(10)]


def test_a_call_larger_than_any_request_is_reported_not_sent(small_server):
    big = {"name": "mkdir", "arguments": {"dir_name": "x" * 4000}}
    [outputs], state = run_session(small_server.url, [[big, {"name": "mkdir", "arguments": {"dir_name": "after"}}]])
    assert outputs[0].startswith("Error during execution: the call is ") and "--max-body-bytes" in outputs[0]
    assert outputs[1] == "None"  # the next call ran
    assert list(state["GorillaFileSystem"]["root"]["contents"]) == ["after"]


def test_non_finite_numbers_are_bfcls_name_errors(small_server):
    steps = [[{"name": "cd", "arguments": {"folder": float("inf")}},
              {"name": "mkdir", "arguments": {"dir_name": [1, {"k": float("nan")}]}},
              {"name": "mkdir", "arguments": {"dir_name": "kept"}}]]
    [outputs], state = run_session(small_server.url, steps)
    assert outputs[:2] == ["Error during execution: name 'inf' is not defined",
                           "Error during execution: name 'nan' is not defined"]
    assert list(state["GorillaFileSystem"]["root"]["contents"]) == ["kept"]


@pytest.mark.parametrize(("sizes", "max_calls", "max_body", "expected"), [
    ([10, 10, 10], 2, 10_000, [[0, 1], [2]]),  # by count
    ([900, 900, 900], 10, 2000, [[0, 1], [2]]),  # by size
    ([5000, 10], 10, 2000, [[0], [1]]),  # a call too large alone is a batch of its own (the client refuses it)
    ([], 3, 2000, []),
])
def test_call_batches(sizes, max_calls, max_body, expected):
    calls = [wire_call({"name": "f", "arguments": {"a": "x" * n}}) for n in sizes]
    batches = call_batches(calls, max_calls, max_body)
    assert batches == expected
    for batch in batches:  # every batch but a lone oversized call fits the limits as sent
        body = json.dumps({"calls": [calls[i] for i in batch]})
        assert len(batch) <= max_calls and (len(body) <= max_body or len(batch) == 1)
