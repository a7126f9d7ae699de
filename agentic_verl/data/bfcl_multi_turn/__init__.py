"""Generated BFCL multi-turn tasks for training, so that BFCL's own 800 questions stay evaluation-only.

The generator drives bfcl-eval's simulators (file system, messaging, posting, tickets, trading, travel, vehicle,
math), imported, never copied, in `.venv-bfcl`: random initial states, chains of requests sampled so that each is
valid on the state it meets, user turns from templates, gold calls executed by bfcl-eval's executor and judged valid
by its multi-turn checker. All four BFCL kinds: base, miss_func, miss_param, long_context. See docs/bfcl_data.md.

- `.venv-bfcl` side (standard library + bfcl-eval): core, vocab, states, actions_* (per-class request samplers),
  simulators (bfcl-eval's executor and checker), tasks (one task), venv_main (the JSON-lines entry point);
- main venv side: bridge (runs venv_main), overlap (BFCL's questions), rows (BFCL files, RL rows), sft (gold
  trajectories through the `bfcl_multi_turn` loop), rewrite (optional judge rewording), dataset (all of it).
"""
