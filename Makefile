# txkit: `make report` runs the main job on the sandbox, `make test` runs every test.
# Both create the virtual environment in .venv from pyproject.toml on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
MONTH ?= 2026-10

.PHONY: install report test lint format bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

report: $(STAMP)
	$(BIN)/txkit report --month $(MONTH)

lint: $(STAMP)
	$(BIN)/ruff check txkit tests benchmarks
	$(BIN)/ruff format --check txkit tests benchmarks

format: $(STAMP)
	$(BIN)/ruff format txkit tests benchmarks
	$(BIN)/ruff check --fix txkit tests benchmarks

test: lint
	$(BIN)/python -m pytest

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_export.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
