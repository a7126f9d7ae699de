"""Hostile dumps: whatever a model wrote (or a killed writer left), `agentic-verl view` writes a page or names the bad
line; it never crashes, and no text becomes markup."""

from __future__ import annotations

import json
import subprocess
import sys
from html.parser import HTMLParser

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentic_verl.viewer import load_dumps, render_report

XSS = "</script><script>alert(1)</script><img src=x onerror=alert(1)>\"'&"
HOSTILE_TEXT = st.one_of(
    st.sampled_from([XSS, "\ud800", "\udfff lone", "\x00\x01\x1b[31m", "]]>--><!--", "{{body}}", "\u2028\u2029"]),
    st.text(max_size=40),
)
JSON_VALUE = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(min_value=-(10**30), max_value=10**30),
              st.floats(allow_nan=True, allow_infinity=True), HOSTILE_TEXT),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(HOSTILE_TEXT, inner, max_size=4)),
    max_leaves=12,
)
SCALAR = st.one_of(st.none(), st.booleans(), st.integers(-(10**30), 10**30), st.floats(), HOSTILE_TEXT)
_CALL = st.fixed_dictionaries({}, optional={"name": JSON_VALUE, "arguments": JSON_VALUE, "result": JSON_VALUE,
                                            "failure": JSON_VALUE, "latency_s": SCALAR})
# Each field: a value of the right shape with hostile contents, or any JSON value at all.
FIELDS = {
    "kind": st.sampled_from(["trajectory", "reward"]),
    "request_id": HOSTILE_TEXT,
    "agent_name": HOSTILE_TEXT,
    "global_step": SCALAR,
    "messages": st.lists(st.fixed_dictionaries({"role": HOSTILE_TEXT, "content": JSON_VALUE}), max_size=3),
    "response_segments": st.lists(st.fixed_dictionaries(
        {"start": SCALAR, "num_tokens": SCALAR}, optional={"policy": JSON_VALUE, "text": HOSTILE_TEXT}), max_size=3),
    "turns": st.lists(st.fixed_dictionaries({}, optional={
        "index": SCALAR, "policy_tokens": SCALAR, "stop_reason": JSON_VALUE, "tool_calls": st.lists(_CALL, max_size=3)}),
        max_size=3),
    "pre_turn_tool_calls": st.lists(_CALL, max_size=2),
    "reward": SCALAR,
    "reward_components": st.dictionaries(HOSTILE_TEXT, JSON_VALUE, max_size=3),
    "metrics": st.dictionaries(st.one_of(HOSTILE_TEXT, st.sampled_from(["failure/timeout", "num_turns"])), SCALAR,
                               max_size=3),
    "response_mask": st.lists(SCALAR, max_size=3),
}


@st.composite
def _dump_lines(draw) -> list[str]:
    """Records that look like ours with hostile fields, some lines cut short."""
    lines = []
    for i in range(draw(st.integers(1, 4))):
        n = draw(st.integers(0, 3))
        record = {"request_id": f"r{i}", "response_ids": [1] * n, "response_mask": [1] * n}
        for key in draw(st.lists(st.sampled_from(sorted(FIELDS)), max_size=5, unique=True)):
            record[key] = draw(JSON_VALUE if draw(st.integers(0, 4)) == 0 else FIELDS[key])
        line = json.dumps(record)  # ensure_ascii: a lone surrogate is written as the escape \udXXX
        if draw(st.integers(0, 4)) == 0:
            line = line[:draw(st.integers(0, len(line)))]  # a writer killed mid-line
        lines.append(line)
    return lines


class _Markup(HTMLParser):
    def __init__(self):
        super().__init__()
        self.scripts, self.attributes = 0, []

    def handle_starttag(self, tag, attrs):
        self.scripts += tag == "script"
        self.attributes += [name for name, _ in attrs]


@settings(max_examples=200, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(lines=_dump_lines())
def test_any_dump_renders_or_names_its_bad_lines(tmp_path_factory, lines):
    path = tmp_path_factory.mktemp("dump") / "d.jsonl"
    path.write_text("\n".join(lines), encoding="utf-8")
    result = load_dumps([str(path)])
    kept = len(result.trajectories) + result.rewards_joined + len(result.unmatched_rewards)
    assert kept + len(result.skipped) == sum(1 for line in lines if line.strip())  # every line kept or named
    page = render_report(result)
    page.encode("utf-8")  # writable: no lone surrogate left
    markup = _Markup()
    markup.feed(page)
    assert markup.scripts == 2  # the JSON data block and the filter code, nothing a record brought
    assert not [name for name in markup.attributes if name.startswith("on")]


def _load_one(tmp_path, record_or_line) -> tuple:
    path = tmp_path / "d.jsonl"
    text = record_or_line if isinstance(record_or_line, str) else json.dumps(record_or_line)
    path.write_text(text + "\n", encoding="utf-8")
    result = load_dumps([str(path)])
    return result, render_report(result)


def test_bad_response_segments_are_named_not_a_crash(tmp_path):
    for start in ("x", None, 1e999, -1, True):
        result, _ = _load_one(tmp_path, {"request_id": "r", "response_ids": [1], "response_mask": [1],
                                         "response_segments": [{"start": start, "num_tokens": 1}]})
        assert not result.trajectories
        assert result.skipped[-1].endswith("response_segments[0] must be an object with non-negative integer "
                                           "start and num_tokens"), start


def test_a_reward_record_without_a_numeric_reward_is_named(tmp_path):
    result, _ = _load_one(tmp_path, {"kind": "reward", "request_id": "r", "reward": "high"})
    assert result.rewards_joined == 0 and not result.unmatched_rewards
    assert result.skipped[0].endswith("reward must be a number or null, got str")


def test_lone_surrogates_show_as_replacement_characters(tmp_path):
    result, page = _load_one(tmp_path, '{"request_id": "r\\ud800", "response_ids": [], "response_mask": [], '
                                       '"messages": [{"role": "user", "content": "a\\udfffb \\ud83d\\ude00"}]}')
    assert "a\ufffdb \U0001F600" in page and "r\ufffd" in page  # a real pair stays one character


def test_line_cut_short_says_where(tmp_path):
    result, _ = _load_one(tmp_path, '{"request_id": "r", "response_ids": [1, 2')
    # column 42: just past the cut
    assert result.skipped == [f"{tmp_path / 'd.jsonl'}:1: not valid JSON (Expecting ',' delimiter at column 42)"]


def test_view_command_writes_a_page_for_a_hostile_dump(tmp_path):
    dump = tmp_path / "d.jsonl"
    good = {"request_id": XSS, "agent_name": XSS, "response_ids": [1], "response_mask": [1], "reward": 1.0,
            "turns": [{"tool_calls": [{"name": XSS, "arguments": XSS, "result": "A" * 1_000_000}]}],
            "messages": [{"role": "user", "content": "\ud800"}]}
    dump.write_bytes(json.dumps(good).encode() + b"\n" + b'{"request_id": "bad \xff\xfe\n' + b'{"request_id": "cut')
    out = tmp_path / "report.html"
    done = subprocess.run([sys.executable, "-m", "agentic_verl.cli", "view", str(dump), "-o", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert f"skipped {dump}:2: not valid JSON" in done.stderr and f"skipped {dump}:3: not valid JSON" in done.stderr
    page = out.read_text(encoding="utf-8")
    assert "2 malformed line(s) skipped" in page and "A" * 1_000_000 in page
