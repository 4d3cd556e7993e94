# Everything a fresh clone needs: `make serve` runs the server, `make test` runs every test.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp

.PHONY: serve serve-http test test-fast install clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

## Run the MCP server over stdio on the embedded default store (the platform data dir, or MEMORYD_HOME).
serve: $(STAMP)
	$(VENV)/bin/memoryd-mcp

serve-http: $(STAMP)
	$(VENV)/bin/memoryd-mcp --transport http --port 8766

## The whole test suite, slow end-to-end suites included (what CI runs).
test: $(STAMP)
	$(PY) -m pytest

## Everything but the suites marked slow.
test-fast: $(STAMP)
	$(PY) -m pytest -m "not slow"

clean:
	rm -rf $(VENV) .pytest_cache
