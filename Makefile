# The two README commands: `make drill` (main job) and `make test` (everything CI runs).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: drill test lint typecheck unit sandbox lock clean

$(STAMP): pyproject.toml constraints.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[dev]'
	@touch $(STAMP)

drill: $(STAMP)
	$(BIN)/incident-sandbox smoke

test: lint typecheck unit

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy

unit: $(STAMP)
	$(BIN)/pytest

sandbox: $(STAMP)
	$(BIN)/incident-sandbox up

# Re-resolve every dependency to its newest allowed version and pin the result.
lock:
	rm -rf .lock-venv && $(PYTHON) -m venv .lock-venv
	.lock-venv/bin/python -m pip install --quiet -e '.[dev]'
	( echo "# Pinned versions of every dependency (direct and transitive). Regenerate with: make lock"; \
	  .lock-venv/bin/python -m pip freeze --exclude-editable | sort ) > constraints.txt
	rm -rf .lock-venv

clean:
	rm -rf $(VENV) .sandbox .mypy_cache .ruff_cache .pytest_cache
