#!/usr/bin/env bash
# Runs `molecule test -s <name>` for every scenario under molecule/ (or only those named as
# arguments), carrying on after a failure. Ends with the line `molecule: N passed, M failed` and
# exits non-zero when any scenario failed.
#
# MOLECULE_JOBS (default 3) scenarios run side by side, each lane with its own published port
# (every scenario has its own container name, sglang-<scenario>). Lanes are filled longest first
# from the durations in scripts/molecule-durations.txt; scenarios that share a prepare playbook
# (and so the files it builds on the controller) run in the same lane, one after the other.
set -uo pipefail
cd "$(dirname "$0")/.."
export CONTAINERS_CONF=${CONTAINERS_CONF:-$PWD/tests/podman/containers.conf}
export PATH=$PWD/${VENV:-.venv}/bin:$PATH
# Plain output in CI logs.
[ -n "${CI:-}" ] && export NO_COLOR=1 ANSIBLE_NOCOLOR=1 ANSIBLE_FORCE_COLOR=0
jobs=${MOLECULE_JOBS:-3}

if [ $# -gt 0 ]; then
  scenarios=("$@")
else
  mapfile -t scenarios < <(find molecule -mindepth 2 -maxdepth 2 -name molecule.yml -printf '%h\n' \
    | xargs -rn1 basename | sort)
fi
if [ ${#scenarios[@]} -eq 0 ]; then
  echo "molecule-all: no scenarios under molecule/" >&2
  echo "molecule: 0 passed, 0 failed"
  exit 1
fi
for name in "${scenarios[@]}"; do
  if [ ! -f "molecule/$name/molecule.yml" ]; then
    echo "molecule-all: no scenario molecule/$name" >&2
    echo "molecule: 0 passed, 1 failed"
    exit 1
  fi
done

# Containers left by an interrupted run would hold the published port or the instance name. Only the
# instances of the scenarios about to run are removed: other runs on this machine keep theirs.
instances() {
  MOLECULE_SCENARIO_NAME=$1 python3 - "$1" <<'PY'
import os, sys, yaml
base = yaml.safe_load(open(".config/molecule/config.yml"))
scenario = yaml.safe_load(open(f"molecule/{sys.argv[1]}/molecule.yml")) or {}
for platform in scenario.get("platforms") or base.get("platforms") or []:
    print(os.path.expandvars(platform["name"]))
PY
}
remove_instances() {
  local name
  for name in $(instances "$1"); do
    if podman container exists "$name"; then
      echo "molecule-all: removing leftover container $name"
      podman rm -f -t 0 "$name" >/dev/null
    fi
  done
}

# Scenarios on the real-SGLang host image need it built first (minutes the first time, then cached):
# it builds beside the lanes, which run those scenarios last (run_scenario waits for it).
REALHOST_IMAGE=localhost/sglang-realhost:cpu
needs_realhost=$(python3 - "$REALHOST_IMAGE" "${scenarios[@]}" <<'PY'
import sys, yaml
names = []
for name in sys.argv[2:]:
    scenario = yaml.safe_load(open(f"molecule/{name}/molecule.yml")) or {}
    if any(p.get("image") == sys.argv[1] for p in scenario.get("platforms") or []):
        names.append(name)
print(" ".join(names))
PY
)

# No more lanes (and ports) than scenarios.
[ "$jobs" -gt ${#scenarios[@]} ] && jobs=${#scenarios[@]}

# The demo host publishes 127.0.0.1:18080 too: lanes take the first free ports from 18080 on
# (scenarios reach the host through sglang_testhost_url, never a literal port). Rootful podman
# publishes ports with firewall DNAT rules and binds no socket, so a bind test alone misses a port
# another container publishes: ask podman too.
podman_ports=$(podman ps --format '{{.Ports}}' 2>/dev/null | tr ',' '\n' \
  | sed -n 's/.*:\([0-9][0-9]*\)->.*/\1/p')
port_free() {
  ! grep -qx "$1" <<<"$podman_ports" \
    && python3 -c 'import socket,sys; s=socket.socket(); s.bind(("127.0.0.1", int(sys.argv[1])))' "$1" \
      2>/dev/null
}
ports=()
if [ -n "${SGLANG_TESTHOST_PORT:-}" ]; then
  ports=("$SGLANG_TESTHOST_PORT")
  jobs=1
else
  for candidate in $(seq 18080 18099); do
    port_free "$candidate" && ports+=("$candidate")
    [ ${#ports[@]} -ge "$jobs" ] && break
  done
  [ ${#ports[@]} -ge 1 ] || { echo "molecule-all: no free port in 18080-18099" >&2; exit 1; }
  jobs=${#ports[@]}
fi

# Lanes, longest first (LPT): scripts/molecule-durations.txt has the seconds each scenario took last
# time it was measured; an unknown scenario counts as 300 s. When the real-SGLang image is still to
# be built, the scenarios on it wait for it in their lane: the shortest scenarios of the other lanes
# move in front of them, as many as fit in the build's seconds (`realhost-image` in that file).
realhost_missing=0
podman image exists "$REALHOST_IMAGE" || realhost_missing=1
mapfile -t lanes < <(NEEDS_REALHOST="$needs_realhost" REALHOST_MISSING=$realhost_missing \
  python3 - "$jobs" "${scenarios[@]}" <<'PY'
import os, sys, yaml
jobs, names = int(sys.argv[1]), sys.argv[2:]
late = set(os.environ["NEEDS_REALHOST"].split())
seconds = {}
for line in open("scripts/molecule-durations.txt"):
    fields = line.split("#", 1)[0].split()
    if len(fields) == 2:
        seconds[fields[0]] = int(fields[1])
groups: dict[str, list[str]] = {}
for name in names:
    scenario = yaml.safe_load(open(f"molecule/{name}/molecule.yml")) or {}
    playbooks = (scenario.get("provisioner") or {}).get("playbooks") or {}
    key = f"prepare:{playbooks['prepare']}" if "prepare" in playbooks else name
    groups.setdefault(key, []).append(name)
def cost(group: list[str]) -> int:
    return sum(seconds.get(n, 300) for n in group)
loads = [0] * jobs
lanes: list[list[list[str]]] = [[] for _ in range(jobs)]
for group in sorted(groups.values(), key=lambda g: -cost(g)):
    lane = loads.index(min(loads))
    lanes[lane].append(group)
    loads[lane] += cost(group)
def waits(group: list[str]) -> bool:
    return bool(late & set(group))
if os.environ["REALHOST_MISSING"] == "1":
    for lane in lanes:
        if not any(waits(g) for g in lane):
            continue
        spare = seconds.get("realhost-image", 0) - sum(cost(g) for g in lane if not waits(g))
        while True:
            movable = [(cost(g), i, g) for i, other in enumerate(lanes) if other is not lane
                       for g in other if not waits(g) and len(other) > 1]
            if not movable or min(movable)[0] > spare:
                break
            seconds_, i, g = min(movable)
            spare -= seconds_
            lanes[i].remove(g)
            lane.append(g)
for lane in lanes:
    # the scenarios that wait for the real-SGLang image last (sorted() keeps a group's order)
    print(" ".join(sorted((n for g in lane for n in g), key=lambda n: n in late)))
PY
)

# Each scenario's output is kept so that the end of the run can repeat why a scenario failed: CI
# shows the head and the tail of a long log, and the failing task is usually in neither.
logdir=$(mktemp -d)
trap 'rm -rf "$logdir"' EXIT
# One AnsiballZ cache for every ansible process of this run (tests/podman/connection/podman.py):
# the modules' sources do not change while it runs, and the directory goes with the run.
export ANSIBLE_TEST_MODULE_CACHE=$logdir/ansiballz
# Each scenario's wall time and CPU seconds (scripts/timed.py), printed at the end; make test passes
# its own file, so that its summary shows them beside the other steps.
times=${SUITE_TIMES:-$logdir/times.jsonl}

# Every scenario runs on the test image: built now if it is not (make test builds it in the
# background; the script waits for that build).
bash scripts/test-image.sh || { echo "molecule-all: the test host image did not build" >&2; exit 1; }
if [ -n "$needs_realhost" ]; then
  (
    start=$SECONDS
    if bash scripts/real-sglang-image.sh >"$logdir/realhost.log" 2>&1; then
      status="ready after $((SECONDS - start)) s"
    else
      status="did not build: $needs_realhost cannot run"
    fi
    { flock 9; cat "$logdir/realhost.log"; echo "=== real-SGLang host image $status"; } \
      9>"$logdir/.print.lock"
    echo "$status" >"$logdir/realhost.status"
  ) &
fi

# Each line of a scenario's log starts with the seconds since the scenario started, so a log shows
# what each step (create, converge, verify, destroy) cost.
stamp() {
  local start=$SECONDS line
  while IFS= read -r line; do printf '%4ds %s\n' "$((SECONDS - start))" "$line"; done
}

# One scenario. With one lane its output streams as it comes (STREAM=1); with several, each log is
# printed whole when its scenario ends.
run_scenario() {
  local name=$1 port=$2 lane=$3 start=$SECONDS rc
  if [[ " $needs_realhost " == *" $name "* ]]; then
    while [ ! -f "$logdir/realhost.status" ]; do sleep 2; done
    if [[ "$(cat "$logdir/realhost.status")" != ready* ]]; then
      echo failed >"$logdir/$name.result"
      # its log, for the lane's print and why_failed: the cause and the build's last lines
      { echo "molecule-all: not run: its host image $REALHOST_IMAGE did not build; the build ended:"
        tail -n 5 "$logdir/realhost.log"; } >"$logdir/$name.log"
      echo "=== $name: FAILED (its host image did not build)"
      return
    fi
  fi
  echo "=== molecule test -s $name (127.0.0.1:$port)"
  remove_instances "$name"
  local -a timed=(python3 scripts/timed.py --log "$times" --name "$name" --lane "lane $lane"
    --containers $(instances "$name") --)
  if [ "${STREAM:-0}" = 1 ]; then
    SGLANG_TESTHOST_PORT=$port "${timed[@]}" molecule test -s "$name" < /dev/null 2>&1 | stamp \
      | tee "$logdir/$name.log"
    rc=${PIPESTATUS[0]}
  else
    SGLANG_TESTHOST_PORT=$port "${timed[@]}" molecule test -s "$name" < /dev/null 2>&1 | stamp \
      >"$logdir/$name.log"
    rc=${PIPESTATUS[0]}
  fi
  if [ "$rc" -eq 0 ]; then
    echo passed >"$logdir/$name.result"
    echo "=== $name: passed in $((SECONDS - start)) s"
  else
    echo failed >"$logdir/$name.result"
    echo "=== $name: FAILED after $((SECONDS - start)) s"
    {
      echo "--- containers, and the controller's NAT rules for port $port:"
      podman ps -a --format '{{.Names}} {{.Status}} {{.Ports}}'
      nft list ruleset 2>/dev/null | grep -E "dport $port( |$)" || true
    } 2>&1 | tee -a "$logdir/$name.log"
    # molecule destroys on failure by default; make sure nothing blocks the next scenario.
    remove_instances "$name"
  fi
}

if [ "$jobs" -eq 1 ]; then
  for name in ${lanes[0]}; do
    STREAM=1 run_scenario "$name" "${ports[0]}" 1
  done
else
  for i in "${!lanes[@]}"; do
    echo "=== lane $((i + 1)) (127.0.0.1:${ports[$i]}): ${lanes[$i]}"
  done
  for i in "${!lanes[@]}"; do
    (for name in ${lanes[$i]}; do
      run_scenario "$name" "${ports[$i]}" $((i + 1))
      # Whole logs, one scenario at a time, as each ends.
      { flock 9; sed "s/^/[$name] /" "$logdir/$name.log"; } 9>"$logdir/.print.lock"
    done) &
  done
  wait
fi

passed=0
failed=0
failed_names=()
for name in "${scenarios[@]}"; do
  if [ "$(cat "$logdir/$name.result" 2>/dev/null)" = passed ]; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    failed_names+=("$name")
  fi
done

# Kept short: this is the part of a long CI log that is sure to be shown. Each failed task: its name
# and the first lines of its result (YAML: the assertion, the message), then the containers.
why_failed() {
  local name=$1
  echo "=== $name: why it failed"
  awk '/ TASK \[/ { task = $0 }
       / fatal: \[/ { print task; more = 6 }
       more > 0 { print substr($0, 1, 300); more-- }' "$logdir/$name.log" | head -n 14
  grep -E '^ *[0-9]+s (\[ERROR\]|CRITICAL)' "$logdir/$name.log" | cut -c1-300 | head -n 3
  # provision.yml's summary, where a scenario ran it: each host that is not ready, and why
  grep -oE '[a-z0-9-]+: (failed preflight|failed in \\?"|no result).{0,280}' "$logdir/$name.log" | head -n 3
  sed -n '/^--- containers, and/,$p' "$logdir/$name.log" | head -n 5
  grep -A 5 '^molecule-all: not run' "$logdir/$name.log" | cut -c1-300
}
for name in "${failed_names[@]}"; do
  [ -f "$logdir/$name.log" ] || continue
  if [ -n "${SUITE_WHY:-}" ]; then why_failed "$name" >>"$SUITE_WHY"; else why_failed "$name"; fi
done
[ -n "${SUITE_TIMES:-}" ] || python3 scripts/timed.py --log "$times" --summary --title "molecule times"
[ "$failed" -gt 0 ] && echo "molecule-all: failed: ${failed_names[*]}"
echo "molecule: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
