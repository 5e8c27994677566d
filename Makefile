# Two commands matter on a fresh machine:
#   make demo   - the main job on the built-in demo host (systemd container running the SGLang emulator)
#   make test   - the whole test suite (lint, unit tests, emulator tests, release conformance, molecule)
SHELL := /bin/bash
VENV ?= .venv
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)
# podman's defaults fail on these machines (crun cannot set the rlimits and refuses the hybrid cgroup
# layout; tests/podman/containers.conf fixes both); never edit /etc/containers.
export CONTAINERS_CONF := $(CURDIR)/tests/podman/containers.conf
# A subset of molecule scenarios: make molecule SCENARIOS="smoke default"
SCENARIOS ?=

.PHONY: venv deps image demo demo-down test lint unit unit-parallel timing releases molecule

deps:
	bash scripts/install-system-deps.sh

venv:
	bash scripts/bootstrap.sh

image: deps
	bash scripts/test-image.sh

lint: venv
	ruff check .
	ruff format --check .
	mypy
	ansible-lint

unit: unit-parallel timing

unit-parallel: venv
	pytest -m "not releases and not timing" -n 3

# Tests that compare measured milliseconds with the server's own: alone, after everything else.
timing: venv
	pytest -m timing

# Conformance with every real SGLang release (tests/releases): wheels and facts are cached in cache/.
releases: image venv
	bash scripts/real-sglang-image.sh
	pytest -m releases tests/releases

molecule: image venv
	bash scripts/molecule-all.sh $(SCENARIOS)

demo: image venv
	bash scripts/demo.sh up

demo-down:
	bash scripts/demo.sh down

# Lint, unit and molecule all run even when one fails, so one CI run reports every failure. Lint
# runs beside the unit tests (they mostly wait on servers); its output is printed after theirs.
# The timing tests run after both, alone.
test: deps venv
	@failed=""; lint_log=$$(mktemp); \
	$(MAKE) --no-print-directory lint >"$$lint_log" 2>&1 & lint_pid=$$!; \
	$(MAKE) --no-print-directory unit-parallel || failed="$$failed unit"; \
	wait $$lint_pid || failed="$$failed lint"; \
	cat "$$lint_log"; rm -f "$$lint_log"; \
	$(MAKE) --no-print-directory timing || failed="$$failed timing"; \
	for target in releases molecule; do \
	  $(MAKE) --no-print-directory $$target || failed="$$failed $$target"; \
	done; \
	if [ -n "$$failed" ]; then echo "make test: FAILED:$$failed"; exit 1; fi; \
	echo "make test: lint, unit, timing, releases and molecule passed"
