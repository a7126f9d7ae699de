"""Hydra configs of agentic_verl's SFT trainer: sft_trainer.yaml (verl's sft_trainer_engine + the `loss` group) and
loss/<name>.yaml. A package so that a recipe's config finds them as `pkg://agentic_verl.training.config` (hydra reads
a `pkg://` search path only from a folder with an __init__.py)."""
