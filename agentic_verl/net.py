"""Local servers and OpenAI-compatible endpoints: the one copy of each small check the package's commands share.

- `free_port()`: a free TCP port on loopback, for a server this process is about to start.
- `wait_for_health(url, timeout_s, process=...)`: poll `GET url/health` until it answers 200; a started server that
  exits first or stays silent past the timeout is an error (the retrieval server, the benchmarks' servers).
  `start_server_process` starts one and waits so (the retrieval and BFCL environment servers' process classes).
- `check_model_or_endpoint(model, endpoint, model_name)`: an evaluation runs on exactly one of a local model folder
  (which must exist) or an endpoint (which needs the name it serves the model under).
- `check_served_model(base, model, headers)`: `GET base/v1/models` answers and lists `model`, else `EndpointError`
  (the evals' endpoint engine, V2P's endpoint predictor, FCDR's judge), before any request is sent.
- `auth_headers(api_key_env, url=...)`: the bearer token every request to the endpoint `url` carries, read from the
  environment variable `api_key_env` names (`--api-key-env`: sent wherever the user points it). When none is named,
  OPENAI_API_KEY (as OpenAI's clients do), but only to an https endpoint or one on loopback
  (`default_key_allowed`): a key set for OpenAI never goes in clear text to another host. Only the variable's
  name is kept in settings and results; the key itself is never printed, logged or written.

Standard library only (shell twins: recipes/_common/net.sh). Requests go straight to the server, never through an
`http_proxy` from the environment (as `httpx(trust_env=False)` and aiohttp's default elsewhere in the package).
"""

from __future__ import annotations

import ipaddress
import json
import logging
import os
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

__all__ = ["DEFAULT_API_KEY_ENV", "EndpointError", "auth_headers", "check_model_or_endpoint", "check_served_model",
           "default_key_allowed", "free_port", "wait_for_health"]

logger = logging.getLogger(__name__)

_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # no proxy from the environment


DEFAULT_API_KEY_ENV = "OPENAI_API_KEY"


class EndpointError(RuntimeError):
    """An OpenAI-compatible endpoint is unreachable, does not serve the model, or rejected a request."""


def default_key_allowed(url: str) -> bool:
    """Whether the default OPENAI_API_KEY may go to `url`: over https, or to loopback (127.0.0.0/8, ::1, localhost),
    where plain http stays on this machine. Plain http to any other host would send the key in clear text to a
    server that may not be the one it was issued for; a key meant for it is named with `--api-key-env`.

    >>> [default_key_allowed(u) for u in ("https://api.example.com", "http://127.0.0.1:8001", "http://[::1]:8001",
    ...                                   "http://localhost:8001/v1", "http://10.0.0.7:8001", "http://gpu-node:8001")]
    [True, True, True, True, False, False]
    """
    parts = urllib.parse.urlsplit(str(url).strip())
    scheme = parts.scheme.lower()
    if scheme == "https":
        return True
    if scheme != "http":
        return False
    host = (parts.hostname or "").lower().rstrip(".")
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def auth_headers(api_key_env: str | None = None, *, url: str) -> dict[str, str]:
    """{"Authorization": "Bearer KEY"} for requests to the endpoint `url`.

    A variable named with `--api-key-env` (`api_key_env`) must be set and is sent to `url` whatever it is. Else the
    default OPENAI_API_KEY is sent only where `default_key_allowed(url)`; elsewhere (plain http beyond loopback) no
    key is sent and a warning says how to send one (the key itself is never logged). Unset: no key."""
    if api_key_env:
        key = os.environ.get(api_key_env, "").strip()
        if not key:
            raise EndpointError(f"--api-key-env {api_key_env}: the environment variable {api_key_env} is not set")
        return {"Authorization": f"Bearer {key}"}
    key = os.environ.get(DEFAULT_API_KEY_ENV, "").strip()
    if not key:
        return {}
    if not default_key_allowed(url):
        logger.warning("%s is set but not sent to %s: plain http beyond loopback would carry it in clear text to a "
                       "host it may not be meant for. To send a key there, name its variable with --api-key-env NAME.",
                       DEFAULT_API_KEY_ENV, url)
        return {}
    return {"Authorization": f"Bearer {key}"}


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nothing listens on right now (the OS picks it; another process may take it before it is used)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def wait_for_health(url: str, timeout_s: float, *, process: subprocess.Popen | None = None, name: str = "server",
                    interval_s: float = 0.1) -> None:
    """Return once `GET url/health` answers 200. RuntimeError when `process` (the server, if this process started
    it) exits first; TimeoutError after `timeout_s` seconds without a 200."""
    health = url.rstrip("/") + "/health"
    deadline = time.monotonic() + timeout_s
    while True:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"{name} exited with {process.returncode}")
        try:
            with _DIRECT.open(health, timeout=1.0) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, OSError):  # not listening yet, not answering yet, or an HTTP error status
            pass
        if time.monotonic() >= deadline:
            raise TimeoutError(f"{name} not healthy on {url} after {timeout_s}s")
        time.sleep(interval_s)


