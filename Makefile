# Two commands for a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin

.PHONY: run test lint typecheck bench clean

$(BIN)/dexter: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(BIN)/dexter

run: $(BIN)/dexter
	$(BIN)/dexter $(ARGS)

test: $(BIN)/dexter
	$(BIN)/python -m pytest -q

lint: $(BIN)/dexter
	$(BIN)/ruff check dexter tests benchmarks
	$(BIN)/mypy

typecheck: lint

bench: $(BIN)/dexter
	for f in benchmarks/*.py; do $(BIN)/python $$f || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
