#!/usr/bin/env bash
# Runs `molecule test -s <name>` for every scenario under molecule/ (or only those named as
# arguments), one after the other, carrying on after a failure. Ends with the line
# `molecule: N passed, M failed` and exits non-zero when any scenario failed.
set -uo pipefail
cd "$(dirname "$0")/.."
export CONTAINERS_CONF=${CONTAINERS_CONF:-$PWD/tests/podman/containers.conf}
export PATH=$PWD/${VENV:-.venv}/bin:$PATH
# Plain output in CI logs.
[ -n "${CI:-}" ] && export NO_COLOR=1 ANSIBLE_NOCOLOR=1 ANSIBLE_FORCE_COLOR=0

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

# Containers left by an interrupted run would hold the published port or the instance name. Only the
# instances of the scenarios about to run are removed: other runs on this machine keep theirs.
instances() {
  python3 - "$1" <<'PY'
import sys, yaml
base = yaml.safe_load(open(".config/molecule/config.yml"))
scenario = yaml.safe_load(open(f"molecule/{sys.argv[1]}/molecule.yml")) or {}
for platform in scenario.get("platforms") or base.get("platforms") or []:
    print(platform["name"])
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

# Scenarios on the real-SGLang host image need it built first (minutes the first time, then cached).
REALHOST_IMAGE=localhost/sglang-realhost:cpu
realhost_built=
uses_realhost() {
  python3 - "$1" "$REALHOST_IMAGE" <<'PY'
import sys, yaml
scenario = yaml.safe_load(open(f"molecule/{sys.argv[1]}/molecule.yml")) or {}
sys.exit(0 if any(p.get("image") == sys.argv[2] for p in scenario.get("platforms") or []) else 1)
PY
}

# The demo host publishes 127.0.0.1:18080 too: when that port is taken, test hosts use the next
# free one (scenarios reach the host through sglang_testhost_url, never a literal port).
# Rootful podman publishes ports with firewall DNAT rules and binds no socket, so a bind test alone
# misses a port another container publishes: ask podman too.
podman_ports=$(podman ps --format '{{.Ports}}' 2>/dev/null | tr ',' '\n' \
  | sed -n 's/.*:\([0-9][0-9]*\)->.*/\1/p')
port_free() {
  ! grep -qx "$1" <<<"$podman_ports" \
    && python3 -c 'import socket,sys; s=socket.socket(); s.bind(("127.0.0.1", int(sys.argv[1])))' "$1" \
      2>/dev/null
}
if [ -z "${SGLANG_TESTHOST_PORT:-}" ]; then
  for candidate in $(seq 18080 18099); do
    if port_free "$candidate"; then
      export SGLANG_TESTHOST_PORT=$candidate
      break
    fi
  done
  [ "${SGLANG_TESTHOST_PORT:-18080}" = 18080 ] \
    || echo "molecule-all: 127.0.0.1:18080 is taken, test hosts publish $SGLANG_TESTHOST_PORT"
fi

# Each scenario's output is kept so that the end of the run can repeat why a scenario failed: CI
# shows the head and the tail of a long log, and the failing task is usually in neither.
logdir=$(mktemp -d)
trap 'rm -rf "$logdir"' EXIT

passed=0
failed=0
failed_names=()
for name in "${scenarios[@]}"; do
  if [ ! -f "molecule/$name/molecule.yml" ]; then
    echo "molecule-all: no scenario molecule/$name" >&2
    failed=$((failed + 1))
    failed_names+=("$name")
    continue
  fi
  echo "=== molecule test -s $name"
  remove_instances "$name"
  start=$SECONDS
  if uses_realhost "$name" && [ -z "$realhost_built" ]; then
    if bash scripts/real-sglang-image.sh 2>&1 | tee "$logdir/$name.image.log"; then
      realhost_built=1
      echo "=== real-SGLang host image ready after $((SECONDS - start)) s"
    else
      failed=$((failed + 1))
      failed_names+=("$name")
      echo "=== $name: FAILED: the real-SGLang host image did not build"
      cp "$logdir/$name.image.log" "$logdir/$name.log"
      continue
    fi
  fi
  if molecule test -s "$name" 2>&1 | tee "$logdir/$name.log"; then
    passed=$((passed + 1))
    echo "=== $name: passed in $((SECONDS - start)) s"
  else
    failed=$((failed + 1))
    failed_names+=("$name")
    echo "=== $name: FAILED after $((SECONDS - start)) s"
    {
      echo "--- containers, and the controller's NAT rules for port $SGLANG_TESTHOST_PORT:"
      podman ps -a --format '{{.Names}} {{.Status}} {{.Ports}}'
      nft list ruleset 2>/dev/null | grep -E "dport $SGLANG_TESTHOST_PORT( |$)" || true
    } 2>&1 | tee -a "$logdir/$name.log"
    # molecule destroys on failure by default; make sure nothing blocks the next scenario.
    remove_instances "$name"
  fi
done

# Kept short: this is the part of a long CI log that is sure to be shown.
for name in "${failed_names[@]}"; do
  [ -f "$logdir/$name.log" ] || continue
  echo "=== $name: why it failed"
  grep -E '^\[ERROR\]|CRITICAL|Executed: Failed' "$logdir/$name.log" | cut -c1-400 | head -n 8
  sed -n '/^--- containers, and/,$p' "$logdir/$name.log" | head -n 8
done
[ "$failed" -gt 0 ] && echo "molecule-all: failed: ${failed_names[*]}"
echo "molecule: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
