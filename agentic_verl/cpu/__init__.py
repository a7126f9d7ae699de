"""Run verl's own trainers on a CPU (or a GPU without vLLM): a CPU platform for verl's PlatformRegistry,
FSDP engine registrations for device "cpu", and an `hf` rollout backend that serves generation with
transformers (engine.py in-process; server.py as a Ray actor; replica.py and adapter.py plug it into verl).

Importing this package imports nothing from verl or torch; agentic_verl.plugin imports the modules
that register components.
"""
