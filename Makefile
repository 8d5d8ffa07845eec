# Two commands for a fresh machine: `make run` and `make test`.
# `make run` installs only what dexter needs to run; `make test` adds the dev tools.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
DEV    := $(VENV)/.dev-installed
# Test worker processes (pytest-xdist). Most tests wait on subprocesses, sockets and
# servers, so on 2 cores 4 workers keep both busy; TEST_WORKERS=0 runs in one process.
TEST_WORKERS ?= 4

.PHONY: run test lint typecheck bench clean

$(BIN)/dexter: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e .
	touch $(BIN)/dexter

# The dev install is one pip run (runtime and dev packages resolved together, one editable
# build), and it skips pip's byte-compiling of every installed module (about half a minute
# on one core): the suite compiles what it imports, on every core, as it first imports it.
$(DEV): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet --no-compile -e '.[dev]'
	touch $(BIN)/dexter $(DEV)

run: $(BIN)/dexter
	$(BIN)/dexter $(ARGS)

# With PYTHONDONTWRITEBYTECODE set (as on some CI images) every dexter start in the suite
# compiles dexter's modules again and each worker rewrites every test module: the suite
# compiles them once into __pycache__ (git-ignored) instead.
test: $(DEV)
	env -u PYTHONDONTWRITEBYTECODE $(BIN)/python -m compileall -q -j 0 dexter tests > /dev/null
	env -u PYTHONDONTWRITEBYTECODE $(BIN)/python -m pytest -q -n $(TEST_WORKERS)

lint: $(DEV)
	$(BIN)/ruff check dexter tests benchmarks
	$(BIN)/mypy

typecheck: lint

bench: $(DEV)
	for f in benchmarks/*.py; do $(BIN)/python $$f || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
