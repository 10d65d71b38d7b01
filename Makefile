# txkit: `make report` runs the main job on the sandbox, `make test` runs every test.
# Both create the virtual environment in .venv from pyproject.toml on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
MONTH ?= 2026-10

# Notebooks and tests run on the embedded sandbox: no real key, no progress bars in outputs.
SANDBOX_ENV := env -u TXKIT_SECRET_KEY -u TXKIT_BASE_URL TXKIT_PROGRESS=0

.PHONY: install lock lock-upgrade compile read-ahead report test test-fast lint format notebooks bench clean

# The environment is the lock file, exactly (`uv pip sync` adds and removes packages to match
# it); txkit itself goes on top, editable. pyproject.toml keeps the version ranges a merchant's
# own environment may use; `make lock` moves the pins on purpose, then run `make test`.
# Bytecode is compiled at install: where PYTHONDONTWRITEBYTECODE is set, nothing is compiled
# later and every process and kernel would compile its imports again.
UV_VERSION := 0.13.10
LOCK := requirements-dev.lock
UV_COMPILE = $(BIN)/uv pip compile pyproject.toml --extra dev --universal --python-version 3.11 \
	--override tools/uv-overrides.txt --quiet --no-header --output-file $(LOCK)

$(STAMP): pyproject.toml $(LOCK)
	@echo "Setting up .venv from $(LOCK): a minute the first time (JupyterLab is large); later runs reuse it."
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check 'uv==$(UV_VERSION)'
	$(BIN)/uv pip sync --quiet --compile-bytecode --python $(BIN)/python $(LOCK)
	$(BIN)/uv pip install --quiet --compile-bytecode --python $(BIN)/python --no-deps -e .
	touch $(STAMP)

# `make lock` after editing pyproject.toml's dependencies (the other pins stay);
# `make lock-upgrade` moves every pin to the newest release allowed. Then `make test`.
lock lock-upgrade:
	@test -x $(BIN)/uv || { $(PYTHON) -m venv $(VENV) && $(BIN)/python -m pip install --quiet 'uv==$(UV_VERSION)'; }
	$(UV_COMPILE) $(if $(filter lock-upgrade,$@),--upgrade)

# The committed notebooks are marked trusted on this machine (Jupyter's signature database, in
# the user's Jupyter data folder): JupyterLab shows an untrusted notebook's stored tables
# without their styles (it drops the <style> of great_tables' HTML) until they are rerun.
# Again after a pull that changed them (`make notebooks` trusts what it writes).
install: $(STAMP)
	$(BIN)/jupyter trust --log-level=WARN notebooks/[0-9]*.ipynb

# txkit itself is installed editable, so the install compiles none of it: with
# PYTHONDONTWRITEBYTECODE set, every process and kernel that imported txkit would compile it
# again. Compiled here, before each run; a source edited later is still read.
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

# Every test and notebook in two passes, each printing its slowest tests: what is safe in
# parallel on $(JOBS) workers (a notebook's cells stay on one worker, in order), then the tests
# marked serial (they measure rates, times or a process's memory) without that load, two at a
# time; the serial pass names the files that hold them (test_layout checks the list) and runs
# without the nbval plugin. `pytest` alone is the quick inner loop: it leaves out the slow tests.
# More workers than cores: a worker often waits (loopback HTTP, kernels, subprocesses, S3 on
# moto) and the others fill the gaps; docs/benchmarks.md has the measured choice.
# pytest keeps its assertion rewriting in __pycache__ only where Python may write bytecode, so
# PYTHONDONTWRITEBYTECODE is lifted for the run.
JOBS ?= 4
PYTEST := env -u PYTHONDONTWRITEBYTECODE $(SANDBOX_ENV) $(BIN)/python -m pytest
# The passes' temporary folders in memory where the system has /dev/shm (stores, reports and
# ledgers are fsync'd). One folder per checkout, removed when both passes pass, kept to look
# into after a failure; its path short, as a kernel's Unix socket path holds at most 107 bytes.
TEST_TMP := $(shell [ -d /dev/shm ] && [ -w /dev/shm ] && echo /dev/shm/tx$$(echo '$(CURDIR)' | cksum | cut -c1-7))
basetemp = $(if $(TEST_TMP),--basetemp=$(TEST_TMP)$(1))
# nbval validates the curated notebooks as a merchant gets them: in a project `txkit init`
# made, each run in its notebooks/ folder, the project's store synced by the notebooks.
NB_ROOT := $(if $(TEST_TMP),$(TEST_TMP)-nb,build/nbval)

# The virtual environment's large shared libraries read ahead while ruff and the workers start
# (on a cold page cache the workers waited on the disk).
read-ahead: $(STAMP)
	@$(BIN)/python tools/read_ahead.py

test: read-ahead lint compile
	rm -rf $(NB_ROOT) && $(BIN)/txkit init $(NB_ROOT)/acme > /dev/null
	$(PYTEST) -m "not serial" -n $(JOBS) --durations=20 $(call basetemp,) \
		--nbval tests $(NB_ROOT)/acme/notebooks --nbval-sanitize-with notebooks/nbval_sanitize.cfg
	$(PYTEST) -m serial -n 2 --durations=10 $(call basetemp,-s) -p no:nbval \
		tests/test_hostile.py tests/test_ratelimit.py \
		tests/files/test_bounds.py tests/bank/test_sizes.py \
		tests/sandbox/test_sandbox_loader_faults.py
	rm -rf $(NB_ROOT) $(if $(TEST_TMP),$(TEST_TMP) $(TEST_TMP)-s)

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
