# Everyday commands. `make run` and `make test` work on a fresh machine with only Python 3.11.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PORT   ?= 8000
export PORT
# `make test` runs the suite in this many processes (pytest-xdist), one test file per process at a time: most tests
# wait on a browser, a server or a worker, so two cores keep more than two busy. `TEST_PROCESSES=0`: one process.
TEST_PROCESSES ?= 3

# The checks of `make test` read the real settings, which refuse a development key with DEBUG off: a throw-away key
# stands in for the one `make run` keeps in var/secret_key (unless SECRET_KEY is set).
CHECK_KEY = SECRET_KEY="$${SECRET_KEY:-$$($(BIN)/python -c 'import secrets; print(secrets.token_urlsafe(64))')}"

.PHONY: run test test-fast test-js lint format check bench install clean help

help:  ## List the commands
	@grep -E '^[a-z-]+:.*##' $(MAKEFILE_LIST) | sed 's/:.*## /\t/'

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed: requirements.txt | $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.txt
	touch $@

install: $(VENV)/.installed  ## Create the virtualenv and install the pinned requirements

run: install  ## Set up on first run, then serve on http://127.0.0.1:$(PORT) with a Celery worker
	$(BIN)/python manage.py runplatform --port $(PORT)

test: install  ## The whole suite: unit, API, integration, browser, extension (installs chromium/node on Debian)
	scripts/ensure-test-tools.sh
	$(MAKE) --no-print-directory test-js
	$(CHECK_KEY) $(BIN)/python manage.py check --fail-level WARNING
	$(CHECK_KEY) $(BIN)/python manage.py makemigrations --check --dry-run
	$(CHECK_KEY) $(BIN)/python manage.py spectacular --validate --fail-on-warn --file /dev/null
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports
	$(BIN)/python -m pytest -n $(TEST_PROCESSES) --dist loadfile --durations=25

test-js:  ## The recorder extension's unit tests (node's test runner)
	npm ci --no-audit --no-fund --loglevel=error && node --test recorder_extension/tests/

test-fast: install  ## The suite without Chromium, real processes, S3 or long tests (the markers in pyproject.toml)
	$(BIN)/python -m pytest -n $(TEST_PROCESSES) --dist loadfile -m "not browser and not processes and not s3 and not slow"

lint: install  ## ruff lint + format check, and the import contracts (pyproject.toml, docs/architecture.md)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

format: install  ## Apply ruff's fixes and formatting
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

bench: install  ## Benchmarks; JSON in var/bench/latest.json
	$(BIN)/python -m bench.run

clean:  ## Remove local data (var/): database, blobs, broker queue, bench results
	rm -rf var
