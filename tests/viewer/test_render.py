"""Loading dumps (join, malformed lines) and rendering them (escaping, token runs, filter data)."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser

import pytest

from agentic_verl.viewer import load_dumps, render_report
from agentic_verl.viewer.render import script_json


class _Scripts(HTMLParser):
    """What a browser's tokenizer sees: script elements and their raw text, and every attribute name."""

    def __init__(self):
        super().__init__()
        self.scripts: list[tuple[dict, str]] = []
        self.attributes: list[str] = []
        self._in_script: dict | None = None

    def handle_starttag(self, tag, attrs):
        self.attributes += [name for name, _ in attrs]
        if tag == "script":
            self._in_script = dict(attrs)
            self.scripts.append((self._in_script, ""))

    def handle_data(self, data):
        if self._in_script is not None:
            attrs, text = self.scripts[-1]
            self.scripts[-1] = (attrs, text + data)

    def handle_endtag(self, tag):
        if tag == "script":
            self._in_script = None


def _parse(page: str) -> _Scripts:
    parser = _Scripts()
    parser.feed(page)
    return parser


def _dump_file(dump_dir):
    (path,) = dump_dir.glob("trajectories_*.jsonl")
    return path


def test_load_keeps_every_trajectory_in_order(dump_dir):
    result = load_dumps([str(dump_dir)])
    assert [t["request_id"] for t in result.trajectories] == ["req-0", "req-1", "req-2", "req-3"]
    assert result.skipped == [] and result.files == [str(_dump_file(dump_dir))]


def test_reward_records_from_another_file_are_joined_by_request_id(dump_dir, tmp_path, write_lines):
    rewards = write_lines(tmp_path / "trajectories_999.jsonl", [
        {"kind": "reward", "request_id": "req-3", "reward": 0.25, "reward_components": {"em": 0.25}},
        {"kind": "reward", "request_id": "req-404", "reward": 1.0, "reward_components": {}},  # no trajectory
    ])
    result = load_dumps([str(_dump_file(dump_dir)), str(rewards)])
    by_id = {t["request_id"]: t for t in result.trajectories}
    assert by_id["req-3"]["reward"] == 0.25 and by_id["req-3"]["reward_components"] == {"em": 0.25}
    assert result.rewards_joined == 1
    assert [r["request_id"] for r in result.unmatched_rewards] == ["req-404"]  # reported, not dropped
    page = render_report(result)
    assert "1 reward record(s) without a trajectory" in page and "req-404" in page


def test_malformed_lines_are_skipped_and_named_by_file_and_line(dump_dir, write_lines):
    path = write_lines(_dump_file(dump_dir), [
        "{not json",  # line 5
        "[1, 2]",  # line 6: not an object
        {"kind": "trajectory", "response_ids": [1]},  # line 7: no request_id
        {"request_id": "bad-mask", "response_ids": [1, 2], "response_mask": [1]},  # line 8
        {"kind": "metrics", "request_id": "x"},  # line 9: unknown kind
        {"request_id": "late", "agent_name": "gui", "response_ids": [], "response_mask": [], "reward": 0.5},  # ok
    ])
    result = load_dumps([str(path)])
    assert [t["request_id"] for t in result.trajectories] == ["req-0", "req-1", "req-2", "req-3", "late"]
    assert [line.split(": ", 1)[0] for line in result.skipped] == [f"{path}:{n}" for n in (5, 6, 7, 8, 9)]
    assert "not valid JSON" in result.skipped[0]
    assert "expected a JSON object" in result.skipped[1]
    assert "missing request_id" in result.skipped[2]
    assert "response_mask has 1" in result.skipped[3]
    assert "unknown record kind 'metrics'" in result.skipped[4]
    page = render_report(result)
    assert "5 malformed line(s) skipped" in page and f"{path}:8" in page


def test_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="trajectory dump not found: .*nope.jsonl"):
        load_dumps([str(tmp_path / "nope.jsonl")])


