"""Multi-turn agent loops registered with verl, and their tracing (trace.py).

- rag_r1.py: `rag_r1`, the RAG-R1 / Search-R1 tag protocol (`RagR1AgentLoop`, `RagR1Config`)
- tool_agent_traced.py: `tool_agent_traced`, verl's ToolAgentLoop plus failure tracing
- function_call.py: `function_call`, FunReason / BFCL single turn (`FunctionCallAgentLoop`)
- gui.py: `gui_grounding`, one screenshot, one click (`GuiGroundingAgentLoop`)
- bfcl_multi_turn.py: `bfcl_multi_turn`, BFCL's multi-turn protocol against the BFCL environment server
  (`BfclMultiTurnAgentLoop`)
- prompts.py: the methods' prompt templates (no verl import; used by data prep too)
- configs/agent_loops.yaml: extra names for `rollout.agent.agent_loop_config_path` (rag_r1_sq, rag_r1_mq)
- trace.py, trace_reward.py: per-trajectory metrics, failure taxonomy, dumps

Nothing is imported here, so `agentic_verl.agent_loops.prompts` stays importable without verl; the plugin
imports each loop module to register it (agentic_verl/plugin.py).
"""
