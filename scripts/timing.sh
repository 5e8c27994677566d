#!/usr/bin/env bash
# make timing: the tests that compare milliseconds the client measures with the server's own
# (pytest -m timing). They run after the unit tests, with nothing but each other (and, in make test,
# the host images' build at nice 19, which takes only CPU they leave): they wait on
# wall-clock windows (open-loop cells of 10 s), not on the CPU (one capacity search keeps 9 % of
# the 2 cores busy, all four side by side 22 %), so the first run takes 8 workers: xdist deals
# the 14 tests round robin, and each of the four longest (58-75 s) gets a worker of its own (85 s
# in one run here; 148 s with 4 workers, 373 s with one). A shared machine's other tenants can
# still take the CPU for a few seconds, which no tolerance that keeps the tests meaningful
# absorbs: a failed test is therefore run once more, alone, in a fresh process; it fails the
# suite only when it fails twice. Every first-run failure is printed, so a flake is seen, never
# hidden.
set -uo pipefail
cd "$(dirname "$0")/.."
cache=$(mktemp -d)
log=$(mktemp)
trap 'rm -rf "$cache" "$log"' EXIT
# Every process's CPU seconds before and after the first run: a failure then names what else took
# the CPU while it ran (processes still alive at its end; the tests' own are in the list too).
cpu_seconds() { ps -eo pid=,times=,args= | awk '{pid=$1; t=$2; $1=""; $2=""; print pid, t, substr($0, 1, 100)}'; }
before=$(cpu_seconds)
pytest -m timing -o cache_dir="$cache" -n "${TIMING_JOBS:-8}" --dist load "$@" 2>&1 | tee "$log"
[ "${PIPESTATUS[0]}" -eq 0 ] && exit 0
first=$(grep -E '^(FAILED|ERROR) ' "$log" | sed 's/^/timing: first run: /')
busy=$(awk 'NR == FNR { was[$1] = $2; next }
  { d = $2 - (($1 in was) ? was[$1] : 0); if (d >= 2) { $2 = ""; printf "%6d CPU-s %s\n", d, $0 } }' \
  <(echo "$before") <(cpu_seconds) | sort -rn | head -8 | sed 's/^/timing: busy during the first run: /')
# make test names the file its host-image build writes when it ends (TIMING_RERUN_AFTER): the
# rerun waits for it, so that the failed tests run again with no build beside them (a build's pip
# install, even at nice 19, was the busiest process in a first run that failed).
if [ -n "${TIMING_RERUN_AFTER:-}" ] && [ ! -e "$TIMING_RERUN_AFTER" ]; then
  echo "timing: waiting for the host images' build to end before the rerun"
  while [ ! -e "$TIMING_RERUN_AFTER" ]; do sleep 2; done
fi
echo "timing: running the failed tests once more, alone"
pytest -m timing -o cache_dir="$cache" --last-failed --last-failed-no-failures none "$@" 2>&1 |
  tee "$log"
rc=${PIPESTATUS[0]}
echo "$first"
[ -n "$busy" ] && echo "$busy"
if [ "$rc" -eq 0 ]; then
  echo "timing: the failed tests passed when run again (first-run failures above)"
else
  grep -E '^(FAILED|ERROR) ' "$log" | sed 's/^/timing: failed again: /'
  echo "timing: failed twice"
fi
exit "$rc"
