# Everything a fresh clone needs: `make serve` runs the server, `make test` runs every test.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
# `make serve` needs only memoryd itself; a full (test) install satisfies it too.
SERVE_STAMP := $(VENV)/.serve-stamp
# The real MCP clients tests/clients/ drives (Claude Code, Codex, Inspector, TS SDK, conformance, node 22),
# pinned by clients/package-lock.json; everything runs offline once installed. `make serve` needs none of it.
CLIENTS_STAMP := clients/node_modules/.installed-stamp
# OpenClaw and the Node 24 it needs (tests/openclaw/), pinned by clients/openclaw/package-lock.json. `make serve`
# needs none of it.
OPENCLAW_STAMP := clients/openclaw/node_modules/.installed-stamp
# memoryd's OpenClaw plugin (integrations/openclaw), built into the package (memoryd/agents/install/openclaw_plugin:
# its manifest, package.json and JavaScript, shipped in the wheel) by the TypeScript compiler alone, pinned with
# Node's types by integrations/openclaw/toolchain/package-lock.json (26 MB; nothing of OpenClaw). Needs node and npm.
# The build is committed too, so `uv tool install ./memoryd` from a clone carries the plugin without Node;
# tests/openclaw/test_plugin_build.py fails when it differs from a fresh build of the sources.
OC_TOOLCHAIN := integrations/openclaw/toolchain
OC_TOOLCHAIN_STAMP := $(OC_TOOLCHAIN)/node_modules/.installed-stamp
PLUGIN_OUT := src/memoryd/agents/install/openclaw_plugin
OPENCLAW_PLUGIN := $(PLUGIN_OUT)/dist/index.js

.PHONY: serve serve-http lint test test-fast install clients openclaw openclaw-plugin browser ui clean wheel

# Editable, with the test extra (which pulls the e5, postgres and ann extras): everything the suite needs.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP) $(SERVE_STAMP)

$(SERVE_STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e .
	touch $(SERVE_STAMP)

install: $(STAMP)

$(CLIENTS_STAMP): clients/package.json clients/package-lock.json
	npm ci --prefix clients --no-audit --no-fund --loglevel=error
	touch $(CLIENTS_STAMP)

clients: $(CLIENTS_STAMP)

# --ignore-scripts: openclaw's postinstall checks the Node that runs npm (not the Node 24 it ships with here)
$(OPENCLAW_STAMP): clients/openclaw/package.json clients/openclaw/package-lock.json
	npm ci --prefix clients/openclaw --ignore-scripts --no-audit --no-fund --loglevel=error
	touch $(OPENCLAW_STAMP)

openclaw: $(OPENCLAW_STAMP)

$(OC_TOOLCHAIN_STAMP): $(OC_TOOLCHAIN)/package.json $(OC_TOOLCHAIN)/package-lock.json
	npm ci --prefix $(OC_TOOLCHAIN) --no-audit --no-fund --loglevel=error
	touch $(OC_TOOLCHAIN_STAMP)

$(OPENCLAW_PLUGIN): $(OC_TOOLCHAIN_STAMP) $(wildcard integrations/openclaw/src/*.ts integrations/openclaw/types/*.ts) \
		integrations/openclaw/tsconfig.json integrations/openclaw/openclaw.plugin.json integrations/openclaw/package.json
	rm -rf $(PLUGIN_OUT)
	node $(OC_TOOLCHAIN)/node_modules/typescript/bin/tsc -p integrations/openclaw/tsconfig.json
	cp integrations/openclaw/openclaw.plugin.json integrations/openclaw/package.json $(PLUGIN_OUT)/

openclaw-plugin: $(OPENCLAW_PLUGIN)

# Debian's Chromium (and CJK fonts, for readable screenshots) for the console's browser tests
# (tests/test_ui_browser.py drives /usr/bin/chromium with Playwright; no browser download). Quiet, idempotent.
browser:
	@dpkg -s chromium fonts-noto-cjk >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium fonts-noto-cjk >/dev/null; \
	  else echo "make browser: needs root to apt-get install chromium fonts-noto-cjk (the browser tests skip without it)"; fi; }

## Run the MCP server over stdio on the embedded default store (the platform data dir, or MEMORYD_HOME).
## Usable as an MCP command: the install and make's own lines go to stderr, so the first line on
## stdout is the server's JSON-RPC.
serve:
	@$(MAKE) --no-print-directory $(SERVE_STAMP) 1>&2
	@exec $(VENV)/bin/memoryd-mcp

serve-http:
	@$(MAKE) --no-print-directory $(SERVE_STAMP) 1>&2
	@exec $(VENV)/bin/memoryd-mcp --transport http --port 8766

## The wheel and sdist in dist/ (what `pipx install` / `uv tool install` take), the OpenClaw plugin built into
## them. Needs only the build frontend (in a small venv of its own), the build backend it fetches and the plugin's
## compiler: not the test virtualenv.
BUILD_VENV ?= .venv-build
DIST ?= dist
wheel: $(OPENCLAW_PLUGIN)
	@test -x $(BUILD_VENV)/bin/python || $(PYTHON) -m venv $(BUILD_VENV)
	$(BUILD_VENV)/bin/python -m pip install --quiet build
	$(BUILD_VENV)/bin/python -m build --outdir $(DIST) .

## Static checks (what CI runs first): ruff, and mypy strict on all of src/ (pyproject.toml).
lint: $(STAMP)
	$(VENV)/bin/ruff check src tests bench
	$(VENV)/bin/ruff format --check src tests bench
	$(VENV)/bin/mypy

## The whole test suite, slow end-to-end suites included (what CI runs).
test: $(STAMP) $(CLIENTS_STAMP) $(OPENCLAW_STAMP) $(OPENCLAW_PLUGIN) browser
	$(PY) -m pytest

## Everything but the suites marked slow.
test-fast: $(STAMP) $(CLIENTS_STAMP)
	$(PY) -m pytest -m "not slow"

## Serve the web console on the default store (prints its address with the token).
ui: $(STAMP)
	$(VENV)/bin/memoryd ui

clean:
	rm -rf $(VENV) $(BUILD_VENV) .pytest_cache clients/node_modules clients/openclaw/node_modules $(OC_TOOLCHAIN)/node_modules \
		dist build
