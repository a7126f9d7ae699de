"""Shared by tests/bfcl_env: the multi-turn questions and bfcl-eval's own executor/checker run directly (from
scripts/agreement/_bfcl_mt_cases.py, which scripts/agreement/bfcl_env_agreement.py also uses), and raw HTTP requests."""

from __future__ import annotations

import http.client
import json
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from agentic_verl.bfcl_env.venv import available

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts" / "agreement"))

from _bfcl_mt_cases import (  # noqa: E402, F401 (re-exported for the tests)
    CATEGORIES,
    all_cases,
    as_calls,
    decoded,
    load_entries,
    official,
    official_checks,
    one_step_per_turn,
)

# .venv-bfcl exists in CI (`make test` builds it first); without it these tests cannot say anything
requires_venv = [pytest.mark.bfcl_official,
                 pytest.mark.skipif(not available(), reason="no .venv-bfcl (run `make bfcl-venv`)")]


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
