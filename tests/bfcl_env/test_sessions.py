"""Sessions on the live BFCL environment server: lifecycle, real simulator calls of a real BFCL question with the
outputs bfcl-eval's own executor gives, errors as BFCL reports them, and bad requests (4xx) that leave other
sessions intact."""

from __future__ import annotations

import http.client
import json
from urllib.parse import urlsplit

import pytest
from _bfcl_env_testlib import as_calls, load_entries, official, post, raw, requires_venv

from agentic_verl.bfcl_env.client import BfclEnvClient, BfclEnvError

pytestmark = requires_venv


def _official_steps(entry: dict, steps: list[list[str]]) -> list[list[str]]:
    return official([{"op": "execute", "initial_config": entry["initial_config"],
                      "involved_classes": entry["involved_classes"], "long_context": False, "steps": steps}])[0]["outputs"]


def _document(state: dict) -> dict:
    return state["GorillaFileSystem"]["root"]["contents"]["document"]["contents"]


async def test_a_session_runs_a_bfcl_question_s_ground_truth_with_bfcl_s_outputs(bfcl_env):
    entry = load_entries("base", 1)[0]  # multi_turn_base_0: a file system and a posting API
    client = BfclEnvClient(bfcl_env.url)
    before = (await client.health())["stats"]["calls_executed"]
    sid = await client.create_session(initial_config=entry["initial_config"],
                                      involved_classes=entry["involved_classes"])
    initial = await client.state(sid)
    assert set(initial) == set(entry["involved_classes"])
    assert sorted(_document(initial)) == ["final_report.pdf", "previous_report.pdf"]
    assert initial["TwitterAPI"]["tweets"] == entry["initial_config"]["TwitterAPI"]["tweets"]

    ours = [await client.execute(sid, as_calls(turn)) for turn in entry["ground_truth"]]
    assert ours == _official_steps(entry, entry["ground_truth"])  # the very strings the model would be shown
    assert ours[0] == ['{"current_working_directory": "document"}', "None",  # cd, mkdir, mv
                       json.dumps({"result": "'final_report.pdf' moved to 'temp/final_report.pdf'"})]
    assert "budget analysis" in ours[1][1]  # grep found the line

    state = await client.state(sid)
    document = _document(state)
    assert sorted(document) == ["temp"]  # both reports moved into temp by the ground truth's calls
    assert sorted(document["temp"]["contents"]) == ["final_report.pdf", "previous_report.pdf"]
    n_calls = sum(map(len, entry["ground_truth"]))
    assert (await client.health())["stats"]["calls_executed"] - before == n_calls

    await client.close(sid)
    for call in (client.execute(sid, [{"name": "pwd", "arguments": {}}]), client.state(sid), client.close(sid)):
        with pytest.raises(BfclEnvError, match="was closed") as caught:
            await call
        assert caught.value.status == 404
    await client.aclose()


async def test_unknown_functions_bad_arguments_and_simulator_exceptions_are_bfcl_s_error_outputs(bfcl_env):
    entry = load_entries("base", 1)[0]
    classes = [*entry["involved_classes"], "MathAPI"]
    strings = ["cd(folder=None)", "mkdir(dir_name=5)", "touch(file_name=[1])", "ls(a=True, b=2)", "nope()",
               "mv(source='final_report.pdf')", "mean(numbers='abc')", "divide(a=1, b=0)", "cd(folder='document')"]
    client = BfclEnvClient(bfcl_env.url)
    sid = await client.create_session(initial_config=entry["initial_config"], involved_classes=classes)
    ours = await client.execute(sid, as_calls(strings))
    theirs = official([{"op": "execute", "initial_config": entry["initial_config"], "involved_classes": classes,
                        "long_context": False, "steps": [strings]}])[0]["outputs"][0]
    assert ours == theirs
    assert ours[0].startswith("Error during execution: ") and ours[4] == "Error during execution: name 'nope' is not defined"
    assert ours[-1] == '{"current_working_directory": "document"}'  # the session goes on after errors
    await client.close(sid)
    await client.aclose()


async def test_only_the_session_s_public_methods_are_callable(bfcl_env, tmp_path):
    """Names that BFCL's eval would resolve to builtins or internals are unknown functions here; nothing runs."""
    entry = load_entries("base", 1)[0]
    target = tmp_path / "written"
    client = BfclEnvClient(bfcl_env.url)
    sid = await client.create_session(initial_config=entry["initial_config"],
                                      involved_classes=entry["involved_classes"])
    names = ["open", "__import__", "exec", "_load_scenario", "__init__", "__class__", "cd.__globals__", "print"]
    outputs = await client.execute(sid, [{"name": name, "arguments": {"file": str(target), "mode": "w"}}
                                         for name in names])
    assert outputs == [f"Error during execution: name {name!r} is not defined" for name in names]
    assert not target.exists()
    await client.close(sid)
    await client.aclose()


def _session(url: str) -> str:
    entry = load_entries("base", 1)[0]
    status, answer = post(url, "/sessions", {"initial_config": entry["initial_config"],
                                            "involved_classes": entry["involved_classes"]})
    assert status == 200
    return answer["session_id"]


