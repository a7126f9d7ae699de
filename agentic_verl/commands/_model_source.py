"""The model-or-endpoint flags shared by the text-model evaluations (`eval qa`, `eval bfcl`, `eval humaneval`)."""

from __future__ import annotations


def add_model_source(p) -> None:
    """--model DIR | --endpoint URL (exactly one), --model-name, --tokenizer."""
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--model", help="HF model folder, generated in-process (--engine)")
    source.add_argument("--endpoint", help="an OpenAI-compatible server, e.g. http://127.0.0.1:8001 (vllm serve)")
    p.add_argument("--model-name", help="with --endpoint: the name the server serves the model under")
    p.add_argument("--tokenizer", help="the model's tokenizer folder (default: --model, or --model-name)")
