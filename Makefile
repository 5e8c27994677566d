# Two commands matter on a fresh machine:
#   make demo   - the main job on the built-in demo host (systemd container running the SGLang emulator)
#   make test   - the whole test suite (lint, unit tests, emulator tests, release conformance, molecule)
# And one for every edit: make check - lint and the tests that need no container (about 2 minutes).
SHELL := /bin/bash
VENV ?= .venv
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)
# podman's defaults fail on these machines (crun cannot set the rlimits and refuses the hybrid cgroup
# layout; tests/podman/containers.conf fixes both); never edit /etc/containers.
export CONTAINERS_CONF := $(CURDIR)/tests/podman/containers.conf
# A subset of molecule scenarios: make molecule SCENARIOS="smoke default"
SCENARIOS ?=

.PHONY: venv deps image demo demo-down test check lint unit unit-parallel timing releases molecule

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

# Lint beside the unit tests that need no container; both always run, the failures are repeated last.
check: venv
	@bash scripts/check.sh

unit-parallel: venv
	pytest -m "not releases and not timing" -n 3

# Tests that compare measured milliseconds with the server's own: after the unit tests, side by
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

# The whole suite: steps overlap where they wait on different things, the timing tests run alone, and
# the end repeats every failure and prints each step's, lane's and scenario's time (scripts/test.sh).
test:
	@bash scripts/test.sh