BAD_REQUESTS = [
    # (method, path, body, headers, status, words in the error)
    ("POST", "/sessions/0123456789abcdef/execute", b'{"calls": []}', {}, 404, "unknown session"),
    ("GET", "/sessions/0123456789abcdef/state", None, {}, 404, "unknown session"),
    ("DELETE", "/sessions/0123456789abcdef", None, {}, 404, "unknown session"),
    ("POST", "/sessions", b'{"involved_classes": ["FileSystem"]}', {}, 422, "unknown class"),
    ("POST", "/sessions", b'{"involved_classes": []}', {}, 422, "non-empty list"),
    ("POST", "/sessions", b'{"involved_classes": ["MathAPI"], "initial_config": []}', {}, 422, "initial_config"),
    ("POST", "/sessions", b'{"involved_classes": ["GorillaFileSystem"], "initial_config": {"GorillaFileSystem": '
                          b'{"root": {"x": {"contents": 5}}}}}', {}, 422, "does not load"),
    ("POST", "/sessions", b'{"involved_classes": ["MathAPI"], "long_context": "yes"}', {}, 422, "true or false"),
    ("POST", "/sessions", b"{not json", {}, 400, "not valid JSON"),
    ("POST", "/sessions", b'["a list"]', {}, 422, "JSON object"),
    ("POST", "/sessions", b"", {}, 400, "empty request body"),
    ("POST", "/sessions", b"x" * 16, {"Content-Length": str(9 * 1024 * 1024)}, 413, "limit is 8388608"),
    ("POST", "/sessions", None, {}, 411, "Content-Length"),
    ("POST", "/sessions", None, {"Content-Length": "abc"}, 400, "bad Content-Length"),
    ("GET", "/sessions", None, {}, 405, "use POST"),
    ("PUT", "/check", b"{}", {}, 405, "use POST"),
    ("GET", "/no/such/path", None, {}, 404, "no such endpoint"),
    ("OPTIONS", "/sessions", None, {}, 501, "Unsupported method"),  # http.server's own refusal, as JSON
    ("POST", "/check", b'{"entry": {"id": "multi_turn_base_0"}}', {}, 422, "entry.involved_classes"),
]


def test_bad_requests_answer_4xx_json_and_leave_other_sessions_intact(bfcl_env):
    sid = _session(bfcl_env.url)
    status, _ = post(bfcl_env.url, f"/sessions/{sid}/execute", {"calls": [{"name": "cd", "arguments": {"folder": "document"}}]})
    assert status == 200
    before = raw(bfcl_env.url, "GET", f"/sessions/{sid}/state")[1]
    calls_path = f"/sessions/{sid}/execute"
    session_bad = [
        ("POST", calls_path, b'{"calls": {"name": "pwd"}}', {}, 422, "calls: expected a list"),
        ("POST", calls_path, b'{"calls": [{"arguments": {}}]}', {}, 422, "calls[0].name"),
        ("POST", calls_path, b'{"calls": [{"name": "cd", "arguments": "docs"}]}', {}, 422, "calls[0].arguments"),
        ("POST", calls_path, b'{"calls": [{"name": "pwd", "arguments": {}}], "x": NaN}', {}, 400, "not valid JSON"),
        ("POST", calls_path, json.dumps({"calls": [{"name": "pwd"}] * 129}).encode(), {}, 422, "limit is 128"),
    ]
    for method, path, body, headers, status, words in BAD_REQUESTS + session_bad:
        got, answer, answer_headers = raw(bfcl_env.url, method, path, body, headers)
        assert (got, answer["status"]) == (status, status), (method, path, answer)
        assert words in answer["error"], (method, path, answer)
        assert answer_headers["content-type"] == "application/json"
    # the session made before is untouched (no call of the bad requests ran) and still works
    assert raw(bfcl_env.url, "GET", f"/sessions/{sid}/state")[1] == before
    status, answer = post(bfcl_env.url, calls_path, {"calls": [{"name": "pwd", "arguments": {}}]})
    assert (status, answer) == (200, {"outputs": ['{"current_working_directory": "/workspace/document"}']})
    assert raw(bfcl_env.url, "DELETE", f"/sessions/{sid}")[0] == 200


def test_a_refused_body_never_becomes_the_next_request_on_a_kept_alive_connection(bfcl_env):
    parts = urlsplit(bfcl_env.url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    # refused before the body was read (unknown path, unknown session): the body must not be parsed as a request
    smuggled = b"GET /no/such/path HTTP/1.1\r\nHost: x\r\n\r\n"
    assert raw(bfcl_env.url, "POST", "/nowhere", smuggled, connection=conn)[0] == 404
    assert raw(bfcl_env.url, "POST", "/sessions/nope/execute", smuggled, connection=conn)[0] == 404
    status, answer, _ = raw(bfcl_env.url, "GET", "/health", connection=conn)  # reconnects if the server closed
    assert status == 200 and answer["status"] == "ok"
    conn.close()
