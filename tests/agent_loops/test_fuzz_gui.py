"""gui_grounding under hostile model output: thousands of generated outputs (hostile_outputs.py) through the real
loop, verl's Qwen-VL token builder, the real Qwen tokenizer and the stand-in VL processor of gui_stand_ins.py.

Whatever the model writes, `run` returns; the token invariants hold; the response fits the budget; the output is
either a click with finite coordinates (model and original pixels) or exactly one failure of the model's kinds
(no_call, parse_error, truncated_by_length); the GUI rewards on the decoded response are finite."""

from __future__ import annotations

import math

import pytest
from agent_loop_helpers import sample, verl_config
from fuzz_harness import FuzzRunner, check_hostile_output, failures
from gui_stand_ins import BOX, DatasetStandIn, QwenVLProcessorStandIn, screenshot_messages
from hostile_outputs import CLICK_MARKERS, clicks, cut_anywhere, hostile_text, numbers, tag_imitations, token_ids
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentic_verl.rewards.gui import gui_click_in_box, gui_gaussian_point

SAMPLING = {"temperature": 1.0, "top_p": 1.0, "top_k": -1, "repetition_penalty": 1.0, "logprobs": True}
RESPONSE_LENGTH, MAX_TOKENS = 256, 128
EXAMPLES = 2300
MODEL_FAILURES = ("no_call", "parse_error", "truncated_by_length", "bad_arguments")


def gui_outputs():
    """Click answers with hostile coordinates, cut mid-click, several clicks, inside <answer>, or any hostile text."""
    several = st.lists(clicks(), min_size=2, max_size=50).map(" ".join)
    boxed = st.builds(lambda a, b, c, d: f'{{"bbox_2d": [{a}, {b}, {c}, {d}]}}', numbers(), numbers(), numbers(),
                      numbers())
    return st.one_of(clicks(), cut_anywhere(clicks()), several, boxed, clicks().map(lambda c: f"<answer>{c}</answer>"),
                     tag_imitations(CLICK_MARKERS, inner=numbers()),
                     hostile_text(extra=[clicks(), boxed], max_pieces=4))


@pytest.fixture(scope="module")
def fuzz_setup(qwen_dir, qwen_tokenizer):
    config = verl_config(qwen_dir, f"+actor_rollout_ref.rollout.custom.gui_grounding.max_tokens={MAX_TOKENS}",
                         prompt_length=2048, response_length=RESPONSE_LENGTH)
    runner = FuzzRunner()
    yield runner, config, qwen_tokenizer
    runner.close()


def test_hostile_outputs_never_escape_gui_grounding(fuzz_setup):
    runner, config, tok = fuzz_setup
    processor = QwenVLProcessorStandIn(tok)
    messages = screenshot_messages(screen=(400, 300))  # small: 150 image tokens instead of 1,300 keep it fast
    agent = runner.build("gui_grounding", config, tok, processor=processor, hf_model_type="qwen2_5_vl",
                         dataset_cls=DatasetStandIn)

    @settings(max_examples=EXAMPLES, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
    @given(turn=st.one_of(gui_outputs(), gui_outputs(), token_ids(tok)), eos=st.booleans())
    def one_sample(turn, eos):
        if eos and isinstance(turn, str):
            turn += "<|im_end|>"
        server = runner.server(tok, [turn], MAX_TOKENS)

        async def go():
            return await agent.run(dict(SAMPLING), **sample(messages, ground_truth=BOX))

        out = runner.run(go(), server)
        check_hostile_output(out, server, tok, RESPONSE_LENGTH)
        info = out.extra_fields["gui_grounding"]
        counted = {kind: n for kind, n in failures(out).items() if n}
        if info["failure"] is None:
            assert not counted
            assert all(math.isfinite(v) for v in info["click"] + info["click_original"]), info
        else:
            assert info["failure"] in MODEL_FAILURES, info
            assert counted == {info["failure"]: 1.0} and info["click"] is None and info["click_original"] is None
        # the reward path: the GUI rewards on what the loop produced, with the extra fields verl merges in
        solution = tok.decode(out.response_ids, skip_special_tokens=True)
        extra = {"image_size": out.extra_fields["image_size"], "input_size": out.extra_fields["input_size"]}
        for reward in (gui_click_in_box, gui_gaussian_point):
            assert math.isfinite(reward(solution, BOX, extra)["score"])

    one_sample()
    print("STATS", runner.outputs, runner.examples, runner.kinds)
    assert runner.outputs >= 2000, (runner.outputs, runner.examples)
