"""Shared test setup: offline, CPU-only, Ray and caches kept under /tmp."""

from __future__ import annotations

import os
import sys
import tempfile

import pytest

# Set before anything imports transformers/ray: no hub access, no writes to the home folder.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("RAY_AUTH_MODE", "disabled")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HOME", os.path.join(tempfile.gettempdir(), "agentic_verl_hf_home"))
# A retrieval token exported in the developer's shell would make every loopback test server demand it; the
# tests that exercise the token set it themselves.
os.environ.pop("AGENTIC_VERL_RETRIEVAL_TOKEN", None)
os.environ.pop("AGENTIC_VERL_BFCL_ENV_TOKEN", None)  # the same for the BFCL environment server

# Fixtures every folder shares as one definition (hence one instance per session): the `vllm serve` server.
pytest_plugins = ["vllm_serve_fixture"]


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_cmdline_main(config):
    """End the process as soon as pytest is done (results reported, fixtures torn down, cleanups run).

    Why: CI's run of 1,372 passing tests once died with SIGSEGV *after* pytest's summary, in the interpreter's
    finalization, where the C extensions that tests load in-process (Ray's core worker, the JVM behind pyserini,
    torch's thread pools) are torn down in an order they do not always survive. No test runs there, so nothing is
    checked there; os._exit keeps pytest's own exit code instead of that crash's."""
    exit_code = yield
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(int(exit_code))


def _has_cuda() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except Exception:
        return False


def pytest_collection_modifyitems(config, items):
    if _has_cuda():
        return
    skip_gpu = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if item.get_closest_marker("gpu"):  # not `"gpu" in item.keywords`: that also matches tests/gpu/ itself
            item.add_marker(skip_gpu)


# tests/test_install_resolution.py's pip resolution mostly waits on PyPI (1-3 min): start it when collection ends,
# so that it runs beside the other tests; the test collects its result (and starts its own when run alone).
_RESOLUTION_TEST = "test_gpu_stack_resolves_with_our_package"


def pytest_collection_finish(session):
    item = next((i for i in session.items if i.name == _RESOLUTION_TEST), None)
    if item is None or session.config.option.collectonly:
        return
    import shutil
    from pathlib import Path

    workdir = Path(tempfile.mkdtemp(prefix="agentic_verl_resolution_"))
    session.config.stash[item.module.RESOLUTION_KEY] = item.module.Resolution(workdir)
    session.config.add_cleanup(lambda: shutil.rmtree(workdir, ignore_errors=True))
    session.config.add_cleanup(session.config.stash[item.module.RESOLUTION_KEY].stop)
