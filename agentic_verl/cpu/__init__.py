"""Run verl's own trainers and verl's own vLLM rollout on a CPU: a CPU platform for verl's PlatformRegistry,
FSDP engine registrations for device "cpu" (platform.py), a vLLM general plugin for vLLM's CPU backend
(vllm_plugin.py), cleanup of a run's processes and shared memory (cleanup.py), the verl workarounds no hook
reaches (_verl_workarounds.py), model folders for CPU runs (models.py) and in-process transformers generation
.

Importing this package imports nothing from verl or torch; agentic_verl.plugin imports the modules
that register components.
"""
