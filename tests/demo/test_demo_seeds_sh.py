"""recipes/demo/seeds.sh's arguments and flow, with a stand-in demo script (DEMO_SCRIPT) instead of a real demo."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from demo_helpers import synthetic_summary

from agentic_verl.demo.methods import METHODS

ROOT = Path(__file__).resolve().parents[2]
SEEDS_SH = ROOT / "recipes" / "demo" / "seeds.sh"
AGENTIC_VERL = str(Path(sys.executable).parent / "agentic-verl")

# Stands in for a demo: logs how it was called and writes the summary prepared for its seed (as a demo's
# `agentic-verl demo summary` would), unless the seed is 9.
STAND_IN = """#!/usr/bin/env bash
set -euo pipefail
echo "seed=$SEED out=$OUT" >> "$CALLS"
mkdir -p "$OUT"
[[ "$SEED" == 9 ]] || cp "$PREPARED/seed$SEED.json" "$OUT/summary.json"
"""


def _run(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    full_env = {**os.environ, "AGENTIC_VERL": AGENTIC_VERL, "CALLS": str(tmp_path / "calls.log"),
                "PREPARED": str(tmp_path / "prepared"), **env}
    return subprocess.run(["bash", str(SEEDS_SH), *args], capture_output=True, text=True, env=full_env, timeout=120)


@pytest.fixture
def stand_in(tmp_path) -> Path:
    (tmp_path / "prepared").mkdir()
    for seed, em in ((0, 0.5), (1, 0.625), (2, 0.75)):
        summary = synthetic_summary(seed, [0.0, 0.25, em], {"1-hop": [0, 0.5, em]}, [2, 1, 1], [0, 0, 0], [1, 2, 3],
                                    n=8, method="funreason")
        (tmp_path / "prepared" / f"seed{seed}.json").write_text(json.dumps(summary))
    script = tmp_path / "stand_in_demo.sh"
    script.write_text(STAND_IN)
    return script


def test_runs_each_seed_then_the_seeds_table(tmp_path, stand_in):
    out = tmp_path / "out"
    proc = _run(tmp_path, "funreason", SEEDS="2 0 1", OUT=str(out), DEMO_SCRIPT=str(stand_in))
    assert proc.returncode == 0, proc.stderr
    calls = (tmp_path / "calls.log").read_text().splitlines()
    assert calls == [f"seed={s} out={out}/seed{s}" for s in (2, 0, 1)]  # in the order given, one folder each
    rows = re.findall(r"^\| (\d) \| 8 \| 0\.000 \| 0\.250 \| (0\.\d+) \|", proc.stdout, flags=re.M)
    assert rows == [("0", "0.500"), ("1", "0.625"), ("2", "0.750")]  # sorted by seed
    assert "after GRPO - after SFT: mean +0.375 AST accuracy" in proc.stdout
    assert (out / "seeds.md").is_file() and (out / "seeds.html").is_file()


def test_only_the_seeds_run_now_are_tabled(tmp_path, stand_in):
    out = tmp_path / "out"
    assert _run(tmp_path, "funreason", SEEDS="0 1 2", OUT=str(out), DEMO_SCRIPT=str(stand_in)).returncode == 0
    proc = _run(tmp_path, "funreason", SEEDS="1", OUT=str(out), DEMO_SCRIPT=str(stand_in))
    assert proc.returncode == 0, proc.stderr
    assert "on 1 seed(s)" in proc.stdout and "\n| 0 | " not in proc.stdout  # seed0/ and seed2/ are old runs


@pytest.mark.parametrize("args, env, message", [
    (["ppo"], {}, "unknown method 'ppo'; known: rag_r1 funreason v2p"),
    (["rag_r1", "extra"], {}, "usage: SEEDS="),
    (["rag_r1"], {"SEEDS": "0 one"}, "SEEDS must be non-negative integers, got 'one'"),
    (["rag_r1"], {"SEEDS": " "}, "SEEDS is empty"),
    (["v2p"], {"DEMO_SCRIPT": "recipes/v2p/no_such_demo.sh"}, "the v2p demo script recipes/v2p/no_such_demo.sh "
                                                              "does not exist"),
])
def test_bad_arguments_exit_2_before_any_demo_runs(tmp_path, args, env, message):
    proc = _run(tmp_path, *args, OUT=str(tmp_path / "out"), **env)
    assert proc.returncode == 2
    assert message in proc.stderr
    assert not (tmp_path / "calls.log").exists() and not (tmp_path / "out").exists()


def test_a_demo_that_writes_no_summary_stops_the_run(tmp_path, stand_in):
    proc = _run(tmp_path, "funreason", SEEDS="9 0", OUT=str(tmp_path / "out"), DEMO_SCRIPT=str(stand_in))
    assert proc.returncode == 1
    assert "did not write" in proc.stderr and "seed9/summary.json" in proc.stderr
    assert (tmp_path / "calls.log").read_text().splitlines() == [f"seed=9 out={tmp_path}/out/seed9"]


def test_a_summary_of_another_method_fails_the_table(tmp_path, stand_in):
    proc = _run(tmp_path, "v2p", SEEDS="0", OUT=str(tmp_path / "out"), DEMO_SCRIPT=str(stand_in))
    assert proc.returncode == 2 and "is a funreason run, not v2p" in proc.stderr


def test_methods_and_demo_scripts_match_the_summary_methods():
    text = SEEDS_SH.read_text()
    assert re.search(r'^KNOWN="(.*)"$', text, flags=re.M).group(1).split() == list(METHODS)
    scripts = dict(re.findall(r"^\s+(\w+)\)\s+DEMO=(\S+);", text, flags=re.M))
    assert scripts == {"rag_r1": "recipes/demo/run.sh", "funreason": "recipes/funreason/demo.sh",
                       "v2p": "recipes/v2p/demo.sh"}
    assert re.search(r'^METHOD=\$\{1:-rag_r1\}$', text, flags=re.M)  # rag_r1 when no method is named
