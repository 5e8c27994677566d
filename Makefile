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

# Tests that compare measured milliseconds with the server's own: after everything else, side by
# side (they wait on the clock, not the CPU); a failure is run once more, alone (scripts/timing.sh).
timing: venv
	bash scripts/timing.sh

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
# The timing tests run after both, alone. CI shows only the end of the output, so the failed
# tests' one-line summaries (pytest's "FAILED ..." lines) are printed again last.
test: deps venv
	@set -o pipefail; failed=""; logs=$$(mktemp -d); \
	$(MAKE) --no-print-directory lint >"$$logs/lint" 2>&1 & lint_pid=$$!; \
	$(MAKE) --no-print-directory unit-parallel 2>&1 | tee "$$logs/unit" || failed="$$failed unit"; \
	wait $$lint_pid || failed="$$failed lint"; \
	cat "$$logs/lint"; \
	$(MAKE) --no-print-directory timing 2>&1 | tee "$$logs/timing" || failed="$$failed timing"; \
	for target in releases molecule; do \
	  $(MAKE) --no-print-directory $$target 2>&1 | tee "$$logs/$$target" || failed="$$failed $$target"; \
	done; \
	grep -h -E '^(FAILED|ERROR) ' "$$logs"/unit "$$logs"/releases 2>/dev/null; \
	grep -h -E '^timing: ' "$$logs"/timing 2>/dev/null; \
	grep -h -E '^molecule(-all: failed|: )' "$$logs"/molecule 2>/dev/null; \
	rm -rf "$$logs"; \
	if [ -n "$$failed" ]; then echo "make test: FAILED:$$failed"; exit 1; fi; \
	echo "make test: lint, unit, timing, releases and molecule passed"
