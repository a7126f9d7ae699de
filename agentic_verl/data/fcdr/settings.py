"""The settings of an FCDR run (`agentic-verl data refine-fc`); no heavy imports, the CLI reads their defaults."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class RefineSettings:
    endpoint: str | None = None  # OpenAI-compatible server of the judge model
    model_name: str = ""  # the name it serves the judge under
    api_key_env: str | None = None  # the variable holding its bearer token (default OPENAI_API_KEY, if set); not the key
    cache_dir: str | None = None  # default OUT/judge_cache
    cache_only: bool = False  # answer from the cache only (reproduce a run without the server)
    concurrency: int = 8  # judge requests in flight
    max_retries: int = 3
    backoff_s: float = 1.0
    timeout_s: float = 600.0
    judge_max_tokens: int = 512
    max_regenerations: int = 2
    regenerate_max_tokens: int = 1024
    regenerate_temperature: float = 0.7  # seeded by attempt: a second try asks again, not the cache
    strict_separator: bool = True  # check 5: exactly "\n\n" after </think> (where SRML splits)
    prompts: str | None = None  # a folder with is_call/solvable/reasoning/regenerate.yaml
    limit: int | None = None  # first N samples
    format: str = "auto"  # input format: auto | bfcl | xlam
