"""`eval screenspot` when the model answers hostile text on every sample: clicks at 1e999 / nan / 10**400, NUL and
control characters, 20,000-character answers, unbalanced brackets, tag imitation, answers cut mid-click. Through
the command, a real HTTP predictor and a scripted OpenAI-compatible server on loopback: every sample gets a verdict
(a hit, or a failure of a known kind), the command exits 0, and result.json is strict JSON (no Infinity/NaN)."""

from __future__ import annotations

import itertools
import json
import math
import threading

from gui_helpers import ScriptedChatServer, write_seeclick
from hostile_outputs import clicks, cut_anywhere, hostile_text
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentic_verl.cli import main as cli_main
from agentic_verl.eval.screenspot import FAILURES

answers = st.lists(st.one_of(hostile_text(extra=[clicks()]), clicks(), cut_anywhere(clicks())), min_size=12,
                   max_size=12)


def _strict(constant):
    raise ValueError(f"result.json holds {constant}, which is not JSON")


@settings(max_examples=5, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large])
@given(texts=answers)
def test_hostile_answers_get_a_verdict_and_the_command_exits_0(screens, tmp_path_factory, texts):
    tmp = tmp_path_factory.mktemp("hostile")
    data = write_seeclick(tmp / "ScreenSpot-v2", screens)
    replies, lock = itertools.cycle(texts), threading.Lock()

    def answer(*_):
        with lock:
            return next(replies)

    with ScriptedChatServer(answer, min_pixels=28 * 28, max_pixels=64 * 28 * 28) as server:
        code = cli_main(["eval", "screenspot", "--endpoint", server.url, "--model-name", server.model_name,
                         "--data", str(data), "--max-pixels", str(64 * 28 * 28), "--min-pixels", str(28 * 28),
                         "--out", str(tmp / "out"), "--concurrency", "4"])
    assert code == 0
    result = json.loads((tmp / "out" / "result.json").read_text(), parse_constant=_strict)
    samples = result["samples"]
    assert len(samples) == result["summary"]["n"] == 12 and len(server.requests) == 12
    for record in samples:
        assert record["hit"] == (record["failure"] is None) and record["failure"] in (None, *FAILURES)
        if record["point"] is not None:
            assert all(math.isfinite(v) for v in record["point"])
    assert sum(result["summary"]["failures"].values()) == sum(not r["hit"] for r in samples)
