"""benchmarks/bench_agent_loop.py's measuring code on its scripted stream (the stand-in engine, no vLLM): both loops,
built as verl builds them, run their scripted turns against a real retrieval server over a toy world, and the
table's rows carry what the benchmark reports. A few seconds."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from agent_loop_helpers import recording_retrieval_server

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import bench_agent_loop as bench  # noqa: E402

QUESTIONS, SAMPLES, REPEATS, SEARCHES = 3, 2, 2, 2


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A small toy world, its bm25s index, and the project's /retrieve app over it that records every search."""
    folder = tmp_path_factory.mktemp("bench_world")
    world_dir, index = bench.prepare_world(folder, entities=8, world_seed=0)
    server = recording_retrieval_server(index)
    yield world_dir, server
    server.stop()


def _args(*extra: str):
    return bench.parse_args(["--modes", "scripted", "--questions", str(QUESTIONS), "--max-turns", str(SEARCHES),
                             "--scripted-samples", str(SAMPLES), "--scripted-repeats", str(REPEATS), *extra])


def test_scripted_mode_runs_both_loops_on_the_same_work(world, smol_dir, smol_tokenizer):
    world_dir, server = world
    tasks = bench.load_tasks(world_dir, QUESTIONS, SEARCHES)
    before = len(server.service.calls)
    rows = bench.scripted_mode(smol_dir, smol_tokenizer, tasks, server.url, _args())

    # every search of both loops reached the server with the scripted query (the pages' titles): one warm-up
    # batch of 2 trajectories and REPEATS batches of QUESTIONS x SAMPLES per loop, SEARCHES each
    per_loop = (2 + REPEATS * QUESTIONS * SAMPLES) * SEARCHES
    calls = server.service.calls[before:]
    assert len(calls) == 2 * per_loop
    assert {q for call in calls for q in call} == {q for t in tasks for q in t.queries}

    assert [(r["mode"], r["loop"]) for r in rows] == [("scripted", "rag_r1"), ("scripted", "tool_agent")]
    trajectories = QUESTIONS * SAMPLES
    for row in rows:
        assert row["repeats"] == REPEATS and row["trajectories"] == trajectories
        assert row["turns"] == trajectories * (SEARCHES + 1) and row["searches"] == trajectories * SEARCHES
        assert 0 < row["wall_s_min"] <= row["wall_s"] <= row["wall_s_max"]
        assert 0 < row["trajectory_wall_s"] <= row["wall_s_max"]
        assert row["tokens_per_s"] == pytest.approx(row["tokens"] / row["wall_s"])
        assert row["overhead_ms_per_turn"] > 0 and row["cpu_ms_per_turn"] > 0
    ours, verls = rows
    assert ours["tokens"] == verls["tokens"]  # the scripts give both loops the same tokens per turn
    assert ours["our_over_verl"] == pytest.approx(ours["wall_s"] / verls["wall_s"])
    assert ours["our_over_verl_min"] <= ours["our_over_verl_max"] and "our_over_verl" not in verls

    table = bench.format_table(rows).splitlines()
    assert table[0].split()[:4] == ["mode", "loop", "traj.", "turns"] and "our/verl" in table[0]
    assert table[2].split()[:6] == ["scripted", "rag_r1", str(trajectories), str(trajectories * (SEARCHES + 1)),
                                    str(trajectories * SEARCHES), str(ours["tokens"])]
    assert table[2].split()[-1] == f"{ours['our_over_verl']:.3f}" and table[3].split()[1] == "tool_agent"


def test_overhead_leaves_out_the_engine_time(world, smol_dir, smol_tokenizer):
    """One trajectory (nothing to queue behind) against a stand-in engine that takes 200 ms per generation: it takes
    >= 3 x 200 ms, and the per-turn overhead stays below 200 ms: the engine's time is subtracted, not counted as
    the loop's."""
    world_dir, server = world
    tasks = bench.load_tasks(world_dir, 1, SEARCHES)
    args = bench.parse_args(["--modes", "scripted", "--questions", "1", "--max-turns", str(SEARCHES),
                             "--scripted-samples", "1", "--scripted-repeats", "1", "--scripted-gen-ms", "200"])
    rows = bench.scripted_mode(smol_dir, smol_tokenizer, tasks, server.url, args)
    for row in rows:
        assert row["trajectory_wall_s"] >= (SEARCHES + 1) * 0.200
        assert 0 < row["overhead_ms_per_turn"] < 200


def test_scripted_turns_have_equal_lengths_and_parse_as_each_loop_reads_them(smol_tokenizer):
    from agentic_verl.agent_loops.rag_r1_protocol import parse_action

    tasks = [bench.Task("Who founded Zorblax?", "Quindy Marr", ["Zorblax", "Quindy Marr"])]
    scripts = bench.scripts_for(smol_tokenizer, tasks)
    ours, verls = scripts["rag_r1"][tasks[0].question], scripts["tool_agent"][tasks[0].question]
    assert [len(t) for t in ours] == [len(t) for t in verls] and len(ours) == 3
    decode = lambda ids: smol_tokenizer.decode(ids, skip_special_tokens=True)  # noqa: E731
    assert [parse_action(decode(t)) for t in ours] == [("search", "Zorblax"), ("search", "Quindy Marr"),
                                                        ("answer", "Quindy Marr")]
    assert '{"name": "search", "arguments": {"query_list": ["Zorblax"]}}' in decode(verls[0])
    assert verls[0][-1] == smol_tokenizer.eos_token_id and ours[0][-1] != smol_tokenizer.eos_token_id
