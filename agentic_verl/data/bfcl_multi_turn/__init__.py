"""Generated BFCL multi-turn tasks for training, so that BFCL's own 800 questions stay evaluation-only.

The generator drives bfcl-eval's simulators (file system, messaging, posting, tickets, trading, travel, vehicle,
math), imported, never copied, in `.venv-bfcl`: random initial states, chains of requests sampled so that each is
valid on the state it meets, user turns from templates, gold calls executed by bfcl-eval's executor and judged valid
by its multi-turn checker. All four BFCL kinds: base, miss_func, miss_param, long_context. See
docs/bfcl_multi_turn_data.md.

- `.venv-bfcl` side (standard library + bfcl-eval): core, vocab, states, actions_* (per-class request samplers),
  simulators (bfcl-eval's executor and checker), tasks (one task), venv_main (the JSON-lines entry point);
- main venv side: bridge (runs venv_main), overlap (what a task must not share with BFCL's questions),
  near_duplicates (word 3-gram similarity of turns) and near_duplicate_threshold (the measurement behind its
  threshold), rows (BFCL files, RL rows), sft (gold trajectories through the `bfcl_multi_turn` loop), rewrite
  (optional judge rewording), dataset (all of it).

The simulators are run through the BFCL environment server's own code (`agentic_verl.bfcl_env.simulators`,
`checker`, `protocol`), so both share one implementation of instance isolation, output formatting, call strings
and the checker.
"""
