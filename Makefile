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
export PATH := $(CURDIR)/.tools/bin:$(PATH)

UV := $(shell command -v uv 2>/dev/null)
ifeq ($(UV),)
UV := $(CURDIR)/.tools/bin/uv
endif

PYTEST_WORKERS ?= auto

.PHONY: help setup demo test check fmt lint types bench clean

help:  ## list the targets
	@grep -E '^[a-z]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/'

$(CURDIR)/.tools/bin/uv:
	$(PYTHON) -m venv .tools
	.tools/bin/python -m pip install --quiet --disable-pip-version-check uv

setup: $(UV)  ## create .venv with every package and the dev tools
	$(UV) sync --all-packages --all-extras --locked

demo: setup  ## run the demo of the main job
	$(UV) run --frozen python scripts/demo.py

test: setup  ## run every test (parallel)
	$(UV) run --frozen pytest -n $(PYTEST_WORKERS) -q

fmt: setup  ## format the code in place
	$(UV) run --frozen ruff format .
	$(UV) run --frozen ruff check --fix .

lint: setup
	$(UV) run --frozen ruff format --check .
	$(UV) run --frozen ruff check .

types: setup
	$(UV) run --frozen mypy packages/*/src

check: lint types test  ## format check, lint, strict types, tests

bench: setup  ## run every package's benchmarks
	@for script in packages/*/bench/bench_*.py; do echo "== $$script"; $(UV) run --frozen python "$$script" || exit 1; done

clean:
	rm -rf .venv .tools .pytest_cache .mypy_cache .ruff_cache dist build
