#!/usr/bin/env bash
# make check: the quick check for every edit - lint (ruff, mypy, ansible-lint) beside the unit and
# emulator tests that need no container (pytest -m "not releases and not timing"). Both always run;
# lint's output comes after the tests', and the failures are repeated last. The venv must exist
# (make venv). Prints each side's wall time and CPU seconds.
set -uo pipefail
cd "$(dirname "$0")/.."
export PATH=$PWD/${VENV:-.venv}/bin:$PATH
# The suite starts Python thousands of times (ansible-playbook and its plugins, python -m sweep and
# bench): where the environment says not to write bytecode, every start compiled the same sources
# again. The caches go to __pycache__ (ignored by git).
unset PYTHONDONTWRITEBYTECODE
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
times=${SUITE_TIMES:-$logs/times.jsonl}
timed() { python3 scripts/timed.py --log "$times" --name "$1" --lane "$2" -- "${@:3}"; }
failed=""
timed lint "side 1" make --no-print-directory lint >"$logs/lint" 2>&1 &
lint=$!
timed unit "side 2" make --no-print-directory unit-parallel 2>&1 | tee "$logs/unit" || failed="$failed unit"
wait "$lint" || failed="$failed lint"
cat "$logs/lint"
grep -h -E '^(FAILED|ERROR) ' "$logs/unit"
[ -n "${SUITE_TIMES:-}" ] || python3 scripts/timed.py --log "$times" --summary --title "make check"
if [ -n "$failed" ]; then
  echo "make check: FAILED:$failed"
  exit 1
fi
echo "make check: lint and unit passed"
