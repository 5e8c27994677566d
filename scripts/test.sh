#!/usr/bin/env bash
# make test: the whole suite, on a fresh machine as on a developer's. Steps that wait on different
# things overlap; steps that need the CPU to themselves do not:
#   1. system packages, then the virtual environment
#   2. side by side: lint and the unit tests (pytest -n 3)
#   3. the timing tests, alone (they compare milliseconds: scripts/timing.sh)
#   4. side by side: the molecule lanes (scripts/molecule-all.sh) and the release conformance tests
# The two host images build from step 1 on (the test image's rootfs beside the venv), in the
# background at the lowest CPU priority (nice 19) until the timing tests end: downloads and disk
# most of the time, they take only CPU no step wants (a timing test that fails beside them anyway
# runs again once the build has ended); then at nice 0, since the real-SGLang lane waits for it.
# Molecule and the releases wait for the image they need (the image scripts take a lock, and a
# built image is not built again).
# Every step runs even when an earlier one failed (except what cannot: no venv, no tests), so one CI
# run reports every failure. CI shows the end of a long log: the end repeats the failed tests' lines
# and prints each step's, lane's and scenario's wall time and CPU seconds (scripts/timed.py).
set -uo pipefail
cd "$(dirname "$0")/.."
# The suite starts Python thousands of times (ansible-playbook and its plugins, python -m sweep and
# bench): where the environment says not to write bytecode, every start compiled the same sources
# again. The caches go to __pycache__ (ignored by git).
unset PYTHONDONTWRITEBYTECODE
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
export SUITE_TIMES=$logs/times.jsonl
# molecule-all.sh writes why each failed scenario failed here, repeated at the very end.
export SUITE_WHY=$logs/why.txt
make_=(make --no-print-directory)
timed() { python3 scripts/timed.py --log "$SUITE_TIMES" --name "$1" --lane "$2" -- "${@:3}"; }
failed=""

timed deps setup "${make_[@]}" deps || { echo "make test: the system packages did not install"; exit 1; }
# The test image needs no venv: its rootfs downloads beside the venv's. The images step below calls
# it again, which waits for this one (the script takes a lock) and finds the image built.
nice -n 19 bash scripts/test-image.sh >"$logs/test-image" 2>&1 &
timed venv setup "${make_[@]}" venv || { echo "make test: the virtual environment did not build"; exit 1; }
export PATH=$PWD/${VENV:-.venv}/bin:$PATH

# The build writes images.done when it ends, built or not: a timing rerun waits for it (scripts/timing.sh).
timed images background nice -n 19 \
  bash -c 'bash scripts/test-image.sh && bash scripts/real-sglang-image.sh; rc=$?; touch "$0"; exit $rc' \
  "$logs/images.done" >"$logs/images" 2>&1 &
images=$!
timed lint "side 1" "${make_[@]}" lint >"$logs/lint" 2>&1 &
lint=$!
timed unit "side 2" "${make_[@]}" unit-parallel 2>&1 | tee "$logs/unit" || failed="$failed unit"
wait "$lint" || failed="$failed lint"
cat "$logs/lint"

export TIMING_RERUN_AFTER=$logs/images.done
timed timing alone "${make_[@]}" timing 2>&1 | tee "$logs/timing" || failed="$failed timing"

# From here the image build is the real-SGLang lane's wait: at nice 19 the three molecule lanes
# starved it (ready 439 s after they started, in a CI run on a busy machine, against 141-276 s). It
# gets its fair share now: every process of the build, the build container's too (podman's children).
descendants() {
  local todo=("$1") pid
  while [ ${#todo[@]} -gt 0 ]; do
    pid=${todo[0]}
    todo=("${todo[@]:1}")
    echo "$pid"
    mapfile -t -O "${#todo[@]}" todo < <(ps -o pid= --ppid "$pid" | tr -d ' ')
  done
}
if [ ! -e "$logs/images.done" ]; then
  echo "make test: the host images' build is still running: at nice 0 from now on"
  renice -n 0 -p $(descendants "$images") \
    $(podman top sglang-realhost-build hpid 2>/dev/null | tail -n +2) >/dev/null 2>&1 || true
fi

# The releases' tests share the machine with the molecule lanes: most of their time is spent
# fetching and unpacking wheels. They probe each release in the real-SGLang image.
timed releases "beside" \
  bash -c 'bash scripts/real-sglang-image.sh && pytest -m releases tests/releases' \
  >"$logs/releases" 2>&1 &
releases=$!
timed molecule molecule bash scripts/molecule-all.sh 2>&1 | tee "$logs/molecule" \
  || failed="$failed molecule"
wait "$releases" || failed="$failed releases"
wait "$images" || failed="$failed images"
cat "$logs/images" "$logs/releases"

# The times first, then why anything failed: CI shows the last lines of the log.
python3 scripts/timed.py --log "$SUITE_TIMES" --summary --title "make test times"
grep -h -E '^(FAILED|ERROR) ' "$logs"/unit "$logs"/releases 2>/dev/null | cut -c1-300
grep -h -E '^timing: ' "$logs"/timing 2>/dev/null
[ -s "$SUITE_WHY" ] && cat "$SUITE_WHY"
grep -h -E '^molecule(-all: failed|: )' "$logs"/molecule 2>/dev/null
if [ -n "$failed" ]; then
  echo "make test: FAILED:$failed"
  exit 1
fi
echo "make test: lint, unit, timing, releases and molecule passed"
