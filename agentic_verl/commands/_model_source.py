"""The model-or-endpoint flags shared by the text-model evaluations (`eval qa`, `eval bfcl`, `eval humaneval`)."""

from __future__ import annotations


def add_model_source(p) -> None:
    """--model DIR | --endpoint URL (exactly one), --model-name, --api-key-env, --tokenizer."""
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--model", help="HF model folder, generated in-process (--engine)")
    source.add_argument("--endpoint", help="an OpenAI-compatible server, e.g. http://127.0.0.1:8001 (vllm serve)")
    p.add_argument("--model-name", help="with --endpoint: the name the server serves the model under")
    add_api_key_env(p)
    p.add_argument("--tokenizer", help="the model's tokenizer folder (default: --model, or --model-name)")


def add_api_key_env(p) -> None:
    """--api-key-env NAME: the endpoint's bearer token comes from that environment variable (agentic_verl.net)."""
    p.add_argument("--api-key-env", metavar="NAME", help=(
        "with --endpoint: the environment variable holding the bearer token to send to the endpoint, whatever its "
        "URL (a named variable must be set). Default: OPENAI_API_KEY when it is set, sent only to an https or "
        "loopback endpoint (never in clear text to another host). Only the name is recorded, never the key"))
