"""Generated BFCL multi-turn tasks for training, so that BFCL's own 800 questions stay evaluation-only.

The generator drives bfcl-eval's simulators (file system, messaging, posting, tickets, trading, travel, vehicle,
math), imported, never copied, in `.venv-bfcl`: random initial states, chains of requests sampled so that each is
valid on the state it meets, user turns from templates, gold calls executed by bfcl-eval's executor and judged valid
by its multi-turn checker. All four BFCL kinds: base, miss_func, miss_param, long_context. See docs/funreason_mt.md
("Training tasks from BFCL's simulators").

This package only writes tasks. Everything that touches bfcl-eval is `agentic_verl.bfcl_env`'s, shared with the
BFCL environment server: `simulators` (instances on private copies of bfcl-eval's records, its executor),
`checker` (the verdict), `data` (function docs, BFCL's questions), `protocol` (call strings, outputs), `venv`.

- `.venv-bfcl` side (standard library + bfcl-eval through `bfcl_env`): core, vocab, states, actions_* (per-class
  request samplers), tasks (one task), venv_main (the JSON-lines entry point);
- main venv side: bridge (runs venv_main), overlap (what a task must not share with BFCL's questions),
  near_duplicates (word 3-gram similarity of turns) and near_duplicate_threshold (the measurement behind its
  threshold), rows (BFCL files, RL rows), sft (gold trajectories through the `bfcl_multi_turn` loop), rewrite
  (optional judge rewording), dataset (all of it).
"""
