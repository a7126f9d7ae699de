"""What our CPU platform hands to verl's vLLM server actors (`rollout_env_vars`)."""

import pytest

from agentic_verl.cpu.platform import PlatformCPU


@pytest.mark.parametrize("bind", [None, "auto", "1"])
def test_vllm_server_processes_run_one_thread_when_vllm_pins_its_worker(monkeypatch, bind):
    if bind is None:
        monkeypatch.delenv("VLLM_CPU_OMP_THREADS_BIND", raising=False)
    else:
        monkeypatch.setenv("VLLM_CPU_OMP_THREADS_BIND", bind)
    monkeypatch.setenv("OMP_NUM_THREADS", "2")  # the trainer's setting must not reach the engine core
    env = PlatformCPU().rollout_env_vars()
    assert env["OMP_NUM_THREADS"] == "1"


def test_nobind_leaves_thread_count_to_the_user(monkeypatch):
    # without vLLM's pinning the worker's thread count comes from OMP_NUM_THREADS: forcing 1 would starve it
    monkeypatch.setenv("VLLM_CPU_OMP_THREADS_BIND", "nobind")
    assert "OMP_NUM_THREADS" not in PlatformCPU().rollout_env_vars()


def test_kv_cache_size_follows_the_environment(monkeypatch):
    monkeypatch.setenv("VLLM_CPU_KVCACHE_SPACE", "3")
    assert PlatformCPU().rollout_env_vars()["VLLM_CPU_KVCACHE_SPACE"] == "3"
