# txkit: `make report` runs the main job on the sandbox, `make test` runs every test.
# Both create the virtual environment in .venv from pyproject.toml on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
MONTH ?= 2026-10

# Notebooks and tests run on the embedded sandbox: no real key, no progress bars in outputs.
SANDBOX_ENV := env -u TXKIT_SECRET_KEY -u TXKIT_BASE_URL TXKIT_PROGRESS=0

.PHONY: install compile read-ahead report test test-fast lint format notebooks bench clean

# pip installs uv, and uv the project: 22 s for the project's 190 packages from uv's cache
# against 60-75 s for pip from its own (a fresh clone's `make test` waited on it each time);
# the first run on a machine downloads them (about 45 s). Compiled to bytecode at install, as
# pip does: where PYTHONDONTWRITEBYTECODE is set (this machine), nothing is compiled later and
# every process and kernel compiled its imports again (2.7 s against 0.8 s for polars,
# matplotlib, ipykernel and txkit.notebook).
$(STAMP): pyproject.toml tools/uv-overrides.txt
	@echo "Setting up .venv from pyproject.toml: a minute the first time (JupyterLab is large); later runs reuse it."
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check 'uv>=0.9,<1'
	$(BIN)/uv pip install --quiet --compile-bytecode --python $(BIN)/python \
		--override tools/uv-overrides.txt -e '.[dev]'
	touch $(STAMP)

# The committed notebooks are marked trusted on this machine (Jupyter's signature database, in
# the user's Jupyter data folder): JupyterLab shows an untrusted notebook's stored tables
# without their styles (it drops the <style> of great_tables' HTML) until they are rerun.
# Again after a pull that changed them (`make notebooks` trusts what it writes).
install: $(STAMP)
	$(BIN)/jupyter trust --log-level=WARN notebooks/[0-9]*.ipynb

# txkit itself is installed editable, so the install compiles none of it: with
# PYTHONDONTWRITEBYTECODE set, every process and kernel that imported txkit compiled it again
# (0.45 s of CPU each; a `make test` starts about 90 of them). Compiled here, before each run
# (0.7 s the first time, 0.05 s when nothing changed); a source edited later is still read.
compile: $(STAMP)
	$(BIN)/python -m compileall -q txkit tests conftest.py

report: compile
	$(BIN)/txkit report --month $(MONTH)

lint: $(STAMP)
	$(BIN)/ruff check conftest.py txkit tests benchmarks tools notebooks/[0-9]*.py
	$(BIN)/ruff format --check conftest.py txkit tests benchmarks tools

format: $(STAMP)
	$(BIN)/ruff format conftest.py txkit tests benchmarks tools
	$(BIN)/ruff check --fix conftest.py txkit tests benchmarks tools

# Every test and notebook in two passes (each prints its slowest tests): what is safe in
# parallel on $(JOBS) workers (a notebook's cells stay on one worker, in order), then the tests
# marked serial without that load (they measure rates, times or a process's memory), two at a
# time: they are light (10 s of CPU in 33 s, each against a server of its own), so each has a
# core, and the pass takes 18-21 s instead of 33 s with the same measurements; it collects only
# the files that hold them (test_layout checks the list; collecting all cost 7.7 s of CPU),
# without the nbval plugin (no notebook there).
# `pytest` alone (no options) is the quick inner loop: it leaves out the slow tests.
# Four workers on two cores: a worker often waits (loopback HTTP, kernels, subprocesses, S3 on
# moto), and the others fill the gaps. Measured back to back on the same tree, quiet: the
# parallel pass took 5 min 39 s with 4 and 6 min 5 s with 3 (2026-12-02, each worker keeping
# its report kernels); earlier, 6 min 7 s with 2, 5 min 18 s with 3 and 5 min 32 s with 4.
# pytest keeps each test module's assertion rewriting in __pycache__ only where Python may write
# bytecode: with PYTHONDONTWRITEBYTECODE set (this machine), every worker rewrote every test
# module again on every run (collecting tests/ on 3 workers: 23-26 s of CPU, 11-13 s cached;
# a fresh clone's first pass writes the cache, its serial pass already reads it).
JOBS ?= 4
PYTEST := env -u PYTHONDONTWRITEBYTECODE $(SANDBOX_ENV) $(BIN)/python -m pytest
# The passes' temporary folders in memory where the system has /dev/shm: a run writes about
# 0.8 GB there (stores, reports, ledgers; each output file fsync'd, and each fsync waited on
# the disk). One folder per checkout, removed when both passes pass (kept to look into after a
# failure, until the next run); its path kept short, as a kernel's Unix socket path under a
# test's temporary folder holds at most 107 bytes.
TEST_TMP := $(shell [ -d /dev/shm ] && [ -w /dev/shm ] && echo /dev/shm/tx$$(echo '$(CURDIR)' | cksum | cut -c1-7))
basetemp = $(if $(TEST_TMP),--basetemp=$(TEST_TMP)$(1))

# First, the virtual environment's large shared libraries asked for whole, read while ruff and
# the workers start (tools/read_ahead.py; on a cold page cache the workers waited on the disk).
read-ahead: $(STAMP)
	@$(BIN)/python tools/read_ahead.py

test: read-ahead lint compile
	$(PYTEST) -m "not serial" -n $(JOBS) --durations=20 $(call basetemp,) \
		--nbval tests notebooks --nbval-sanitize-with notebooks/nbval_sanitize.cfg
	$(PYTEST) -m serial -n 2 --durations=10 $(call basetemp,-s) -p no:nbval \
		tests/test_hostile.py tests/test_ratelimit.py \
		tests/files/test_bounds.py tests/bank/test_sizes.py \
		tests/sandbox/test_sandbox_loader_faults.py
	$(if $(TEST_TMP),rm -rf $(TEST_TMP) $(TEST_TMP)-s)

test-fast: compile
	$(PYTEST)

# Edit notebooks/NN_topic.py (or the .ipynb in JupyterLab), then re-run them all on the sandbox
# seed and commit both files of each pair.
notebooks: $(STAMP)
	$(BIN)/jupytext --sync notebooks/[0-9]*.py
	$(SANDBOX_ENV) $(BIN)/jupyter nbconvert --to notebook --execute --inplace notebooks/[0-9]*.ipynb
	$(BIN)/python tools/clean_notebooks.py notebooks/[0-9]*.ipynb
	$(BIN)/jupytext --sync notebooks/[0-9]*.ipynb
	$(BIN)/jupyter trust --log-level=WARN notebooks/[0-9]*.ipynb

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_sandbox.py
	$(BIN)/python benchmarks/bench_export.py
	$(BIN)/python benchmarks/bench_ratelimit.py
	$(BIN)/python benchmarks/bench_analysis.py
	$(BIN)/python benchmarks/bench_store.py
	$(BIN)/python benchmarks/bench_report.py
	$(BIN)/python benchmarks/bench_trends.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
