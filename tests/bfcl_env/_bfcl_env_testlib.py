"""Shared by tests/bfcl_env: BFCL's multi-turn questions, their ground truths as decoded calls, bfcl-eval's own
executor/checker run directly in `.venv-bfcl`, and raw HTTP requests."""

from __future__ import annotations

import http.client
import json
import os
import subprocess
from importlib import resources
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from agentic_verl.bfcl_env.protocol import keyword_call
from agentic_verl.bfcl_env.venv import available, venv_python

CATEGORIES = ("base", "miss_func", "miss_param", "long_context")
RUNNER = Path(__file__).resolve().parent / "_bfcl_official_mt_runner.py"

# .venv-bfcl exists in CI (`make test` builds it first); without it these tests cannot say anything
requires_venv = [pytest.mark.bfcl_official,
                 pytest.mark.skipif(not available(), reason="no .venv-bfcl (run `make bfcl-venv`)")]


def _data():
    return resources.files("bfcl_eval") / "data"


def _jsonl(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def load_entries(category: str, limit: int | None = None) -> list[dict]:
    """BFCL's multi_turn_<category> questions with their `ground_truth` (call strings per turn)."""
    name = f"BFCL_v4_multi_turn_{category}.json"
    answers = {e["id"]: e["ground_truth"] for e in _jsonl(_data() / "possible_answer" / name)}
    return [{**entry, "ground_truth": answers[entry["id"]]} for entry in _jsonl(_data() / name)[:limit]]


def parameter_order() -> dict[str, list[str]]:
    """{function: parameter names in doc order} over the multi-turn function docs."""
    order = {}
    for doc in (_data() / "multi_turn_func_doc").iterdir():
        for function in _jsonl(doc):
            order[function["name"]] = list(function["parameters"]["properties"])
    return order


def as_calls(strings: list[str], order: dict) -> list[dict]:
    return [keyword_call(text, order) for text in strings]


def one_step_per_turn(turns: list[list[str]], order: dict) -> list[list[list[dict]]]:
    """A trajectory that makes each turn's calls in one step (no step for a turn without calls)."""
    return [[as_calls(turn, order)] if turn else [] for turn in turns]


def official(requests: list[dict]) -> list[dict]:
    """bfcl-eval's executor / checker run directly (see _bfcl_official_mt_runner.py), one answer per request."""
    env = {**os.environ, "BFCL_PROJECT_ROOT": str(Path(os.environ.get("TMPDIR", "/tmp")) / "bfcl_env_tests")}
    env.pop("PYTHONPATH", None)
    done = subprocess.run([str(venv_python()), str(RUNNER)], input="".join(json.dumps(r) + "\n" for r in requests),
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    answers = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    assert len(answers) == len(requests)
    return answers


def raw(url: str, method: str, path: str, body: bytes | None = None, headers: dict | None = None,
        connection: http.client.HTTPConnection | None = None) -> tuple[int, dict, dict]:
    """(status, JSON answer, headers) of one request sent exactly as given (no Content-Length added unless a body
    is given and the headers do not set one)."""
    parts = urlsplit(url)
    conn = connection or http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    conn.putrequest(method, path, skip_accept_encoding=True)
    headers = dict(headers or {})
    if body is not None and "Content-Length" not in headers and "Transfer-Encoding" not in headers:
        headers["Content-Length"] = str(len(body))
    for key, value in headers.items():
        conn.putheader(key, value)
    conn.endheaders()
    if body is not None:
        conn.send(body)
    response = conn.getresponse()
    payload = json.loads(response.read() or b"null")
    answer_headers = {k.lower(): v for k, v in response.getheaders()}
    if connection is None:
        conn.close()
    return response.status, payload, answer_headers


def post(url: str, path: str, payload, **kwargs) -> tuple[int, dict]:
    status, answer, _ = raw(url, "POST", path, json.dumps(payload).encode(), **kwargs)
    return status, answer