def start_server_process(command: list[str], url: str, *, name: str, timeout_s: float, env: dict[str, str],
                         log_path: str | Path | None = None, stdout=None) -> subprocess.Popen:
    """Start a server (`command`) and wait for its /health. Its output goes into `log_path` when given, else its
    stdout to `stdout` (e.g. subprocess.DEVNULL; None: this process's) and its stderr to this process's.
    RuntimeError naming the command when it exits first; on any other failure (a timeout, an interrupt) it is
    stopped and the error raised."""
    log = open(log_path, "wb") if log_path else None  # noqa: SIM115
    try:
        process = subprocess.Popen(command, stdout=log or stdout, stderr=subprocess.STDOUT if log else None, env=env)
    finally:
        if log is not None:
            log.close()
    try:
        wait_for_health(url, timeout_s, process=process, name=name)
    except RuntimeError as exc:  # it exited: say what was run
        raise RuntimeError(f"{exc}: {' '.join(command)}") from None
    except BaseException:
        stop_server_process(process)
        raise
    return process


def stop_server_process(process: subprocess.Popen | None, grace_s: float = 15.0) -> None:
    """SIGTERM a server we started and wait `grace_s` for it to shut down; SIGKILL only if it refused.
    Nothing to do when it never started or has already exited."""
    if process is None or process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        process.kill()  # only after a graceful stop was refused
        process.wait(timeout=5)


def check_model_or_endpoint(model: str | None, endpoint: str | None, model_name: str | None) -> None:
    """Exactly one of a model folder (which must exist) or an endpoint (with the name it serves the model under)."""
    if (model is None) == (endpoint is None):
        raise ValueError("give exactly one of a model folder (--model) or an endpoint (--endpoint)")
    if endpoint is not None and not model_name:
        raise ValueError("--endpoint needs --model-name (the name the server serves the model under)")
    if model is not None and not Path(model).is_dir():
        raise FileNotFoundError(f"model folder not found: {model}")


def check_served_model(base: str, model: str, timeout_s: float = 30.0, headers: dict[str, str] | None = None
                       ) -> list[str]:
    """The model names the OpenAI-compatible server at `base` (without `/v1`) serves; EndpointError when it does not
    answer, answers an HTTP error (401: a missing or wrong key) or something other than a model list, or does not
    serve `model`. `headers`: `auth_headers(...)`."""
    url = f"{base}/v1/models"
    try:
        with _DIRECT.open(urllib.request.Request(url, headers=headers or {}), timeout=timeout_s) as response:
            text = response.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        body = exc.read().decode("utf-8", "replace")
        raise EndpointError(f"{url} answered HTTP {exc.code}: {body[:500]}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)  # URLError wraps the socket's error
        reason = reason if isinstance(reason, BaseException) else exc
        raise EndpointError(f"cannot reach the OpenAI-compatible endpoint {base}: "
                            f"{type(reason).__name__}: {reason}") from None
    try:
        listing = json.loads(text)
    except json.JSONDecodeError:
        listing = None
    if not isinstance(listing, dict) or not isinstance(listing.get("data"), list):
        raise EndpointError(f"{url} answered something other than a model list: {text[:500]!r}")
    served = [m.get("id") for m in listing["data"] if isinstance(m, dict)]
    if model not in served:
        raise EndpointError(f"{base} does not serve {model!r}; it serves {served}")
    return served