def test_model_text_cannot_inject_markup_or_script(dump_dir, write_lines, xss):
    # The payload also sits in fields that go into the embedded JSON filter data (request_id, agent_name).
    write_lines(_dump_file(dump_dir), [{"request_id": xss, "agent_name": xss, "response_ids": [1],
                                        "response_mask": [0], "reward": 1.0}])
    page = render_report(load_dumps([str(dump_dir)]))
    parsed = _parse(page)
    # Exactly our two script elements: the JSON data block and the filter code.
    assert [attrs.get("type") for attrs, _ in parsed.scripts] == ["application/json", None]
    assert "onerror" not in parsed.attributes and "data-pwned" not in parsed.attributes
    assert "&lt;/script&gt;&lt;script&gt;document.body.setAttribute(&#x27;data-pwned&#x27;" in page
    data = json.loads(parsed.scripts[0][1])  # the block was not cut short by the </script> in the data
    assert data[-1]["id"] == "t4" and data[-1]["agent"] == xss


def test_script_json_escapes_every_html_special_character():
    text = script_json({"a": "</script><!--&\u2028"})
    assert not set("<>&") & set(text) and "\u2028" not in text
    assert json.loads(text) == {"a": "</script><!--&\u2028"}


def test_page_is_self_contained(dump_dir):
    page = render_report(load_dumps([str(dump_dir)]))
    attributes = _parse(page).attributes
    assert "src" not in attributes and "href" not in attributes  # nothing loaded or linked
    assert "url(" not in page and "@import" not in page
    assert "default-src 'none'" in page  # the browser is told so too


def test_policy_and_observation_tokens_are_separate_colored_runs(dump_dir, qwen_tokenizer):
    result = load_dumps([str(dump_dir)])
    page = render_report(result)
    first = page.split('id="t0"', 1)[1].split("</section>", 1)[0]
    runs = re.findall(r'<span class="tok (policy|obs)" title="[^"]*">(.*?)</span>', first, flags=re.S)
    assert [kind for kind, _ in runs] == ["policy", "obs", "policy"]
    assert runs[0][1] == '&lt;tool_call&gt;{&quot;name&quot;: &quot;search&quot;, &quot;arguments&quot;: ' \
                         '{&quot;query&quot;: &quot;q0&quot;}}&lt;/tool_call&gt;'
    assert runs[2][1] == "&lt;answer&gt;Paris&lt;/answer&gt;"
    mask = result.trajectories[0]["response_mask"]
    assert "(mask 0)" in page and f"response tokens ({len(mask)})" in first


def test_runs_fall_back_to_token_ids_without_decoded_text(tmp_path, write_lines):
    path = write_lines(tmp_path / "d.jsonl", [{"request_id": "r", "response_ids": [7, 8, 9, 10],
                                               "response_mask": [1, 1, 0, 1]}])
    page = render_report(load_dumps([str(path)]))
    runs = re.findall(r'<span class="tok (policy|obs)"[^>]*>(.*?)</span>', page.split('id="t0"', 1)[1])
    assert runs == [("policy", "[7 8]"), ("obs", "[9]"), ("policy", "[10]")]


def test_turn_latency_tool_calls_and_reward_components_are_shown(dump_dir):
    page = render_report(load_dumps([str(dump_dir)]))
    second = page.split('id="t1"', 1)[1].split("</section>", 1)[0]
    assert '<td class="num">1.8</td>' in second  # turn 0 generation latency 0.8 + 1
    assert '<td class="num">0.25</td>' in second  # turn 1
    assert "<b>search</b> · 0.125 s" in second and '<span class="failure-cell">timeout</span>' in second
    assert "<th>reward components</th><th>em</th><th>format</th>" in second


def test_embedded_filter_data_carries_reward_failures_and_agent(dump_dir):
    page = render_report(load_dumps([str(dump_dir)]))
    data = json.loads(_parse(page).scripts[0][1])
    assert data == [
        {"id": "t0", "reward": 1.0, "failures": [], "agent": "rag_r1"},
        {"id": "t1", "reward": 0.0, "failures": ["timeout"], "agent": "function_call"},
        {"id": "t2", "reward": 0.5, "failures": ["no_call"], "agent": "rag_r1"},
        {"id": "t3", "reward": None, "failures": [], "agent": "function_call"},
    ]
    assert '<option value="truncated_by_length">' in page  # every category can be picked
