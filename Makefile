# Two commands do all the set-up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
export LITELLM_LOCAL_MODEL_COST_MAP := True
export TOKENIZERS_PARALLELISM := false

.PHONY: install model demo lint postgres test test-fast test-unit bench browser clean

install: $(STAMP)

# The CPU build of torch goes in first: every later requirement accepts it, so nothing pulls
# the multi-GB CUDA build.
$(STAMP): pyproject.toml
	test -d $(VENV) || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e ".[dev]"
	touch $(STAMP)

model: install
	$(BIN)/mcprl models pull smollm2-135m

demo: model
	$(BIN)/mcprl train --config examples/calculator.toml --project demo --name calculator-$$(date +%Y%m%d-%H%M%S)

# One worker per core (at most 4): most tests wait on subprocesses, servers and small matmuls
# that keep one core busy, not two; tests/conftest.py gives each worker its share of threads.
PARALLEL := -n auto --maxprocesses 4 --dist worksteal

# ruff, pinned in the dev extra: lint and format (pyproject.toml's [tool.ruff]); `ruff format .` fixes the format.
lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# Debian's PostgreSQL: the test of a database server we did not write (tests/servers/test_postgres_server.py) makes a
# database in its cluster. Needs root; without it that test is skipped with the reason.
postgres:
	command -v pg_lsclusters >/dev/null || apt-get install -y -q postgresql >/dev/null || (apt-get update -q && apt-get install -y -q postgresql >/dev/null) || echo "postgresql not installed: the test on a PostgreSQL database is skipped"

test: lint model postgres
	$(BIN)/python -m pytest -q --timeout=900 --durations=15 $(PARALLEL)

test-fast: model
	$(BIN)/python -m pytest -q -m "not integration" --timeout=300 --durations=15 $(PARALLEL)

# The modules marked `unit` (fast, in-process): about a minute on 2 cores.
test-unit: model
	$(BIN)/python -m pytest -q -m unit --timeout=120 $(PARALLEL)

bench: model
	$(BIN)/pip install -q -e ".[bench]"
	$(BIN)/python bench/grpo_vs_trl.py
	$(BIN)/python bench/serving.py

# Debian's chromium, for the headless-browser test of report.html (tests/usage/test_usage_browser.py,
# skipped with the reason where it is not installed); needs root.
browser:
	command -v chromium >/dev/null || (apt-get update && apt-get install -y chromium)

clean:
	rm -rf $(VENV) .venv-mcp1 .pytest_cache
