# Everything a fresh clone needs: `make serve` runs the server, `make test` runs every test.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
# The real MCP clients tests/clients/ drives (Claude Code, Codex, Inspector, TS SDK, conformance, node 22),
# pinned by clients/package-lock.json; everything runs offline once installed. `make serve` needs none of it.
CLIENTS_STAMP := clients/node_modules/.installed-stamp

.PHONY: serve serve-http lint test test-fast install clients clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

$(CLIENTS_STAMP): clients/package.json clients/package-lock.json
	npm ci --prefix clients --no-audit --no-fund --loglevel=error
	touch $(CLIENTS_STAMP)

clients: $(CLIENTS_STAMP)

## Run the MCP server over stdio on the embedded default store (the platform data dir, or MEMORYD_HOME).
serve: $(STAMP)
	$(VENV)/bin/memoryd-mcp

serve-http: $(STAMP)
	$(VENV)/bin/memoryd-mcp --transport http --port 8766

## Static checks (what CI runs first): ruff, and mypy (strict on engine/, storage/, search/; pyproject.toml).
lint: $(STAMP)
	$(VENV)/bin/ruff check src tests bench
	$(VENV)/bin/mypy

## The whole test suite, slow end-to-end suites included (what CI runs).
test: $(STAMP) $(CLIENTS_STAMP)
	$(PY) -m pytest

## Everything but the suites marked slow.
test-fast: $(STAMP) $(CLIENTS_STAMP)
	$(PY) -m pytest -m "not slow"

clean:
	rm -rf $(VENV) .pytest_cache clients/node_modules
