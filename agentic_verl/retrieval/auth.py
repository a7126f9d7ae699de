"""The retrieval server's shared token: read from `AGENTIC_VERL_RETRIEVAL_TOKEN`, never from a file.

- `serve retrieval` binds 127.0.0.1 by default; any other address needs the token (`check_bind`), so a server
  reachable from other machines is never open to anyone who can reach it;
- with a token, every request must carry `Authorization: Bearer <token>` (compared in constant time); without it,
  or with a wrong one, the answer is a 401 and nothing else. `GET /health` without an Authorization header
  answers only `{"status": "ok"}` (or 503 `{"status": "unhealthy"}`) for load-balancer checks;
- our callers (`RetrievalClient`, `health_problem`, and through them the search tool, the rag_r1 loop, eval and
  preflight) send the token whenever the variable is set.

Standard library only: the BFCL environment server (agentic_verl.bfcl_env) runs in `.venv-bfcl` and uses the same
checks with its own variable (`env=`, `server=`).

>>> is_loopback("127.0.0.1"), is_loopback("localhost"), is_loopback("0.0.0.0"), is_loopback("10.0.0.5")
(True, True, False, False)
>>> bearer_matches(b"Bearer s3cret-s3cret-s3cret", "s3cret-s3cret-s3cret"), bearer_matches(b"Bearer x", "s3cret")
(True, False)
"""

from __future__ import annotations

import hmac
import ipaddress
import os

TOKEN_ENV = "AGENTIC_VERL_RETRIEVAL_TOKEN"
MIN_TOKEN_CHARS = 16
MAKE_TOKEN = "python -c 'import secrets; print(secrets.token_urlsafe(32))'"


def token_from_env(env: str = TOKEN_ENV) -> str | None:
    """The token from the environment variable `env` (surrounding whitespace dropped), or None when unset or empty."""
    return os.environ.get(env, "").strip() or None


def auth_headers(token: str | None = None, env: str = TOKEN_ENV) -> dict[str, str]:
    """`{"Authorization": "Bearer <token>"}` for `token` (default: the variable `env`'s), or {} without one."""
    token = token if token is not None else token_from_env(env)
    return {"Authorization": f"Bearer {token}"} if token else {}


def is_loopback(host: str) -> bool:
    """Whether binding `host` keeps the server on this machine (a hostname other than localhost counts as not)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_token(token: str, env: str = TOKEN_ENV) -> None:
    """Raise ValueError unless `token` (from the variable `env`) can be an HTTP bearer token worth its name."""
    if len(token) < MIN_TOKEN_CHARS or not token.isascii() or not token.isprintable() or " " in token:
        raise ValueError(
            f"{env} must be at least {MIN_TOKEN_CHARS} printable ASCII characters without "
            f"spaces (it has {len(token)}); make one with: {MAKE_TOKEN}"
        )


def check_bind(host: str, token: str | None, env: str = TOKEN_ENV, server: str = "retrieval server") -> None:
    """Raise ValueError when `host` is reachable from other machines and there is no token to require."""
    if token is not None:
        check_token(token, env)
    elif not is_loopback(host):
        raise ValueError(
            f"refusing to bind {host} without a token: a {server} reachable from other machines "
            f"requires the shared token in {env} (set it on the server and on every caller; "
            f"make one with: {MAKE_TOKEN}), or bind 127.0.0.1"
        )


def bearer_matches(header: bytes | str | None, token: str) -> bool:
    """Whether an Authorization header value is `Bearer <token>`; the token comparison takes constant time."""
    if not header:
        return False
    raw = header.encode("latin-1", "replace") if isinstance(header, str) else header
    scheme, _, credentials = raw.strip().partition(b" ")
    return scheme.lower() == b"bearer" and hmac.compare_digest(credentials.strip(), token.encode("utf-8"))
